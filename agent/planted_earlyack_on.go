//go:build planted_earlyack

package agent

import (
	"context"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// plantedEarlyAck: see planted_earlyack_off.go. Test builds only.
const plantedEarlyAck = true

// plantedAckEarly acknowledges a submit before it is committed: it answers
// with the id the next job would get in this replica's view (or the id of
// a job the request id already made) and applies the submit afterwards.
func (l *leaderSide) plantedAckEarly(requestID string, spec cluster.Spec) api.SubmitResponse {
	v := l.state.View()
	if id, ok := v.JobByRequestID(requestID); ok {
		return api.SubmitResponse{ID: uint64(id), Duplicate: true}
	}
	var next cluster.JobID = 1
	if jobs := v.Jobs(); len(jobs) > 0 {
		next = jobs[len(jobs)-1].ID + 1
	}
	go func() {
		if _, err := l.leaderSubmit(context.Background(), requestID, spec); err != nil {
			l.log.Warn("planted early ack: submit acknowledged but not applied", "request_id", requestID, "err", err)
		}
	}()
	return api.SubmitResponse{ID: uint64(next)}
}
