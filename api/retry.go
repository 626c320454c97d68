package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sending a write again across a leader change.
//
// A write reaches the leader through the agent the client talks to, which
// forwards it when it does not lead. While leadership moves, a write can
// fail in two ways:
//
//   - The answer proves it was never proposed: the agent knew no leader
//     (NoLeaderMessage), could not connect to the one it knew
//     (LeaderUnreachableMessage), or the agent it was forwarded to led no
//     more (LeadershipMovedMessage). All are answered before anything
//     reaches raft, so every write is sent again after them.
//   - Its outcome is unknown: the forward got no answer (502; the leader
//     may have died after committing it), the leader lost its leadership
//     while committing it, or an array's later command after its first
//     (503, "not the raft leader"), or the commit timed out (504; the entry
//     may still commit). Only a write whose second copy cannot act twice
//     (Idempotent) is sent again after these.
//
// Reads are never sent again here, nor are requests an agent passes on
// (Forwarding): the client that sent them to that agent retries, through
// it, and it finds the new leader each time.

// Texts of the answers that prove a write was never proposed: the agent's
// (agent.errNoLeader) and the forward's (httpapi.Server.Forward).
const (
	NoLeaderMessage          = "no raft leader yet"
	LeaderUnreachableMessage = "could not connect to the leader"
	LeadershipMovedMessage   = "leadership moved while forwarding"
)

// neverProposed are those texts.
var neverProposed = []string{NoLeaderMessage, LeaderUnreachableMessage, LeadershipMovedMessage}

// Repeat is what a second copy of a write does once the first has been
// applied, decided per operation from what the FSM does on a repeat.
type Repeat int

const (
	// Once: a second copy may act again (where they carry no request id:
	// a signal delivered twice, a second step, a requeue of the job's
	// next run, a relative time limit added twice). Sent again only after
	// an answer proving that no copy was proposed.
	Once Repeat = iota
	// Idempotent: a second copy leaves the state the first left (a
	// cancelled job stays cancelled, a hold or drain already in place or an
	// absolute value already set is a no-op, a submit's request id yields
	// its job, a step's its step, a signal's, a requeue's or an
	// update's nothing more), though it may be answered differently (a
	// job already finished: 409). Also sent again when the first's
	// outcome is unknown.
	Idempotent
)

// Bounds of sending a write again: a failover takes about a second, a few
// under load; past these the last answer is the command's.
const (
	failoverWait     = 20 * time.Second
	failoverAttempts = 250 // a backstop: failoverWait holds about 200 at FailoverBackoff's 100 ms
)

// outcome is what a failed attempt's answer says about the write.
type outcome int

const (
	final       outcome = iota // the answer stands: a success, a refusal, a transport error
	notProposed                // refused before reaching raft: neverProposed
	unknown                    // may or may not have been applied: 502, 503, 504
)

// outcomeOf classifies an attempt's error.
func outcomeOf(err error) outcome {
	var se *StatusError
	if !errors.As(err, &se) {
		return final
	}
	switch se.Code {
	case http.StatusServiceUnavailable:
		for _, m := range neverProposed {
			if strings.Contains(se.Message, m) {
				return notProposed
			}
		}
		return unknown
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return unknown
	}
	return final
}

// retryAfter decides whether a write of kind r that failed with err on its
// attempt-th try (from 1), elapsed after the first began, is sent again,
// and after how long. It is pure.
func retryAfter(method string, r Repeat, err error, attempt int, elapsed time.Duration) (time.Duration, bool) {
	if method == http.MethodGet || attempt >= failoverAttempts {
		return 0, false
	}
	switch outcomeOf(err) {
	case notProposed:
	case unknown:
		if r != Idempotent {
			return 0, false
		}
	default:
		return 0, false
	}
	backoff := FailoverBackoff(attempt)
	if elapsed+backoff > failoverWait {
		return 0, false
	}
	return backoff, true
}

// explain is the error a write that failed with err on its last attempt
// returns: a Once write whose outcome is unknown says it was not sent
// again and why; a refusal after an attempt whose outcome was unknown
// (lost) says that attempt may have done it (a cancel answered "already
// finished").
func explain(method string, r Repeat, err, lost error) error {
	if method == http.MethodGet {
		return err
	}
	switch o := outcomeOf(err); {
	case o == unknown && r == Once:
		return fmt.Errorf("%w (not sent again: it may have taken effect, and a second copy could act twice)", err)
	case o == final && lost != nil:
		return fmt.Errorf("%w (an earlier attempt, answered %q, may have done it)", err, lost.Error())
	}
	return err
}
