package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/placement"
	"github.com/shoal-sched/shoal/slurm"
	"github.com/shoal-sched/shoal/ui"
)

// Bounds of the HTTP API.
const (
	maxLogBytes    = 16 << 20
	forwardTimeout = httpapi.ForwardTimeout
)

// routes is the API's route table (httpapi.Server.Routes) with this
// agent's own handlers.
func (a *Agent) routes() http.Handler {
	return a.http.Routes(httpapi.Handlers{
		Submit: a.handleSubmit, Job: a.handleJob, Cancel: a.handleCancel, Hold: a.handleHold,
		Release: a.handleRelease, Requeue: a.handleRequeue, SetPriority: a.handleSetPriority,
		Update: a.handleUpdate,
		Logs:   a.handleLogs, JobGPU: a.handleJobGPU, StartStep: a.handleStartStep, CancelStep: a.handleCancelStep, Signal: a.handleSignal, Pty: a.handlePty,
		Priority: a.handlePriority, FairShare: a.handleFairShare, Policy: a.handlePolicy, SetPolicy: a.handleSetPolicy,
		CreateJoinToken: a.handleCreateJoinToken, CreateUserToken: a.handleCreateUserToken,
		RevokeUserToken: a.handleRevokeUserToken, Keyring: a.handleKeyring, ChangeKeyring: a.handleChangeKeyring,
		Join: a.handleJoin, Revoke: a.handleRevoke, Renew: a.handleRenew, ClusterCA: a.handleClusterCA,
		AgentLeave: a.handleAgentLeave, LocalLogs: a.handleLocalLogs, LocalGPU: a.handleLocalGPU,
		Metrics: a.metrics.Handler(), UI: ui.Handler(),
	})
}

func jobID(r *http.Request) (cluster.JobID, error) {
	id, err := slurm.ParseJobID(r.PathValue("id"))
	if err != nil {
		return 0, invalid(err)
	}
	return cluster.JobID(id), nil
}

// errCatchingUp answers reads while the replica is behind the cluster.
var errCatchingUp = errors.New("this agent's replica is catching up with the cluster; retry in a moment")

// readView returns the view reads are served from, or an error while the
// replica may not answer (see httpapi.Server.WaitReadable and readable).
func (a *Agent) readView(ctx context.Context) (*fsm.View, error) {
	if err := a.http.WaitReadable(ctx); err != nil {
		return nil, err
	}
	return a.state.View(), nil
}

// readable returns nil when reads may be served, or an error while the
// replica has not yet caught up with the log it had before a restart: an
// empty or stale answer then would look like lost jobs.
func (a *Agent) readable() error {
	if err := a.state.Diverged(); err != nil {
		// This replica could not apply a committed entry: what it holds is
		// not the cluster's state, so it must not answer for it.
		return cluster.Mark(fsm.ErrDiverged, fmt.Errorf("this agent's replica diverged and serves no reads; ask another agent: %w", err))
	}
	if !a.caughtUp() {
		return unavailable(errCatchingUp)
	}
	return nil
}

// caughtUp reports whether this replica has once applied everything the
// cluster had committed when it first heard from a leader. It stays true.
func (a *Agent) caughtUp() bool {
	if a.ready.Load() {
		return true
	}
	if id, _ := a.raft.Leader(); id == "" {
		return false
	}
	commit := a.raft.CommitIndex()
	if commit == 0 || a.state.Index() < commit {
		return false
	}
	a.ready.Store(true)
	return true
}

func (a *Agent) handleSubmit(w http.ResponseWriter, r *http.Request) {
	var req api.SubmitRequest
	who, here := a.http.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	if len(req.RequestID) > maxClientRequestID {
		httpapi.WriteError(w, invalid(fmt.Errorf("request_id: %d bytes, want at most %d", len(req.RequestID), maxClientRequestID)))
		return
	}
	if req.TimeLimitS < 0 {
		httpapi.WriteError(w, invalid(fmt.Errorf("time_limit_s %d: want 0 (unlimited) or more", req.TimeLimitS)))
		return
	}
	if req.GPUsTotal > 0 {
		if err := a.spreadGPUs(&req); err != nil {
			httpapi.WriteError(w, err)
			return
		}
	}
	spec, err := specOf(req, who)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	warnings, err := queueFieldsOf(a.state.View(), spec, who)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	if r.URL.Query().Get("test_only") != "" {
		out, err := a.leaderTestOnly(spec)
		if err != nil {
			httpapi.WriteError(w, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), out)
		return
	}
	if plantedEarlyAck { // a planted bug, test builds only: see planted_earlyack_off.go
		a.plantedAckEarly(w, scopedRequestID(who, req.RequestID), spec)
		return
	}
	res, err := a.leaderSubmit(r.Context(), scopedRequestID(who, req.RequestID), spec)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), api.SubmitResponse{ID: uint64(res.JobID), Duplicate: res.Duplicate, Warnings: warnings})
}

