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
}

// Signal asks every node running a task of job to send it sig. It returns
// once the request is committed; the nodes deliver it within moments. Once:
// each copy is delivered.
func (c *Client) Signal(ctx context.Context, job uint64, req SignalRequest) error {
	_, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/v1/jobs/%d/signal", job), req, nil)
	return err
}
