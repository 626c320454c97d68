package exec

import (
	"syscall"
	"time"
)

// rankExit is one rank's leader process reaped.
type rankExit struct {
	local int // index on this node
	code  int // exit status, or 128+signal like a shell
}

// supervision is the input of supervise: how many rank leaders run, where
// their exits arrive, and how to signal all of them at once.
type supervision struct {
	ranks     int                          // leaders started and not yet reaped
	exits     <-chan rankExit              // one value per leader
	stop      <-chan string                // a cause from Stop
	timeLimit time.Duration                // 0: none; measured from the call
	grace     time.Duration                // SIGTERM to SIGKILL
	signal    func(syscall.Signal)         // to every rank's process group
	onSignal  func(string, syscall.Signal) // logging hook, may be nil
	// initial, when set, terminates the ranks at once with this cause
	// (some rank failed to start).
	initial string
}

// outcome is how a task ended.
type outcome struct {
	code  int    // first failing rank's code, or 0
	cause string // one of the cause constants
}

// supervise waits until every rank leader is reaped. The first of these
// ends the task early: a rank exiting non-zero (cause exit), the time limit
// (cause timeout), a Stop (its cause). Ending sends SIGTERM to every group,
// then SIGKILL after the grace period. The first cause wins.
//
// It returns only when all ranks.exits values have arrived: the bound is the
// kernel's, as SIGKILL cannot be ignored.
func supervise(s supervision) outcome {
	var out outcome
	failed := false

	var limitC <-chan time.Time
	if s.timeLimit > 0 {
		t := time.NewTimer(s.timeLimit)
		defer t.Stop()
		limitC = t.C
	}
	var killC <-chan time.Time
	var killTimer *time.Timer
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	terminating := false
	terminate := func(cause string) {
		if out.cause == "" {
			out.cause = cause
		}
		if terminating {
			return
		}
		terminating = true
		limitC = nil
		if s.onSignal != nil {
			s.onSignal(cause, syscall.SIGTERM)
		}
		s.signal(syscall.SIGTERM)
		killTimer = time.NewTimer(s.grace)
		killC = killTimer.C
	}
	if s.initial != "" {
		terminate(s.initial)
	}

	for left := s.ranks; left > 0; {
		select {
		case x := <-s.exits:
			left--
			if x.code != 0 && !failed {
				failed = true
				out.code = x.code
				if left > 0 {
					terminate(causeExit)
				}
			}
		case c := <-s.stop:
			terminate(c)
		case <-limitC:
			terminate(causeTimeout)
		case <-killC:
			killC = nil
			if s.onSignal != nil {
				s.onSignal(out.cause, syscall.SIGKILL)
			}
			s.signal(syscall.SIGKILL)
		}
	}
	if out.cause == "" {
		out.cause = causeExit
	}
	return out
}