// maxClientRequestID leaves room in cluster.MaxRequestIDBytes for the
// user scope scopedRequestID adds.
const maxClientRequestID = cluster.MaxRequestIDBytes - 16

// scopedRequestID makes a client's request id the caller's own: the FSM
// deduplicates by it, and another user who sends the same id must get a
// job of their own, not a reference to someone else's.
func scopedRequestID(who caller, rid string) string {
	if rid == "" {
		return ""
	}
	return fmt.Sprintf("u%d/%s", who.UID, rid)
}

// specOf builds the spec a submit asks for, as the proven caller; an
// error names a field that does not parse.
func specOf(req api.SubmitRequest, who caller) (cluster.Spec, error) {
	var begin time.Time
	if req.Begin != "" {
		t, err := time.Parse(time.RFC3339, req.Begin)
		if err != nil {
			return cluster.Spec{}, invalid(fmt.Errorf("begin %.64q: want an RFC 3339 time", req.Begin))
		}
		begin = t.UTC()
	}
	var deadline time.Time
	if req.Deadline != "" {
		t, err := time.Parse(time.RFC3339, req.Deadline)
		if err != nil {
			return cluster.Spec{}, invalid(fmt.Errorf("deadline %.64q: want an RFC 3339 time", req.Deadline))
		}
		deadline = t.UTC()
	}
	name := req.Name
	if name == "" && len(req.Command) > 0 {
		name = filepath.Base(req.Command[0])
	}
	rq := cluster.Request{
		Nodes:         req.Nodes,
		GPUsPerNode:   req.GPUsPerNode,
		TasksPerNode:  req.TasksPerNode,
		NTasks:        req.NTasks,
		Distribution:  req.Distribution,
		CPUsPerTask:   req.CPUsPerTask,
		TimeLimit:     time.Duration(req.TimeLimitS) * time.Second,
		NodeList:      req.NodeList,
		Exclude:       req.Exclude,
		Constraint:    req.Constraint,
		Exclusive:     req.Exclusive,
		Partition:     req.Partition,
		Switches:      req.Switches,
		MemPerNodeMiB: req.MemPerNodeMiB,
		MemPerCPUMiB:  req.MemPerCPUMiB,
		MemPerGPUMiB:  req.MemPerGPUMiB,
		MemWholeNode:  req.MemWholeNode,
		CPUsPerGPU:    req.CPUsPerGPU,
		MinCPUs:       req.MinCPUs,
		NodesMax:      req.NodesMax,
		SwitchesWait:  time.Duration(req.SwitchesWaitS) * time.Second,
		GPUOption:     req.GPUOption,
	}
	// Zero means "not given": fill Slurm's defaults. Negative values stay
	// and are refused by validation, naming the field.
	return cluster.Spec{
		Name:       name,
		Command:    req.Command,
		Env:        req.Env,
		WorkDir:    req.WorkDir,
		Request:    rq.WithDefaults(),
		User:       who.User,
		UID:        who.UID,
		GID:        who.GID,
		Requeue:    req.Requeue,
		Account:    req.Account,
		SubmitHost: req.SubmitHost,
		QoS:        req.QoS,
		Nice:       req.Nice,
		Batch:      req.Batch,
		Pty:        req.Pty,
		Signal:     req.Signal,

		Dependency: req.Dependency,
		Array:      req.Array,
		Hold:       req.Hold,
		NoKill:     req.NoKill,
		Begin:      begin,
		Deadline:   deadline,
	}, nil
}

// handleCancel cancels a job, an array element, or every live element of
// an array (its bare id, as scancel does).
func (a *Agent) handleCancel(w http.ResponseWriter, r *http.Request) {
	ref, err := parseJobRef(r.PathValue("id"))
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	who, here := a.http.AcceptWrite(w, r, nil)
	if !here {
		return
	}
	jobs, err := ref.resolve(a.state.View())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	ids := []uint64{}
	for _, j := range jobs {
		if len(jobs) > 1 && j.State.Terminal() {
			continue // an array's finished elements
		}
		if err := a.leaderCancel(r.Context(), j.ID, who); err != nil {
			if len(jobs) > 1 && errors.Is(err, fsm.ErrJobFinished) {
				continue
			}
			httpapi.WriteError(w, err)
			return
		}
		ids = append(ids, uint64(j.ID))
	}
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), api.JobsChanged{ID: ref.ID, IDs: ids})
}

// handleAgentLeave is `shoal leave`: this agent stops as SIGTERM stops it
// (with DrainWaitS set, draining for that long first). Only root or the
// agent's own user may ask, on this agent: it is never forwarded.
func (a *Agent) handleAgentLeave(w http.ResponseWriter, r *http.Request) {
	var req api.LeaveRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	who := callerOf(r)
	if err := httpapi.RequireProven(who); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	if who.UID != 0 && who.UID != os.Getuid() {
		httpapi.WriteError(w, forbidden(fmt.Errorf("leave: %w: only root or the agent's user may stop it", ErrForbidden)))
		return
	}
	wait := time.Duration(-1)
	if req.DrainWaitS != nil {
		if *req.DrainWaitS < 0 {
			httpapi.WriteError(w, invalid(fmt.Errorf("drain_wait_s %d: want 0 or more", *req.DrainWaitS)))
			return
		}
		wait = time.Duration(*req.DrainWaitS) * time.Second
	}
	select {
	case a.leaveReq <- wait:
	default: // already leaving
	}
	httpapi.WriteJSON(w, http.StatusAccepted, 0, api.LeaveResponse{Node: a.cfg.Name})
}

