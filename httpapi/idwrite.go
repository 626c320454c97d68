package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/shoal-sched/shoal/api"
)

// Writes whose request id the leader drops while a raft server speaks a
// protocol older than the one that keeps it (6; for a requeue or update
// of an array's elements, 7): an srun step, scancel --signal, scontrol
// requeue and a relative scontrol update. The client sends such a write
// again after an answer that leaves its outcome unknown (502, 503, 504),
// as its id allows; without the id a second copy could act twice, so that
// answer is made final (DroppedIDOutcome) by the agent that knows the id
// was dropped: the leader, or a follower whose forward to a leader lost
// its answer.

// IDWrite is one such write.
type IDWrite struct {
	// Again is what a second copy would do, for the final answer.
	Again string
	// Elements: the write may name an array's elements, whose ids need
	// leaders that derive one for each (a later protocol than 6).
	Elements bool
	// Twice reports whether the write with body (the decoded request
	// body: a pointer) acts twice without its id; nil: always.
	Twice func(body any) bool
}

// The writes whose request id the leader may drop.
var (
	StepWrite    = IDWrite{Again: "start a second step"}
	SignalWrite  = IDWrite{Again: "deliver the signal again"}
	RequeueWrite = IDWrite{Again: "requeue the job's next run", Elements: true}
	// An update of absolute values is sent again with or without its
	// id; only a relative time limit adds twice.
	UpdateWrite = IDWrite{Again: "add the time again", Elements: true, Twice: func(body any) bool {
		u, ok := body.(*api.UpdateRequest)
		return ok && u.TimeLimitAddS != nil
	}}
)

// ActsTwice reports whether the write with body acts twice without its
// request id.
func (w IDWrite) ActsTwice(body any) bool { return w.Twice == nil || w.Twice(body) }

// DroppedIDOutcome is err, the answer to a write w whose request id was
// dropped, made final where the client would take it as unknown (502,
// 503, 504) and send the write again; other answers are returned as they
// are. It is pure.
func DroppedIDOutcome(err error, w IDWrite) error {
	switch Status(err) {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return fmt.Errorf("%v (not sent again: it may have taken effect, and its request id could not be kept (a server older than the protocol that keeps it), so a second copy could %s)", err, w.Again)
	}
	return err
}

type idWriteKey struct{}

// withIDWrite marks r as write w, for Forward.
func withIDWrite(r *http.Request, w IDWrite) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), idWriteKey{}, w))
}

// idWriteOf is the write r was marked as (withIDWrite), if any.
func idWriteOf(r *http.Request) (IDWrite, bool) {
	w, ok := r.Context().Value(idWriteKey{}).(IDWrite)
	return w, ok
}
