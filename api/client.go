package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/cluster"
)

// Headers of the HTTP API.
const (
	// HeaderIndex carries the raft index a read was served at; pass it back
	// as ?index= to block until something newer exists.
	HeaderIndex = "X-Shoal-Index"
	// HeaderUser, HeaderUID and HeaderGID carry the identity a forwarding
	// node proved for its caller; they are believed only from a peer that
	// presented a node certificate naming the node in HeaderForwardedBy.
	HeaderUser = "X-Shoal-User"
	HeaderUID  = "X-Shoal-Uid"
	HeaderGID  = "X-Shoal-Gid"
	// HeaderForwardedBy marks a request a follower forwarded to the leader;
	// the identity headers then carry what the follower proved.
	HeaderForwardedBy = "X-Shoal-Forwarded-By"
)

// StatusError is an error response from an agent.
type StatusError struct {
	Code    int
	Message string
	Field   string
}

func (e *StatusError) Error() string { return e.Message }

// IsNotFound reports whether err is an agent's 404.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusNotFound
}

// IsConflict reports whether err is an agent's 409: the job is not in a
// state for the request (it already ended, say).
func IsConflict(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusConflict
}

// IsStepBusy reports whether err refuses a step because other steps of
// its job hold the GPUs or CPUs it asks for (the agent's 409 with
// fsm.ErrStepBusy's words): it may start once one of them ends.
func IsStepBusy(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusConflict && strings.Contains(se.Message, StepBusyMessage)
}

// StepBusyMessage is fsm.ErrStepBusy's text, which an agent's refusal
// of a busy step carries.
const StepBusyMessage = "requested nodes are busy"

// StepTooLargeMessages are fsm.ErrStepGres's and fsm.ErrStepCPUs's texts
// (Slurm's words), which an agent's refusal of a step asking for more
// GPUs or CPUs than its job holds carries: srun prints them as Slurm's.
var StepTooLargeMessages = []string{
	"Invalid generic resource (gres) specification",
	"More processors requested than permitted",
}

// Identity is who a request acts for.
type Identity struct {
	User string
	UID  int
	GID  int
}

// Client talks to one agent.
type Client struct {
	base     string // http://host:port, or http://unix for a socket
	http     *http.Client
	identity *Identity
	header   http.Header
	// forwarding: an agent passing requests on, which sends nothing again
	// (Forwarding).
	forwarding bool
}

// NewClient returns a client for addr: "unix:///path/shoal.sock",
// "http://host:port" or "host:port". An https:// address needs
// NewTLSClient.
func NewClient(addr string) (*Client, error) { return NewTLSClient(addr, nil) }

// NewTLSClient returns a client for addr that dials https:// addresses with
// tlsConf (an agent's node certificate, or a user's trust in the cluster
// CA). A bare host:port means https when tlsConf is set.
func NewTLSClient(addr string, tlsConf *tls.Config) (*Client, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second, TLSClientConfig: tlsConf,
		TLSHandshakeTimeout: 10 * time.Second, ForceAttemptHTTP2: false}
	c := &Client{http: &http.Client{Transport: tr}, header: http.Header{}}
	switch {
	case strings.HasPrefix(addr, "unix://"):
		path := strings.TrimPrefix(addr, "unix://")
		if path == "" {
			return nil, fmt.Errorf("address %q: want unix:///path/to/shoal.sock", addr)
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				return nil, err
			}
			if err := checkServerOwner(conn, path); err != nil {
				conn.Close()
				return nil, err
			}
			return conn, nil
		}
		c.base = "http://unix"
	case strings.HasPrefix(addr, "http://"):
		c.base = strings.TrimSuffix(addr, "/")
	case strings.HasPrefix(addr, "https://"):
		if tlsConf == nil {
			return nil, fmt.Errorf("address %q: https needs the cluster CA (--ca-cert or $SHOAL_CA_CERT)", addr)
		}
		c.base = strings.TrimSuffix(addr, "/")
	default:
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("address %q: want unix:///path, http://host:port, https://host:port or host:port", addr)
		}
		c.base = "http://" + addr
		if tlsConf != nil {
			c.base = "https://" + addr
		}
	}
	if _, err := url.Parse(c.base); err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	return c, nil
}