// blockingView returns a view newer than ?index=, waiting up to ?wait=.
func (a *Agent) blockingView(r *http.Request) (*fsm.View, error) {
	if err := a.http.WaitIndex(r); err != nil {
		return nil, err
	}
	return a.state.View(), nil
}

// handleJob returns one job: by its id, or an array element as N_TASK.
func (a *Agent) handleJob(w http.ResponseWriter, r *http.Request) {
	ref, err := parseJobRef(r.PathValue("id"))
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	if len(ref.Tasks) > 1 {
		httpapi.WriteError(w, invalid(fmt.Errorf("job id %q: names several array elements, want one", ref.raw)))
		return
	}
	v, err := a.blockingView(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	j, ok := v.Job(cluster.JobID(ref.ID))
	if !ok {
		j, ok = v.ArchivedJob(cluster.JobID(ref.ID))
	}
	if !ok {
		httpapi.WriteError(w, notFound(fmt.Errorf("job %s: no such job", ref.raw)))
		return
	}
	if !maySee(v, j, callerOf(r)) {
		httpapi.WriteError(w, forbidden(fmt.Errorf("job %s: %w: it belongs to another user, and the policy keeps jobs private", ref.raw, ErrForbidden)))
		return
	}
	if ref.Tasks != nil {
		js, err := ref.resolve(v)
		if err != nil {
			httpapi.WriteError(w, err)
			return
		}
		j = js[0]
	}
	out := httpapi.JobOf(j)
	if j.State == cluster.JobPending && j.Reason == cluster.ReasonResources {
		var parts []cluster.Partition
		if p := v.Policy(); p != nil {
			parts = p.Partitions
		}
		out.ReasonDetail = placement.Shortage(placement.NewView(v.Nodes(), v.Jobs()).WithPartitions(parts), j)
	}
	httpapi.WriteJSON(w, http.StatusOK, v.Index, out)
}

func (a *Agent) handleLogs(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	filter, err := parseLogFilter(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	v, err := a.readView(r.Context())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	j, ok := v.Job(id)
	if !ok {
		j, ok = v.ArchivedJob(id)
	}
	if !ok {
		httpapi.WriteError(w, notFound(fmt.Errorf("job %d: no such job", id)))
		return
	}
	if err := mayTouch(v, "read the output of", j, callerOf(r)); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	out := []api.LogChunk{}
	for _, name := range j.Alloc.NodeNames() {
		chunks, err := a.nodeLogs(r.Context(), v, name, id, filter)
		if err != nil {
			out = append(out, api.LogChunk{Node: name, Error: err.Error()})
			continue
		}
		out = append(out, chunks...)
	}
	slices.SortStableFunc(out, func(x, y api.LogChunk) int {
		if x.Incarnation != y.Incarnation {
			return int(x.Incarnation) - int(y.Incarnation)
		}
		if x.Step != y.Step {
			return x.Step - y.Step
		}
		if x.Rank != y.Rank {
			return x.Rank - y.Rank
		}
		return strings.Compare(x.Stream, y.Stream)
	})
	httpapi.WriteJSON(w, http.StatusOK, v.Index, out)
}

// nodeLogs reads a job's output from the node that holds it.
func (a *Agent) nodeLogs(ctx context.Context, v *fsm.View, node string, id cluster.JobID, filter logFilter) ([]api.LogChunk, error) {
	if node == a.cfg.Name {
		return a.localLogs(id, filter)
	}
	n, ok := v.Node(node)
	if !ok || n.APIAddr == "" {
		return nil, fmt.Errorf("node %s: address unknown", node)
	}
	c, err := a.peers.get(node, n.APIAddr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	var out []api.LogChunk
	if _, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/internal/logs/%d%s", id, filter.query()), nil, &out); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	return out, nil
}

func (a *Agent) handleLocalLogs(w http.ResponseWriter, r *http.Request) {
	if err := a.http.RequireNode(r, ""); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	id, err := jobID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	filter, err := parseLogFilter(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	out, err := a.localLogs(id, filter)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, 0, out)
}

// raftRoles maps server IDs to leader, voter or nonvoter.
func (a *Agent) raftRoles(ctx context.Context) map[string]string {
	roles := map[string]string{}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	servers, err := a.raft.Servers(ctx)
	if err != nil {
		return roles
	}
	leader, _ := a.raft.Leader()
	for _, s := range servers {
		roles[s.ID] = string(s.Suffrage)
		if s.ID == leader {
			roles[s.ID] = "leader"
		}
	}
	return roles
}
