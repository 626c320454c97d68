package api

import (
	"context"
	"fmt"
	"net/http"
)

// SignalRequest is the body of POST /v1/jobs/{id}/signal (shoal cancel
// --signal, scancel --signal): send Signal to the job's running tasks on
// every node without stopping them. Without BatchOnly it goes to every
// step task and to the ranks of a job without a batch script, not to a
// batch script (as Slurm's scancel --signal); with BatchOnly only to the
// batch script's shell (scancel --batch).
type SignalRequest struct {
	Signal    int  `json:"signal"`
	BatchOnly bool `json:"batch_only,omitempty"`
	// RequestID makes the request safe to send again after a leader
	// change, as StepRequest's (and with its limit while a server speaks
	// a protocol older than 6).
	RequestID string `json:"request_id,omitempty"`
}

// Signal asks every node running a task of job to send it sig. It returns
// once the request is committed; the nodes deliver it within moments.
// Idempotent with a request id (the FSM answers a repeat as the first);
// Once without, as each copy is delivered.
func (c *Client) Signal(ctx context.Context, job uint64, req SignalRequest) error {
	r := Once
	if req.RequestID != "" {
		r = Idempotent
	}
	_, err := c.Write(ctx, r, http.MethodPost, fmt.Sprintf("/v1/jobs/%d/signal", job), req, nil)
	return err
}