// WithIdentity returns a copy of c that declares id on every request: what
// a forwarding agent proved of its caller.
func (c *Client) WithIdentity(id Identity) *Client {
	cc := *c
	cc.identity = &id
	return &cc
}

// Forwarding returns a copy of c for agent node passing requests on (to
// the leader): each is marked forwarded by node, and sent once, whatever
// the answer. The client that sent it to node retries it, through node,
// which looks up the leader afresh each time; node retrying it against the
// leader it knew would only repeat the answer until that one leads again.
func (c *Client) Forwarding(node string) *Client {
	cc := c.WithHeader(HeaderForwardedBy, node)
	cc.forwarding = true
	return cc
}

// WithToken returns a copy of c that sends a user token (from 'shoal
// token create') with every request.
func (c *Client) WithToken(token string) *Client {
	return c.WithHeader("Authorization", "Bearer "+token)
}

// WithHeader returns a copy of c that adds a header to every request.
func (c *Client) WithHeader(key, value string) *Client {
	cc := *c
	cc.header = c.header.Clone()
	cc.header.Set(key, value)
	return &cc
}

// CloseIdleConnections closes the client's kept-alive connections, so the
// next request makes a new one (with a renewed certificate, say).
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Base is the URL the client sends to.
func (c *Client) Base() string { return c.base }

// Do sends a request and decodes a JSON answer into out (when non-nil). It
// returns the answer's X-Shoal-Index. A write is sent again, with backoff,
// across a leader change as retry.go says for a write of kind Once: only
// after an answer proving it was never proposed.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) (uint64, error) {
	return c.Write(ctx, Once, method, path, in, out)
}

// Write is Do for a write whose second copy does what r says: an
// Idempotent one is also sent again when a leader change left the
// outcome of an attempt unknown (retry.go).
func (c *Client) Write(ctx context.Context, r Repeat, method, path string, in, out any) (uint64, error) {
	var payload []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		payload = b
	}
	start := time.Now()
	var lost error // the first attempt whose outcome is unknown
	for attempt := 1; ; attempt++ {
		index, err := c.do(ctx, method, path, payload, in != nil, out)
		if err == nil || c.forwarding {
			return index, err
		}
		if lost == nil && outcomeOf(err) == unknown {
			lost = err
		}
		wait, again := retryAfter(method, r, err, attempt, time.Since(start))
		if !again {
			return index, explain(method, r, err, lost)
		}
		select {
		case <-ctx.Done():
			return index, err
		case <-time.After(wait):
		}
	}
}

// Bounds of FailoverBackoff.
const (
	failoverBackoffFirst = 25 * time.Millisecond
	failoverBackoffMax   = 100 * time.Millisecond
)

// FailoverBackoff is the wait after a write's attempt-th failure (from 1)
// that a leader change may explain: 25 ms, 50 ms, then 100 ms each. A
// failover takes under a second, so a write sent during one learns of the
// new leader within 100 ms of it; the retry carries the same request id
// (Submit), or was never proposed, or is harmless to repeat (Write), so it
// never acts twice.
// Ten tries a second per waiting client cost an agent nothing.
func FailoverBackoff(attempt int) time.Duration {
	d := failoverBackoffFirst
	for i := 1; i < attempt && d < failoverBackoffMax; i++ {
		d *= 2
	}
	return min(d, failoverBackoffMax)
}

// do is one attempt of Do.
func (c *Client) do(ctx context.Context, method, path string, payload []byte, hasBody bool, out any) (uint64, error) {
	var body io.Reader
	if hasBody {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	c.setHeaders(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	const maxBody = 64 << 20
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	index, _ := strconv.ParseUint(resp.Header.Get(HeaderIndex), 10, 64)
	if resp.StatusCode >= 300 {
		var e Error
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("%s %s: %s", method, path, resp.Status)
		}
		return index, &StatusError{Code: resp.StatusCode, Message: e.Error, Field: e.Field}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return index, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return index, nil
}

// Submit submits a job. Transport failures are retried with the same
// request id (a retry never yields two jobs) for up to retryFor.
func (c *Client) Submit(ctx context.Context, req SubmitRequest, retryFor time.Duration) (SubmitResponse, error) {
	var out SubmitResponse
	r := Once
	if req.RequestID != "" {
		r = Idempotent // the FSM answers a repeat with the job the id made
	}
	deadline := time.Now().Add(retryFor)
	for attempt := 1; ; attempt++ {
		_, err := c.Write(ctx, r, http.MethodPost, "/v1/jobs", req, &out)
		if err == nil {
			return out, nil
		}
		backoff := FailoverBackoff(attempt)
		if !retryable(err) || req.RequestID == "" || time.Now().Add(backoff).After(deadline) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(backoff):
		}
	}
}

// retryable reports whether a request may be sent again: a transport error
// or an agent that has no leader to forward to yet.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code == http.StatusServiceUnavailable || se.Code == http.StatusBadGateway
	}
	return true
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id uint64) (Job, error) {
	var j Job
	_, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/jobs/%d", id), nil, &j)
	return j, err
}

