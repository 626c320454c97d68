package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// PtyProtocol is the Upgrade token of GET /v1/jobs/{id}/pty: once the
// agent answers 101 Switching Protocols, the connection carries the
// terminal of the job's --pty rank 0 (exec/task's frames one way, the
// terminal's output the other) until the rank's terminal ends.
const PtyProtocol = "shoal-pty/1"

// AttachPty connects to the terminal of rank 0 of a --pty job's own task
// (step -1) or of a --pty step. The agent relays to the node that runs
// the rank. An error is a *StatusError when the agent refused (503 while
// the task has not started yet: try again).
func (c *Client) AttachPty(ctx context.Context, job uint64, step int) (io.ReadWriteCloser, error) {
	return c.upgrade(ctx, fmt.Sprintf("/v1/jobs/%d/pty?step=%d", job, step), PtyProtocol)
}

// StdinProtocol is the Upgrade token of GET /v1/jobs/{id}/stdin: once the
// agent answers 101 Switching Protocols, what the client sends is srun's
// stdin, raw, for the ranks of one node that read it; closing the
// connection is their end of input. Nothing comes back; the connection
// closes when no rank there reads any more.
const StdinProtocol = "shoal-stdin/1"

// StdinResumeProtocol is the Upgrade token of GET /v1/jobs/{id}/stdin
// for input that survives its connection breaking: the agents relay the
// connection byte for byte to the ranks' supervisor, which first sends
// the count of bytes it has delivered, then counts as it delivers more,
// and reads frames (exec/task's stdin.go). An agent of an earlier
// version answers 400 (it knows StdinProtocol alone), as does one whose
// ranks' supervisor predates it: the client asks with StdinProtocol.
const StdinResumeProtocol = "shoal-stdin/2"

// AttachStdinResume is AttachStdin with StdinResumeProtocol.
func (c *Client) AttachStdinResume(ctx context.Context, job uint64, step int, node string) (io.ReadWriteCloser, error) {
	return c.upgrade(ctx, fmt.Sprintf("/v1/jobs/%d/stdin?step=%d&node=%s", job, step, url.QueryEscape(node)), StdinResumeProtocol)
}

// AttachStdin connects to the stdin of the ranks on node of job's own
// task (step -1) or of a step that read srun's (see Job.StdinNodes and
// Step.StdinNodes). An error is a *StatusError when the agent refused
// (503 while the ranks have not started yet: try again; 409 once the
// step has ended).
func (c *Client) AttachStdin(ctx context.Context, job uint64, step int, node string) (io.ReadWriteCloser, error) {
	return c.upgrade(ctx, fmt.Sprintf("/v1/jobs/%d/stdin?step=%d&node=%s", job, step, url.QueryEscape(node)), StdinProtocol)
}

// PMIxProtocol is the Upgrade token of GET /v1/jobs/{id}/pmix: once the
// agent answers 101 Switching Protocols, the connection carries package
// pmix's fence frames between a PMIx step's supervisor on another node
// and the one on the step's first node, until either ends.
const PMIxProtocol = "shoal-pmix/1"

// AttachPMIx connects a supervisor to the fences of a PMIx step (srun
// --mpi=pmix) on the step's first node; the agent relays to it. An error
// is a *StatusError when the agent refused (503 while the first node's
// supervisor is not up yet: try again).
func (c *Client) AttachPMIx(ctx context.Context, job uint64, step int) (io.ReadWriteCloser, error) {
	return c.upgrade(ctx, fmt.Sprintf("/v1/jobs/%d/pmix?step=%d", job, step), PMIxProtocol)
}

// upgrade asks GET path to switch to protocol and returns the connection.
func (c *Client) upgrade(ctx context.Context, path, protocol string) (io.ReadWriteCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	c.setHeaders(req)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", protocol)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
			return rwc, nil
		}
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: switched protocols without a connection", path)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e Error
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		e.Error = fmt.Sprintf("GET %s: %s", path, resp.Status)
	}
	return nil, &StatusError{Code: resp.StatusCode, Message: e.Error, Field: e.Field}
}
