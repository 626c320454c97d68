package stepd

import (
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
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
	stop      <-chan string                // a stop cause (request, record, watchdog)
	timeLimit time.Duration                // 0: none; measured from the call
	limit     <-chan time.Time             // a new time limit's deadline (zero: none)
	grace     time.Duration                // SIGTERM to SIGKILL: the kill-wait
	signal    func(syscall.Signal)         // to every rank's process group
	onSignal  func(string, syscall.Signal) // logging hook, may be nil
	// initial, when set, terminates the ranks at once with this cause
	// (some rank failed to start).
	initial string
	// fenceGrace, when positive and shorter than grace, is the SIGTERM to
	// SIGKILL time of cause "fenced", also when the ranks were already
	// terminating: a node that lost its lease must have them dead within
	// the bound the leader waits for (node's leaseLoop).
	fenceGrace time.Duration
	// early, when earlySignal is set, is when to call it (measured from
	// the call; 0 or less: at once): the --signal warning before the time
	// limit. It is called at most once, and not once the ranks are ending.
	early       time.Duration
	earlySignal func()
}

// outcome is how a task ended.
type outcome struct {
	code  int    // first failing rank's code, or 0
	cause string // one of the cause constants
	// usage is what the task's cgroup counted; nil without one.
	usage *cluster.Usage
}

// supervise waits until every rank leader is reaped. The first of these
// ends the task early: a rank exiting non-zero (cause exit), the time limit
// (cause timeout), a stop (its cause). Ending sends SIGTERM to every group,
// then SIGKILL after the grace period (fenceGrace for cause fenced). The
// first cause wins.
//
// It returns only when all ranks.exits values have arrived: the bound is the
// kernel's, as SIGKILL cannot be ignored.
func supervise(s supervision) outcome {
	var out outcome
	failed := false

	var limitC <-chan time.Time
	limitTimer := time.NewTimer(time.Hour)
	limitTimer.Stop()
	defer limitTimer.Stop()
	if s.timeLimit > 0 {
		limitTimer.Reset(s.timeLimit)
		limitC = limitTimer.C
	}
	var earlyC <-chan time.Time
	if s.earlySignal != nil {
		t := time.NewTimer(max(s.early, 0))
		defer t.Stop()
		earlyC = t.C
	}
	var killC <-chan time.Time
	var killTimer *time.Timer
	var killAt time.Time
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
		grace := s.grace
		if cause == task.CauseFenced && s.fenceGrace > 0 {
			grace = min(grace, s.fenceGrace)
		}
		if terminating {
			// A shorter grace (fencing) moves a SIGKILL not yet sent earlier.
			if at := time.Now().Add(grace); killC != nil && at.Before(killAt) {
				killTimer.Reset(grace)
				killAt = at
			}
			return
		}
		terminating = true
		limitC, earlyC = nil, nil
		if s.onSignal != nil {
			s.onSignal(cause, syscall.SIGTERM)
		}
		s.signal(syscall.SIGTERM)
		killTimer = time.NewTimer(grace)
		killAt = time.Now().Add(grace)
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
					terminate(task.CauseExit)
				}
			}
		case c := <-s.stop:
			terminate(c)
		case <-limitC:
			terminate(task.CauseTimeout)
		case deadline := <-s.limit:
			// scontrol update TimeLimit=: the new limit replaces the old
			// one, unless the ranks are ending already.
			if terminating {
				continue
			}
			limitTimer.Stop()
			limitC = nil
			switch left := time.Until(deadline); {
			case deadline.IsZero():
			case left <= 0:
				terminate(task.CauseTimeout)
			default:
				limitTimer.Reset(left)
				limitC = limitTimer.C
			}
		case <-earlyC:
			earlyC = nil
			s.earlySignal()
		case <-killC:
			killC = nil
			if s.onSignal != nil {
				s.onSignal(out.cause, syscall.SIGKILL)
			}
			s.signal(syscall.SIGKILL)
		}
	}
	if out.cause == "" {
		out.cause = task.CauseExit
	}
	return out
}