// WaitJob blocks until job id changes after index (or wait passes) and
// returns it with the new index.
func (c *Client) WaitJob(ctx context.Context, id, index uint64, wait time.Duration) (Job, uint64, error) {
	var j Job
	path := fmt.Sprintf("/v1/jobs/%d?index=%d&wait=%s", id, index, wait)
	idx, err := c.Do(ctx, http.MethodGet, path, nil, &j)
	return j, idx, err
}

// Jobs returns pending and running jobs, and finished ones too with all.
func (c *Client) Jobs(ctx context.Context, all bool) ([]Job, error) {
	var js []Job
	path := "/v1/jobs"
	if all {
		path += "?all=1"
	}
	_, err := c.Do(ctx, http.MethodGet, path, nil, &js)
	return js, err
}

// Cancel cancels a job. Idempotent: a cancelled job stays cancelled (a
// repeat is answered "already finished").
func (c *Client) Cancel(ctx context.Context, id uint64) error {
	_, err := c.Write(ctx, Idempotent, http.MethodDelete, fmt.Sprintf("/v1/jobs/%d", id), nil, nil)
	return err
}

// TestOnly asks when and where req could start, without submitting it
// (Idempotent: it changes nothing).
func (c *Client) TestOnly(ctx context.Context, req SubmitRequest) (TestOnlyResponse, error) {
	var out TestOnlyResponse
	_, err := c.Write(ctx, Idempotent, http.MethodPost, "/v1/jobs?test_only=1", req, &out)
	return out, err
}

// JobByRef returns one job named as Slurm names it: "12" or, for an array
// element, "12_3".
func (c *Client) JobByRef(ctx context.Context, ref string) (Job, error) {
	var j Job
	_, err := c.Do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(ref), nil, &j)
	return j, err
}

// CancelRef cancels a job, an array element ("12_3"), some elements
// ("12_[1-3]"), or every live element of array 12 ("12"). Idempotent, as
// Cancel; a repeat passes over an array's elements already finished.
func (c *Client) CancelRef(ctx context.Context, ref string) (JobsChanged, error) {
	var out JobsChanged
	_, err := c.Write(ctx, Idempotent, http.MethodDelete, "/v1/jobs/"+url.PathEscape(ref), nil, &out)
	return out, err
}

// Hold holds pending jobs named as CancelRef names them: an
// administrator's hold when root asks, unless user is set (scontrol
// uhold). Idempotent: the FSM takes a hold the job has as a no-op.
func (c *Client) Hold(ctx context.Context, ref string, user bool) (JobsChanged, error) {
	return c.jobWrite(ctx, Idempotent, ref, "hold", user, "kind=user")
}

// Release releases held jobs. Idempotent, as Hold.
func (c *Client) Release(ctx context.Context, ref string) (JobsChanged, error) {
	return c.jobWrite(ctx, Idempotent, ref, "release", false, "")
}

// Requeue sends running or ended jobs back to the queue, held with hold
// (scontrol requeuehold). Idempotent with a request id (the FSM answers a
// repeat as the first, each element's for an array, once every server
// speaks protocol 6; until then the agent answers a lost commit as final);
// Once without: by the time a second copy arrives the requeued job may
// run again, and it would requeue that run.
func (c *Client) Requeue(ctx context.Context, ref string, hold bool, requestID string) (JobsChanged, error) {
	q := url.Values{}
	if hold {
		q.Set("hold", "1")
	}
	r := Once
	if requestID != "" {
		q.Set("request_id", requestID)
		r = Idempotent
	}
	return c.jobWrite(ctx, r, ref, "requeue", len(q) > 0, q.Encode())
}

