package node

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/slurm"
)

type taskEvent = api.TaskEvent

// Bounds of the per-node loops.
const (
	heartbeatTimeout = 2 * time.Second
	reportTimeout    = 5 * time.Second
	reportInterval   = time.Second
	driveInterval    = time.Second
	// maxReportsPerRound bounds one round of exit reports.
	maxReportsPerRound = 256
)

// heartbeatLoop renews this node's lease with the leader and fences the
// node (stops every rank) when it has not managed to for LeaseTTL. Each
// renewal is also written for the tasks' supervisors (exec.RenewLease),
// whose watchdogs fence their tasks on their own when it stops coming:
// the agent may be hung or stopped, and its own check below then never
// runs.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	fenced := false
	// A restarted agent inherits what is left of its predecessor's lease,
	// which its reattached tasks run under, rather than fencing them
	// before its first heartbeat.
	inherited := time.Now().Add(a.exec.LeaseLeft() - a.cfg.LeaseTTL)
	for {
		sent := time.Now()
		if index, err := a.heartbeat(ctx); err == nil {
			// The supervisors' lease first: a task started once startAllowed
			// sees the renewal must find it. Index before time: startAllowed
			// reads them in the other order.
			if err := a.exec.RenewLease(sent); err != nil {
				a.log.Warn("write the lease for the supervisors", "err", err)
			}
			a.leaseIndex.Store(index)
			a.lastRenew.Store(sent.UnixNano())
			if fenced {
				a.log.Info("lease renewed again")
				fenced = false
			}
		} else if ctx.Err() == nil {
			a.log.Debug("heartbeat", "err", err)
		}
		last := time.Unix(0, a.lastRenew.Load())
		if last.Before(inherited) {
			last = inherited
		}
		// plantedNoFence: a planted bug, test builds only (planted_nofence_off.go).
		if time.Since(last) > a.cfg.LeaseTTL && len(a.exec.Running()) > 0 && !plantedNoFence {
			if !fenced {
				a.log.Warn("lease expired: stopping every rank on this node", "last_renewed", last, "lease_ttl", a.cfg.LeaseTTL)
			}
			fenced = true
			a.exec.StopAll(fsm.CauseFenced)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchdogTTL is the lease the supervisors' watchdogs enforce: LeaseTTL,
// or none in a build with the planted no-fence bug, which must leave the
// ranks of a node cut off running for the chaos checker to catch.
func (c *Config) watchdogTTL() time.Duration {
	if plantedNoFence {
		return 0
	}
	return c.LeaseTTL
}

func (a *Agent) heartbeat(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	_, _, self, err := a.leaderAPI()
	if err != nil {
		return 0, err
	}
	if self {
		return a.leaderHeartbeat(ctx, a.self)
	}
	c, err := a.leaderClient()
	if err != nil {
		return 0, err
	}
	var reply api.HeartbeatReply
	if _, err := c.Do(ctx, http.MethodPost, "/v1/internal/heartbeat", api.Heartbeat{Node: a.self}, &reply); err != nil {
		return 0, err
	}
	return reply.Index, nil
}

// startAllowed reports whether the executor may start ranks from view v:
// only under a live lease, and only from a replica that has applied at
// least what the leader had applied when it last renewed that lease. A
// node cut off and healed replays the log through states in which it
// still holds allocations the cluster has since taken back (NodeDown) and
// given to other jobs; acting on those would put two jobs on one GPU
// (DESIGN invariant 1). Stopping ranks needs no such care.
func (a *Agent) startAllowed(v *fsm.View) bool {
	renewed := time.Unix(0, a.lastRenew.Load())
	if time.Since(renewed) > a.cfg.LeaseTTL {
		return false
	}
	return v.Index >= a.leaseIndex.Load()
}

// sendTaskEvent delivers a task report to the leader.
func (a *Agent) sendTaskEvent(ctx context.Context, ev taskEvent) error {
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	_, _, self, err := a.leaderAPI()
	if err != nil {
		return err
	}
	if self {
		return a.leaderTaskEvent(ctx, ev)
	}
	c, err := a.leaderClient()
	if err != nil {
		return err
	}
	_, err = c.Do(ctx, http.MethodPost, "/v1/internal/task", ev, nil)
	return err
}

// announceLeave tells the leader this node is going away.
func (a *Agent) announceLeave(ctx context.Context) error {
	_, _, self, err := a.leaderAPI()
	if err != nil {
		return err
	}
	if self {
		return a.leaderNodeLeft(ctx, a.cfg.Name)
	}
	c, err := a.leaderClient()
	if err != nil {
		return err
	}
	_, err = c.Do(ctx, http.MethodPost, "/v1/internal/leave", api.Heartbeat{Node: cluster.Node{Name: a.cfg.Name}}, nil)
	return err
}

// drainBeforeStop is a graceful stop's first half with --drain-on-stop:
// the node is drained (no new job lands on it; the reason says why and
// stays until `shoal resume`), and the agent keeps running, renewing its
// lease and reporting exits, until its tasks have ended or wait is over.
func (a *Agent) drainBeforeStop(ctx context.Context, wait time.Duration) {
	deadline := time.Now().Add(wait)
	a.log.Info("stopping: draining first", "wait", wait, "tasks", len(a.exec.Running()))
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := a.announceDrain(dctx)
	for err != nil && sleepCtx(dctx, 200*time.Millisecond) {
		err = a.announceDrain(dctx)
	}
	if err != nil {
		a.log.Warn("drain before stop", "err", err)
	}
	for len(a.exec.Running()) > 0 && sleepCtx(dctx, 200*time.Millisecond) {
	}
	if n := len(a.exec.Running()); n > 0 {
		a.log.Warn("stopping with tasks still running after the drain wait", "tasks", n)
	} else {
		a.log.Info("drained: every task has ended")
	}
}

// announceDrain asks the leader to drain this node before it stops.
func (a *Agent) announceDrain(ctx context.Context) error {
	_, _, self, err := a.leaderAPI()
	if err != nil {
		return err
	}
	if self {
		return a.drainSelf(ctx, a.cfg.Name)
	}
	c, err := a.leaderClient()
	if err != nil {
		return err
	}
	_, err = c.Do(ctx, http.MethodPost, "/v1/internal/drain", api.Heartbeat{Node: cluster.Node{Name: a.cfg.Name}}, nil)
	return err
}

// drainSelf is the leader's side of announceDrain.
func (a *Agent) drainSelf(ctx context.Context, node string) error {
	res, err := a.apply(ctx, fsm.CmdSetDrain, fsm.SetDrain{Node: node, Drain: true, Reason: drainOnStopReason, Time: time.Now()})
	if err != nil {
		return err
	}
	return res.Err
}

// drainOnStopReason is the drain reason of a node stopping with
// --drain-on-stop.
const drainOnStopReason = "agent stopping (--drain-on-stop)"

// reportLoop reports exits recorded by the executor until the leader
// acknowledges them.
func (a *Agent) reportLoop(ctx context.Context) {
	t := time.NewTicker(reportInterval)
	defer t.Stop()
	for {
		a.reportExits(ctx)
		select {
		case <-ctx.Done():
			return
		case <-a.exec.ExitNotify():
		case <-t.C:
		}
	}
}

func (a *Agent) reportExits(ctx context.Context) {
	// A job's own exit releases this node's GPUs: report it only once no
	// step of the same run is still alive here (DESIGN invariant 1).
	stepsAlive := map[exec.TaskKey]bool{}
	for _, k := range a.exec.Running() {
		if k.Step != exec.NoStep {
			stepsAlive[exec.TaskKey{Job: k.Job, Incarnation: k.Incarnation, Step: exec.NoStep}] = true
		}
	}
	for i, ex := range a.exec.PendingExits() {
		if i >= maxReportsPerRound || ctx.Err() != nil {
			return
		}
		ev := taskEvent{
			Kind: "exited", Job: ex.Job, Incarnation: ex.Incarnation, Node: a.cfg.Name,
			ExitCode: ex.ExitCode, Cause: ex.Cause, Usage: ex.Usage,
		}
		if ex.Step != exec.NoStep {
			ev.Kind, ev.Step = "step-exited", ex.Step
		} else if stepsAlive[exec.TaskKey{Job: ex.Job, Incarnation: ex.Incarnation, Step: exec.NoStep}] {
			continue // its steps are still stopping; report on a later round
		}
		err := a.sendTaskEvent(ctx, ev)
		if err != nil {
			a.log.Debug("report exit", "job", uint64(ex.Job), "err", err)
			return // the leader is unreachable; try again next round
		}
		if err := a.exec.Ack(exec.TaskKey{Job: ex.Job, Incarnation: ex.Incarnation, Step: ex.Step}); err != nil {
			a.log.Warn("acknowledge exit", "job", uint64(ex.Job), "err", err)
		}
		a.log.Info("exit reported", "job", uint64(ex.Job), "incarnation", ex.Incarnation, "exit_code", ex.ExitCode, "cause", ex.Cause)
	}
}

// driveLoop makes this node's executor follow the allocations in its
// replica: it starts what is allocated here and stops what no longer is.
func (a *Agent) driveLoop(ctx context.Context) {
	t := time.NewTicker(driveInterval)
	defer t.Stop()
	signals := &signalLog{seen: map[exec.TaskKey]uint64{}}
	for {
		v := a.state.View()
		// A replica still replaying its log after a restart would start or
		// stop ranks from stale allocations; wait until it has caught up. A
		// diverged one starts nothing new (its running ranks are fenced if
		// it also loses its lease).
		if a.caughtUp() && a.state.Diverged() == nil {
			a.drive(ctx, v)
			a.deliverSignals(v, signals)
		}
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		case <-t.C:
		}
	}
}

func (a *Agent) drive(ctx context.Context, v *fsm.View) {
	running := map[exec.TaskKey]bool{}
	// busy counts, per job incarnation, the local keys (its own task and
	// its steps) still running or with an exit not yet reported: the
	// node's GPUs may be released only once none is left.
	busy := map[exec.TaskKey]int{}
	for _, k := range a.exec.Running() {
		running[k] = true
		busy[exec.TaskKey{Job: k.Job, Incarnation: k.Incarnation, Step: exec.NoStep}]++
	}
	pendingExit := map[exec.TaskKey]bool{}
	for _, ex := range a.exec.PendingExits() {
		k := exec.TaskKey{Job: ex.Job, Incarnation: ex.Incarnation, Step: ex.Step}
		pendingExit[k] = true
		busy[exec.TaskKey{Job: ex.Job, Incarnation: ex.Incarnation, Step: exec.NoStep}]++
	}
	wanted := map[exec.TaskKey]bool{}

	canStart := a.startAllowed(v)
	for _, j := range v.Jobs() {
		i := j.Alloc.Find(a.cfg.Name)
		if i < 0 {
			continue
		}
		na := j.Alloc.Nodes[i]
		key := exec.TaskKey{Job: j.ID, Incarnation: j.Incarnation, Step: exec.NoStep}
		if na.Released {
			continue
		}
		// A batch job's own task is its script, on the first node only; the
		// other nodes hold their GPUs for its steps.
		ownTask := j.Spec.Batch == nil || i == 0
		switch {
		case j.State == cluster.JobRunning:
			wanted[key] = true
			switch {
			case ownTask && !running[key] && !pendingExit[key]:
				if canStart {
					a.startTasks(ctx, v, j, i)
				}
			case na.State == cluster.TaskAssigned && (running[key] || !ownTask && canStart):
				a.reportStarted(ctx, j)
			}
			a.driveSteps(ctx, v, j, i, running, pendingExit, wanted, canStart)
		case busy[key] == 0:
			// The job ended (cancelled, failed elsewhere) or is being
			// requeued, and holds GPUs here that no local task uses —
			// perhaps it never started here. Tell the leader they are free;
			// a duplicate is harmless.
			err := a.sendTaskEvent(ctx, taskEvent{Kind: "exited", Job: j.ID, Incarnation: j.Incarnation,
				Node: a.cfg.Name, Cause: fsm.CauseCancelled})
			if err != nil {
				a.log.Debug("release unused allocation", "job", uint64(j.ID), "err", err)
			}
		}
	}
	for k := range running {
		if !wanted[k] {
			if a.exec.Stop(k, fsm.CauseCancelled) {
				a.log.Info("stopping job", "job", uint64(k.Job), "incarnation", k.Incarnation, "step", k.Step)
			}
		}
	}
}

// driveSteps starts this node's share of the running steps of job j (this
// node is its allocation's node i) and marks them wanted; a step that
// ended or was cancelled is not wanted, so drive stops its tasks.
func (a *Agent) driveSteps(ctx context.Context, v *fsm.View, j *cluster.Job, i int,
	running, pendingExit, wanted map[exec.TaskKey]bool, canStart bool) {
	for si := range j.Steps {
		st := &j.Steps[si]
		if st.State != cluster.StepRunning || st.Incarnation != j.Incarnation {
			continue
		}
		k := slices.IndexFunc(st.Nodes, func(n cluster.StepNode) bool { return n.Node == a.cfg.Name })
		if k < 0 || st.Nodes[k].State == cluster.TaskExited || st.Nodes[k].State == cluster.TaskLost {
			continue
		}
		key := exec.TaskKey{Job: j.ID, Incarnation: j.Incarnation, Step: st.ID}
		wanted[key] = true
		if running[key] || pendingExit[key] || !canStart {
			continue
		}
		names := make([]string, len(st.Nodes))
		for n := range st.Nodes {
			names[n] = st.Nodes[n].Node
		}
		l := a.launch(v, j, i)
		stepCopy := *st
		l.Step = &stepCopy
		l.StepNodeList = slurm.CompressHostlist(names)
		if err := a.exec.Start(ctx, l); err != nil {
			a.log.Warn("start step", "job", uint64(j.ID), "step", st.ID, "err", err)
			continue
		}
		a.log.Info("step started here", "job", uint64(j.ID), "step", st.ID, "tasks", st.Nodes[k].Tasks)
	}
}

// launch is what the executor needs to run job j's tasks on this node,
// its allocation's node nodeIndex: the contract's inputs, the agent's
// address (so srun inside finds it) and the Slurm shims on PATH.
func (a *Agent) launch(v *fsm.View, j *cluster.Job, nodeIndex int) exec.Launch {
	spec := j.Spec
	spec.Env = append(append([]string(nil), j.Spec.Env...), "SHOAL_ADDR=unix://"+a.SocketPath())
	var hosts []exec.Host
	if len(a.cfg.TaskHelper) > 0 {
		hosts = a.taskHosts(v)
	}
	return exec.Launch{
		Hosts:       hosts,
		Job:         j.ID,
		Incarnation: j.Incarnation,
		Spec:        spec,
		Alloc:       *j.Alloc,
		NodeIndex:   nodeIndex,
		NodeList:    slurm.CompressHostlist(j.Alloc.NodeNames()),
		NodeName:    a.cfg.Name,
		ClusterName: v.Policy().Name(),
		MasterAddr:  a.masterAddr(v, j.Alloc.Nodes[0].Node),
		ShimDir:     a.shimDir,
		JobStart:    j.StartTime,
		Array:       j.Array,
	}
}

// batchOutput is where a batch script's stdout and stderr go: sbatch's
// --output/--error patterns, expanded, relative to the job's WorkDir
// (default slurm-%j.out; stderr with stdout unless --error is given).
func batchOutput(j *cluster.Job, node string) (stdout, stderr string) {
	f := slurm.PatternFields{JobID: uint64(j.ID), StepID: "batch", User: j.Spec.User,
		JobName: j.Spec.Name, NodeName: node}
	if j.Array != nil {
		f.IsArray, f.ArrayJobID, f.ArrayTaskID = true, uint64(j.Array.JobID), j.Array.TaskID
	}
	path := func(pattern string) string {
		if pattern == "none" {
			return os.DevNull
		}
		p := slurm.ExpandOutputPattern(pattern, f)
		if !filepath.IsAbs(p) {
			p = filepath.Join(j.Spec.WorkDir, p)
		}
		return p
	}
	out := j.Spec.Batch.Output
	if out == "" {
		out = slurm.DefaultOutput(j.Array != nil)
	}
	stdout = path(out)
	stderr = stdout
	if j.Spec.Batch.Error != "" {
		stderr = path(j.Spec.Batch.Error)
	}
	return stdout, stderr
}

func (a *Agent) startTasks(ctx context.Context, v *fsm.View, j *cluster.Job, nodeIndex int) {
	l := a.launch(v, j, nodeIndex)
	if j.Spec.Batch != nil {
		l.Stdout, l.Stderr = batchOutput(j, a.cfg.Name)
	}
	if err := a.exec.Start(ctx, l); err != nil {
		// The executor records a start failure as an exit, which the report
		// loop sends; nothing else to do here.
		a.log.Warn("start job", "job", uint64(j.ID), "err", err)
		return
	}
	a.log.Info("job started here", "job", uint64(j.ID), "incarnation", j.Incarnation, "node_rank", nodeIndex)
	a.reportStarted(ctx, j)
}

func (a *Agent) reportStarted(ctx context.Context, j *cluster.Job) {
	err := a.sendTaskEvent(ctx, taskEvent{Kind: "started", Job: j.ID, Incarnation: j.Incarnation, Node: a.cfg.Name})
	if err != nil {
		a.log.Debug("report start", "job", uint64(j.ID), "err", err)
	}
}

// taskHosts are the cluster's node names at their agents' addresses (the
// host of each node's API address, as masterAddr), for the tasks' own
// /etc/hosts.
func (a *Agent) taskHosts(v *fsm.View) []exec.Host {
	nodes := v.Nodes()
	hosts := make([]exec.Host, 0, len(nodes))
	for _, n := range nodes {
		addr := a.masterAddr(v, n.Name)
		if addr == n.Name {
			continue // no address known
		}
		hosts = append(hosts, exec.Host{Name: n.Name, Addr: addr})
	}
	return hosts
}

// masterAddr is the host ranks dial to reach the job's first node.
func (a *Agent) masterAddr(v *fsm.View, first string) string {
	if first == a.cfg.Name {
		return a.cfg.AdvertiseAddr
	}
	if n, ok := v.Node(first); ok {
		if host, _, err := net.SplitHostPort(n.APIAddr); err == nil {
			return host
		}
	}
	return first // resolvable as a host name on a real cluster
}

// localLogs reads this node's rank output of a job.
func (a *Agent) localLogs(id cluster.JobID, filter logFilter) ([]api.LogChunk, error) {
	files, err := a.exec.LogFiles(id)
	if err != nil {
		return nil, fmt.Errorf("logs of job %d on %s: %w", id, a.cfg.Name, err)
	}
	out := make([]api.LogChunk, 0, len(files))
	for _, f := range files {
		if filter.step != nil && f.Step != *filter.step {
			continue
		}
		c := api.LogChunk{Node: a.cfg.Name, Incarnation: f.Incarnation, Step: f.Step, Rank: f.Rank, Stream: f.Stream}
		// ReadLog reads a file the job chose only as its user and only if
		// it is still the one its task opened: the agent runs as root.
		data, offset, size, err := exec.ReadLog(f, filter.from[api.LogKey(c)], maxLogBytes)
		if err != nil {
			c.Error = err.Error()
		}
		c.Data, c.Offset, c.Size = string(data), offset, size
		out = append(out, c)
	}
	return out, nil
}