// jobWrite is POST /v1/jobs/{ref}/{verb}, with query when withQuery.
func (c *Client) jobWrite(ctx context.Context, r Repeat, ref, verb string, withQuery bool, query string) (JobsChanged, error) {
	path := "/v1/jobs/" + url.PathEscape(ref) + "/" + verb
	if withQuery {
		path += "?" + query
	}
	var out JobsChanged
	_, err := c.Write(ctx, r, http.MethodPost, path, nil, &out)
	return out, err
}

// PriorityRequest is the body of POST /v1/jobs/{id}/priority.
type PriorityRequest struct {
	// Priority is the absolute priority to set; 0 returns the job to its
	// multifactor priority.
	Priority int64 `json:"priority"`
}

// SetPriority sets an administrator's priority on jobs (root only).
// Idempotent: the priority is absolute.
func (c *Client) SetPriority(ctx context.Context, ref string, priority int64) (JobsChanged, error) {
	var out JobsChanged
	_, err := c.Write(ctx, Idempotent, http.MethodPost, "/v1/jobs/"+url.PathEscape(ref)+"/priority", PriorityRequest{Priority: priority}, &out)
	return out, err
}

// UpdateRequest is the body of POST /v1/jobs/{id}/update (scontrol update
// JobId=N Field=Value ...): the fields to set; absent ones stay.
type UpdateRequest struct {
	// TimeLimitS is the new time limit in seconds (0: unlimited).
	TimeLimitS *int64 `json:"time_limit_s,omitempty"`
	// TimeLimitAddS changes the time limit by this many seconds
	// (TimeLimit=+M or -M).
	TimeLimitAddS *int64  `json:"time_limit_add_s,omitempty"`
	Nodes         *int    `json:"nodes,omitempty"`
	Partition     *string `json:"partition,omitempty"`
	QoS           *string `json:"qos,omitempty"`
	// Dependency is in Slurm's syntax; "" removes the job's.
	Dependency *string `json:"dependency,omitempty"`
	Name       *string `json:"name,omitempty"`
	Comment    *string `json:"comment,omitempty"`
	Nice       *int    `json:"nice,omitempty"`
	// RequestID makes an update safe to send again after a leader
	// change, as Requeue's.
	RequestID string `json:"request_id,omitempty"`
}

// UpdateJob changes fields of jobs (scontrol update JobId=). Idempotent
// when every field is absolute, or with a request id; Once with
// TimeLimitAddS and no id, which a second copy would add again.
func (c *Client) UpdateJob(ctx context.Context, ref string, req UpdateRequest) (JobsChanged, error) {
	r := Idempotent
	if req.TimeLimitAddS != nil && req.RequestID == "" {
		r = Once
	}
	var out JobsChanged
	_, err := c.Write(ctx, r, http.MethodPost, "/v1/jobs/"+url.PathEscape(ref)+"/update", req, &out)
	return out, err
}

// Logs returns every rank's output of a job, from whichever nodes hold it.
func (c *Client) Logs(ctx context.Context, id uint64) ([]LogChunk, error) {
	var out []LogChunk
	_, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/jobs/%d/logs", id), nil, &out)
	return out, err
}

// JobGPU returns what the job's GPUs did over time on each of its nodes,
// while the job is live.
func (c *Client) JobGPU(ctx context.Context, id uint64) ([]JobGPU, error) {
	var out []JobGPU
	_, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/jobs/%d/gpu", id), nil, &out)
	return out, err
}

// Drain keeps new jobs off a node; running ones finish. Root only.
// Idempotent: a drain already in place is a no-op.
func (c *Client) Drain(ctx context.Context, node, reason string) error {
	_, err := c.Write(ctx, Idempotent, http.MethodPost, "/v1/nodes/"+url.PathEscape(node)+"/drain", DrainRequest{Reason: reason}, nil)
	return err
}

// Resume lets jobs land on a drained node again. Root only. Idempotent,
// as Drain.
func (c *Client) Resume(ctx context.Context, node string) error {
	_, err := c.Write(ctx, Idempotent, http.MethodPost, "/v1/nodes/"+url.PathEscape(node)+"/resume", nil, nil)
	return err
}

// Nodes returns every node the cluster knows.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out []Node
	_, err := c.Do(ctx, http.MethodGet, "/v1/nodes", nil, &out)
	return out, err
}

// Members returns the agent's gossip view.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var out []Member
	_, err := c.Do(ctx, http.MethodGet, "/v1/members", nil, &out)
	return out, err
}

// Leader returns the current leader.
func (c *Client) Leader(ctx context.Context) (Leader, error) {
	var out Leader
	_, err := c.Do(ctx, http.MethodGet, "/v1/leader", nil, &out)
	return out, err
}

// Status returns the agent's own status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var out Status
	_, err := c.Do(ctx, http.MethodGet, "/v1/status", nil, &out)
	return out, err
}

// StartStep starts an srun step in a running job and returns its id.
// Idempotent with a request id (the FSM answers a repeat with the step the
// id started); Once without, as a second copy would start a second step.
func (c *Client) StartStep(ctx context.Context, job uint64, req StepRequest) (StepResponse, error) {
	r := Once
	if req.RequestID != "" {
		r = Idempotent
	}
	var out StepResponse
	_, err := c.Write(ctx, r, http.MethodPost, fmt.Sprintf("/v1/jobs/%d/steps", job), req, &out)
	return out, err
}

// CancelStep stops a running step. Idempotent: a cancelled step stays
// cancelled (a repeat is answered "already finished").
func (c *Client) CancelStep(ctx context.Context, job uint64, step int) error {
	_, err := c.Write(ctx, Idempotent, http.MethodPost, fmt.Sprintf("/v1/jobs/%d/steps/%d/cancel", job, step), nil, nil)
	return err
}

// StepLogs returns the output of one step (or, with step -1, of the job's
// own tasks) from every node, each chunk starting at the offset given for
// its key in from (see LogKey), so a caller that passes back the sizes it
// saw reads only what is new.
func (c *Client) StepLogs(ctx context.Context, job uint64, step int, from map[string]int64) ([]LogChunk, error) {
	q := url.Values{}
	q.Set("step", strconv.Itoa(step))
	for k, off := range from {
		q.Add("from", k+":"+strconv.FormatInt(off, 10))
	}
	var out []LogChunk
	_, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/jobs/%d/logs?%s", job, q.Encode()), nil, &out)
	return out, err
}

// LogKey names one rank's stream of one node in StepLogs' from map.
func LogKey(c LogChunk) string {
	return fmt.Sprintf("%s/%d/%d/%s", c.Node, c.Incarnation, c.Rank, c.Stream)
}

// checkServerOwner refuses an agent socket served by a process that is
// neither root nor this user: anyone can create a shoal-data/shoal.sock
// in a shared directory and read what the CLI sends it.
func checkServerOwner(conn net.Conn, path string) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if credErr != nil {
		return fmt.Errorf("socket %s: who serves it: %w", path, credErr)
	}
	if me := os.Getuid(); int(cred.Uid) != 0 && int(cred.Uid) != me {
		return fmt.Errorf("socket %s is served by uid %d (pid %d), neither root nor you (uid %d): not an agent you can trust; refusing to talk to it", path, cred.Uid, cred.Pid, me)
	}
	return nil
}

// setHeaders puts the client's own headers and, when it acts as a user,
// that identity on req.
func (c *Client) setHeaders(req *http.Request) {
	for k, v := range c.header {
		req.Header[k] = v
	}
	if c.identity != nil {
		req.Header.Set(HeaderUser, c.identity.User)
		req.Header.Set(HeaderUID, strconv.Itoa(c.identity.UID))
		req.Header.Set(HeaderGID, strconv.Itoa(c.identity.GID))
	}
}

// SwitchReports returns the switches' own LLDP reports the cluster holds
// (`shoal topology`).
func (c *Client) SwitchReports(ctx context.Context) ([]cluster.SwitchReport, error) {
	var out []cluster.SwitchReport
	_, err := c.Do(ctx, http.MethodGet, "/v1/topology/switches", nil, &out)
	return out, err
}

// ReportSwitch records what a switch's lldpd sees (root; `shoal topology
// report`). Idempotent: a report replaces the switch's last.
func (c *Client) ReportSwitch(ctx context.Context, r cluster.SwitchReport) error {
	_, err := c.Write(ctx, Idempotent, http.MethodPost, "/v1/topology/switches", r, nil)
	return err
}
