package fsm

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// maxNodeNameBytes is the longest node name accepted (a DNS name).
const maxNodeNameBytes = 253

func (s *State) submit(index uint64, c SubmitJob) Result {
	if p, ok, err := s.seenRequest("submit", ridSubmit, 0, c.RequestID); err != nil || ok {
		return Result{JobID: p.Job, Duplicate: ok, Err: err}
	}
	what := "submit"
	if c.RequestID != "" {
		what = fmt.Sprintf("submit request %q", c.RequestID)
	}
	if err := c.Spec.Validate(); err != nil {
		return Result{Err: fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)}
	}
	// The job's partition: the default one when it names none, and its
	// default time limit when it asks for none.
	spec, _, err := s.policy.ResolvePartition(c.Spec)
	if err != nil {
		return Result{Err: fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)}
	}
	c.Spec = spec
	if c.Spec.MissesDeadline(c.Time) {
		// Slurm refuses such a job at submit (ESLURM_INVALID_TIME_LIMIT).
		return Result{Err: fmt.Errorf("%s: %w: deadline %s: Requested time limit is invalid (missing or exceeds some limit): the job cannot end by then",
			what, ErrInvalid, c.Spec.Deadline.Format(time.RFC3339))}
	}
	count := uint64(1)
	if c.Spec.Array != nil {
		count = uint64(len(c.Spec.Array.Indices))
	}
	if uint64(s.lastJob) > math.MaxUint64-count {
		return Result{Err: fmt.Errorf("%s: %w: job ids exhausted", what, ErrInvalid)}
	}
	if err := s.checkDependency(c.Spec); err != nil {
		return Result{Err: fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)}
	}
	perUser, clusterMax := s.policy.JobLimits()
	if n := s.live.byUID[c.Spec.UID]; n+int(count) > perUser {
		return Result{Err: fmt.Errorf("%s: %w: MaxSubmitJobs: user %s has %d jobs pending or running, and %d more would pass the limit of %d",
			what, ErrLimit, c.Spec.User, n, count, perUser)}
	}
	if s.live.total+int(count) > clusterMax {
		return Result{Err: fmt.Errorf("%s: %w: MaxJobCount: the cluster has %d jobs pending or running, and %d more would pass the limit of %d",
			what, ErrLimit, s.live.total, count, clusterMax)}
	}
	tmpl := &cluster.Job{
		RequestID:   c.RequestID,
		Spec:        c.Spec,
		State:       cluster.JobPending,
		SubmitTime:  c.Time,
		CreateIndex: index,
		ModifyIndex: index,
	}
	tmpl.Spec.Array, tmpl.Spec.Hold = nil, false
	if c.Spec.Hold {
		tmpl.Hold, tmpl.Reason = cluster.HoldUser, cluster.ReasonHeldUser
	}
	first := s.lastJob + 1
	var elements []cluster.ArrayTask
	if c.Spec.Array != nil {
		elements = c.Spec.Array.Elements(first)
	}
	for k := range count {
		j := tmpl.Clone()
		j.ID = first + cluster.JobID(k)
		if elements != nil {
			j.Array = &elements[k]
		}
		canonJob(j)
		s.jobs = append(s.jobs, j) // IDs only grow: still in order
		s.lastJob = j.ID
		s.live.change(nil, j)
	}
	if c.RequestID != "" {
		s.rids.add(ridPair{RequestID: c.RequestID, Job: first})
	}
	return Result{JobID: first}
}

// checkDependency refuses a dependency on a job the FSM has never had, as
// Slurm refuses one at submit ("Job dependency problem"): an element that
// is not in its array, an aftercorr on something that is not an array or
// from a job that is not one.
func (s *State) checkDependency(spec cluster.Spec) error {
	d := spec.Dependency
	if d == nil {
		return nil
	}
	for _, c := range d.Conditions {
		for _, dj := range c.Jobs {
			i, ok := findJob(s.jobs, dj.ID)
			if _, archived := findJob(s.archive, dj.ID); !ok && archived {
				return fmt.Errorf("dependency %s: job %d finished longer than MinJobAge ago and is archived: a new job cannot depend on it", c.Type, dj.ID)
			}
			if !ok {
				return fmt.Errorf("dependency %s: job %d: no such job", c.Type, dj.ID)
			}
			t := s.jobs[i]
			isArray := t.Array != nil && t.Array.JobID == dj.ID
			switch {
			case dj.Task >= 0 && !isArray:
				return fmt.Errorf("dependency %s: job %d is not an array, so has no element %d", c.Type, dj.ID, dj.Task)
			case dj.Task >= 0 && !s.hasElement(i, dj.ID, dj.Task):
				return fmt.Errorf("dependency %s: array %d has no element %d", c.Type, dj.ID, dj.Task)
			case c.Type == cluster.DepAfterCorr && !isArray:
				return fmt.Errorf("dependency aftercorr: job %d is not an array", dj.ID)
			case c.Type == cluster.DepAfterCorr && spec.Array == nil:
				return fmt.Errorf("dependency aftercorr: only an array job can wait on another array's elements")
			}
		}
	}
	return nil
}

// hasElement reports whether array id, whose first element is jobs[i], has
// an element of index task.
func (s *State) hasElement(i int, id cluster.JobID, task int) bool {
	for k := i; k < len(s.jobs) && s.jobs[k].Array != nil && s.jobs[k].Array.JobID == id; k++ {
		if s.jobs[k].Array.TaskID == task {
			return true
		}
	}
	return false
}

func (s *State) cancel(index uint64, c CancelJob) Result {
	pos, old := s.job(c.Job)
	if old == nil {
		return Result{Err: fmt.Errorf("cancel job %d: %w", c.Job, ErrUnknownJob)}
	}
	if old.State.Terminal() {
		return Result{Err: fmt.Errorf("cancel job %d: %w (state %s)", c.Job, ErrJobFinished, old.State)}
	}
	switch c.Reason {
	case cluster.ReasonNone:
	case cluster.ReasonDependencyNever:
		if old.State != cluster.JobPending || !newGates(s.jobs, s.policy, c.Time).NeverSatisfied(old) {
			return Result{Err: fmt.Errorf("cancel job %d: %w: its dependency can still be satisfied", c.Job, ErrWrongState)}
		}
	case cluster.ReasonPreempted:
		if old.Preempt == nil || c.Time.Before(old.Preempt.Deadline) {
			return Result{Err: fmt.Errorf("cancel job %d: %w: not a preemption victim past its grace", c.Job, ErrWrongState)}
		}
	case cluster.ReasonDeadline:
		if old.State != cluster.JobPending || !old.Spec.MissesDeadline(c.Time) {
			return Result{Err: fmt.Errorf("cancel job %d: %w: it can still end by its deadline", c.Job, ErrWrongState)}
		}
		// Slurm's deadline_ok: state DEADLINE, started and ended now, and
		// exit_code 1, a raw wait status that Slurm's commands show as
		// signal 1 ("0:1"), which is 128+1 here.
		j := old.Clone()
		j.State, j.Reason, j.Hold = cluster.JobDeadline, c.Reason, cluster.HoldNone
		j.ExitCode = 128 + 1
		j.StartTime, j.EndTime = c.Time, c.Time
		j.ModifyIndex = index
		s.storeJob(pos, j)
		return Result{}
	default:
		return Result{Err: fmt.Errorf("cancel job %d: %w: reason %.64q, want none, %s, %s or %s", c.Job, ErrInvalid, c.Reason,
			cluster.ReasonDependencyNever, cluster.ReasonPreempted, cluster.ReasonDeadline)}
	}
	// A running job's allocation stays unreleased until each node reports
	// its tasks dead or is declared down (DESIGN invariant 1).
	j := old.Clone()
	j.State = cluster.JobCancelled
	j.Reason = c.Reason
	j.Hold = cluster.HoldNone // a hold is on a pending job only
	j.EndTime = c.Time
	j.ModifyIndex = index
	settleSteps(j, c.Time)
	s.storeJob(pos, j)
	return Result{}
}

// validateNode checks what UpsertNode and Restore both require of a node.
func validateNode(n *cluster.Node) error {
	switch {
	case n.Name == "":
		return fmt.Errorf("name: empty, want 1 to %d bytes", maxNodeNameBytes)
	case len(n.Name) > maxNodeNameBytes:
		return fmt.Errorf("name: %d bytes, want at most %d", len(n.Name), maxNodeNameBytes)
	case len(n.GPUs) > cluster.MaxGPUsPerNode:
		return fmt.Errorf("gpus: %d, want at most %d", len(n.GPUs), cluster.MaxGPUsPerNode)
	case n.CPUs < 0 || n.CPUs > cluster.MaxCPUsPerNode:
		return fmt.Errorf("cpus %d: want 0 to %d", n.CPUs, cluster.MaxCPUsPerNode)
	}
	if err := cluster.ValidateLayout(n.CPUs, n.Sockets, n.CoresPerSocket, n.ThreadsPerCore); err != nil {
		return err
	}
	if err := cluster.ValidateFeatures(n.Features); err != nil {
		return err
	}
	for i, g := range n.GPUs {
		if g.Index != i {
			return fmt.Errorf("gpus[%d].index %d: want %d (indices 0..n-1 in order)", i, g.Index, i)
		}
		for _, p := range g.NVLinkPeers {
			if p < 0 || p >= len(n.GPUs) {
				return fmt.Errorf("gpus[%d].nvlink_peers: %d, want 0 to %d", i, p, len(n.GPUs)-1)
			}
		}
	}
	return nil
}

func (s *State) upsertNode(index uint64, c UpsertNode) Result {
	if err := validateNode(&c.Node); err != nil {
		return Result{Err: fmt.Errorf("upsert node %.64q: %w: %w", c.Node.Name, ErrInvalid, err)}
	}
	in := c.Node
	n := &cluster.Node{
		Name:           in.Name,
		APIAddr:        in.APIAddr,
		RaftAddr:       in.RaftAddr,
		GossipAddr:     in.GossipAddr,
		GPUs:           in.GPUs,
		CPUs:           in.CPUs,
		MemoryMiB:      in.MemoryMiB,
		Sockets:        in.Sockets,
		CoresPerSocket: in.CoresPerSocket,
		ThreadsPerCore: in.ThreadsPerCore,
		Topology:       in.Topology,
		Features:       in.Features,
		Version:        in.Version,
		Status:         cluster.NodeUp,
		StatusTime:     c.Time,
		CreateIndex:    index,
		ModifyIndex:    index,
	}
	canonNode(n)
	if old := s.node(in.Name); old != nil {
		n.Drain, n.DrainReason = old.Drain, old.DrainReason
		n.CreateIndex = old.CreateIndex
		if old.Status == cluster.NodeUp {
			n.StatusTime = old.StatusTime
		}
		if sameNode(old, n) {
			return Result{} // a repeated announcement changes nothing
		}
	}
	s.putNode(n)
	return Result{}
}

// sameNode reports whether a and b are equal except for ModifyIndex.
func sameNode(a, b *cluster.Node) bool {
	return a.Name == b.Name && a.APIAddr == b.APIAddr && a.RaftAddr == b.RaftAddr &&
		a.GossipAddr == b.GossipAddr && a.CPUs == b.CPUs && a.MemoryMiB == b.MemoryMiB &&
		a.Sockets == b.Sockets && a.CoresPerSocket == b.CoresPerSocket && a.ThreadsPerCore == b.ThreadsPerCore &&
		a.Topology == b.Topology && a.Version == b.Version && a.Status == b.Status &&
		a.Drain == b.Drain && a.DrainReason == b.DrainReason &&
		a.StatusTime.Equal(b.StatusTime) && a.CreateIndex == b.CreateIndex &&
		slices.Equal(a.Features, b.Features) &&
		slices.EqualFunc(a.GPUs, b.GPUs, func(g, h cluster.GPU) bool {
			return g.Index == h.Index && g.UUID == h.UUID && g.Model == h.Model &&
				g.MemoryMiB == h.MemoryMiB && g.NUMA == h.NUMA &&
				slices.Equal(g.NVLinkPeers, h.NVLinkPeers)
		})
}

func (s *State) nodeDown(index uint64, c NodeDown) Result {
	return s.nodeGone(index, c.Node, cluster.NodeDown, c.Time)
}

func (s *State) nodeLeft(index uint64, c NodeLeft) Result {
	return s.nodeGone(index, c.Node, cluster.NodeLeft, c.Time)
}

// nodeGone marks a node down (lease expired) or left (stopped gracefully)
// and releases what it held, failing or requeueing its running jobs.
func (s *State) nodeGone(index uint64, name string, status cluster.NodeStatus, at time.Time) Result {
	c := struct {
		Node string
		Time time.Time
	}{name, at}
	old := s.node(c.Node)
	if old == nil {
		return Result{Err: fmt.Errorf("node %s %.64q: %w", status, c.Node, ErrUnknownNode)}
	}
	if old.Status != status {
		n := old.Clone()
		n.Status = status
		n.StatusTime = c.Time
		n.ModifyIndex = index
		canonNode(n)
		s.putNode(n)
	}
	// The node's tasks are dead (its agent fences itself before its lease
	// ends), so what it held is released and its live jobs fail.
	for _, id := range s.res.liveJobs(c.Node) {
		pos, old := s.job(id)
		if old == nil || old.Alloc == nil {
			continue // the index only names jobs it was given
		}
		i := old.Alloc.Find(c.Node)
		if i < 0 || old.Alloc.Nodes[i].Released {
			continue
		}
		j := old.Clone()
		removed := j.Alloc.Nodes[i].Removed
		j.Alloc.Nodes[i].State = cluster.TaskLost
		j.Alloc.Nodes[i].Released = true
		if j.State == cluster.JobRunning {
			switch {
			case removed:
				removedExited(j, i, c.Time) // given up already: nothing more is lost
			case shrinks(j, i):
				shrink(j, i, c.Time)
			case survivesLoss(j, i):
				endIfAllDone(j, c.Time)
			default:
				lostNode(j, c.Time)
			}
		}
		s.storeReleased(index, pos, j, i, c.Time)
	}
	return Result{}
}

// survivesLoss reports whether running job j goes on without its node i,
// just lost: it asked for --no-kill and i is not its first node, where
// the batch script or rank 0 runs.
func survivesLoss(j *cluster.Job, i int) bool {
	return j.Spec.NoKill && i != 0
}

// endIfAllDone ends a running --no-kill job that is not a batch job once
// none of its nodes runs anything: COMPLETED when every node that was not
// lost exited 0, else NODE_FAIL (ranks died with their node). A batch
// job's script decides, as ever.
func endIfAllDone(j *cluster.Job, at time.Time) {
	if j.Spec.Batch != nil || j.HoldsResources() {
		return
	}
	j.State, j.Reason, j.EndTime = cluster.JobNodeFail, cluster.ReasonNodeDown, at
}

// lostNode moves a running job that lost a node: to REQUEUED when it asked
// for requeue, else to NODE_FAIL.
func lostNode(j *cluster.Job, at time.Time) {
	j.Reason = cluster.ReasonNodeDown
	if j.Spec.Requeue {
		j.State = cluster.JobRequeued
		return
	}
	j.State = cluster.JobNodeFail
	j.EndTime = at
}

// storeReleased stores j (at pos), modified at index, whose NodeAlloc i
// was just released at t: it records the release in the resource index,
// settles the steps and finishes a requeue that nothing holds up any more.
func (s *State) storeReleased(index uint64, pos int, j *cluster.Job, i int, t time.Time) {
	j.ModifyIndex = index
	s.res.release(j, i)
	settleSteps(j, t)
	finishRequeue(j)
	s.storeJob(pos, j)
}

// finishRequeue returns a REQUEUED job to the queue once none of its nodes
// holds anything any more: only then can its next incarnation start
// without overlapping the last one (DESIGN invariant 3). Its steps belong
// to the incarnation that ended and are forgotten. Call it after the
// release is recorded in the resource index, which reads the allocation.
func finishRequeue(j *cluster.Job) {
	if j.State != cluster.JobRequeued || j.HoldsResources() {
		return
	}
	j.State = cluster.JobPending
	j.Reason = holdReason(j.Hold)
	j.Alloc = nil
	j.Steps = nil
	j.StartTime = time.Time{}
	j.EndTime = time.Time{}
}

// holdReason is the reason a pending job with hold h shows until the
// scheduler gives it another.
func holdReason(h string) string {
	switch h {
	case cluster.HoldUser:
		return cluster.ReasonHeldUser
	case cluster.HoldAdmin:
		return cluster.ReasonHeldAdmin
	}
	return cluster.ReasonNone
}

func (s *State) allocate(index uint64, c Allocate) Result {
	var res Result
	for _, d := range c.Decisions {
		pos, old := s.job(d.Job)
		// Fresh gates per decision: the ones before may have started
		// elements of the same array.
		if !c.Consumable {
			d = legacyDecision(d)
		}
		reason := s.checkDecision(old, d, newGates(s.jobs, s.policy, c.Time), c.Consumable)
		var port int
		if reason == "" {
			var ok bool
			if port, ok = s.res.freePort(d.Nodes[0].Node); !ok {
				reason = fmt.Sprintf("no free master port on node %q in [%d, %d)", d.Nodes[0].Node, minMasterPort, maxMasterPort)
			}
		}
		if reason != "" {
			res.Rejected = append(res.Rejected, Rejection{Job: d.Job, Reason: reason})
			continue
		}
		j := old.Clone()
		j.State = cluster.JobRunning
		j.Reason = cluster.ReasonNone
		j.StartTime = c.Time
		j.Spec.Request.TimeLimit = j.Spec.DeadlineLimit(c.Time)
		j.Incarnation++
		j.Alloc = &cluster.Allocation{
			Nodes:      make([]cluster.NodeAlloc, len(d.Nodes)),
			MasterPort: port,
			Index:      index,
			Elastic:    d.Elastic,
		}
		for i, p := range d.Nodes {
			j.Alloc.Nodes[i] = cluster.NodeAlloc{Node: p.Node, GPUs: slices.Clone(p.GPUs), CPUs: slices.Clone(p.CPUs), MemMiB: p.MemMiB, Tasks: p.Tasks, State: cluster.TaskAssigned}
		}
		j.ModifyIndex = index
		canonJob(j)
		if err := s.res.hold(j); err != nil {
			// checkDecision saw these resources free a moment ago: the
			// index is wrong, so this replica cannot be trusted.
			s.diverge(index, fmt.Errorf("allocate job %d: resource index disagrees with its checks: %w", j.ID, err))
			res.Rejected = append(res.Rejected, Rejection{Job: d.Job, Reason: "internal error: resource index inconsistent"})
			continue
		}
		s.storeJob(pos, j)
	}
	return res
}

// legacyDecision is d as an Allocate from before CPUs and memory were
// consumable is applied: its placements hold GPUs only.
func legacyDecision(d Decision) Decision {
	out := Decision{Job: d.Job, Nodes: make([]Placement, len(d.Nodes)), Elastic: d.Elastic}
	for i, p := range d.Nodes {
		out.Nodes[i] = Placement{Node: p.Node, GPUs: p.GPUs}
	}
	return out
}

// checkDecision returns why d cannot be applied now, or "". The checks run
// cheapest first; the GPU check is the FSM's own guard against
// double-booking (DESIGN invariant 1), whatever placement believed, and
// with consumable the CPU and memory checks guard against over-committing
// those.
func (s *State) checkDecision(j *cluster.Job, d Decision, gates *Gates, consumable bool) string {
	if j == nil {
		return "unknown job"
	}
	if j.State != cluster.JobPending {
		return fmt.Sprintf("job is %s, want PENDING", j.State)
	}
	if j.Incarnation == math.MaxUint64 {
		return "job incarnations exhausted"
	}
	if why := gates.Admit(j); why != "" {
		return "job waits: " + why
	}
	req := j.Spec.Request
	if len(d.Nodes) < req.Nodes || len(d.Nodes) > max(req.Nodes, req.NodesMax) {
		if req.NodesMax > req.Nodes {
			return fmt.Sprintf("decision names %d nodes, job requests %d to %d", len(d.Nodes), req.Nodes, req.NodesMax)
		}
		return fmt.Sprintf("decision names %d nodes, job requests %d", len(d.Nodes), req.Nodes)
	}
	if d.Elastic && !j.Spec.Elastic() {
		return "elastic allocation for a job that is not elastic (wants -N MIN-MAX, and a batch script from sbatch, not salloc)"
	}
	if why := checkTasks(req, d, consumable); why != "" {
		return why
	}
	return s.checkPlacements(req, d, consumable)
}

// checkTasks returns why d's per-node rank counts (Placement.Tasks)
// cannot lay out a job asking req, or "": none, or, in a consumable
// allocation of a job with NTasks that is not elastic, at least one on
// every node and NTasks in all.
func checkTasks(req cluster.Request, d Decision, consumable bool) string {
	sum, with := 0, 0
	for _, p := range d.Nodes {
		if p.Tasks != 0 {
			with++
		}
		if p.Tasks < 0 || p.Tasks > cluster.MaxTasksPerNode {
			return fmt.Sprintf("node %q: %d tasks, want 1 to %d", p.Node, p.Tasks, cluster.MaxTasksPerNode)
		}
		sum += p.Tasks
	}
	switch {
	case with == 0:
		return ""
	case !consumable || req.NTasks == 0 || d.Elastic:
		return "tasks per node: only for a job with ntasks, not elastic, in a consumable allocation"
	case with != len(d.Nodes):
		return fmt.Sprintf("tasks per node on %d of %d nodes, want all or none", with, len(d.Nodes))
	case sum != req.NTasks:
		return fmt.Sprintf("tasks per node sum to %d, job has %d", sum, req.NTasks)
	}
	return ""
}

// checkPlacements returns why d's placements cannot be given to a job
// asking req now, or "": distinct nodes, up and not draining, in the
// job's partition and node set, with the GPUs (and, with consumable, the
// CPUs and memory) it asks for free there.
func (s *State) checkPlacements(req cluster.Request, d Decision, consumable bool) string {
	seen := make(map[string]struct{}, len(d.Nodes))
	for _, p := range d.Nodes {
		if _, dup := seen[p.Node]; dup {
			return fmt.Sprintf("node %.64q named twice", p.Node)
		}
		seen[p.Node] = struct{}{}
	}
	for k, p := range d.Nodes {
		n := s.node(p.Node)
		switch {
		case n == nil:
			return fmt.Sprintf("unknown node %.64q", p.Node)
		case n.Status != cluster.NodeUp:
			return fmt.Sprintf("node %q is %s", p.Node, n.Status)
		case n.Drain:
			return fmt.Sprintf("node %q is draining", p.Node)
		case req.Exclusive && len(p.GPUs) != len(n.GPUs):
			return fmt.Sprintf("node %q: %d gpus, exclusive job takes all %d", p.Node, len(p.GPUs), len(n.GPUs))
		case !req.Exclusive && len(p.GPUs) != req.GPUsPerNode:
			return fmt.Sprintf("node %q: %d gpus, job requests %d per node", p.Node, len(p.GPUs), req.GPUsPerNode)
		}
		used := make([]bool, len(n.GPUs))
		for _, g := range p.GPUs {
			if g < 0 || g >= len(n.GPUs) {
				return fmt.Sprintf("node %q: gpu %d out of range, node has %d", p.Node, g, len(n.GPUs))
			}
			if used[g] {
				return fmt.Sprintf("node %q: gpu %d named twice", p.Node, g)
			}
			used[g] = true
			if other, held := s.res.holder(p.Node, g); held {
				return fmt.Sprintf("node %q: gpu %d held by job %d", p.Node, g, other)
			}
		}
		if consumable {
			if why := s.checkCPUsMem(req, n, p, k, len(d.Nodes)); why != "" {
				return why
			}
		}
	}
	if pt, ok := s.policy.Partition(req.Partition); ok {
		for _, p := range d.Nodes {
			if !pt.Has(p.Node) {
				return fmt.Sprintf("node %q: not in the job's partition %s", p.Node, pt.Name)
			}
		}
	}
	return s.checkNodeSet(req, d)
}

// reportTarget finds the NodeAlloc a task report names. It returns
// done=true with a zero Result when the report is stale (an older
// incarnation) and must be acknowledged without change.
//
// A report names the node's entry by its Join: a node an elastic job lost
// and took back has one entry per time it joined, and a report of tasks
// that ran under an earlier one (its exit, sent by its agent after a
// restart) goes to that entry, released already, never to the new one.
func (s *State) reportTarget(what string, id cluster.JobID, inc uint64, node string, join int) (pos int, j *cluster.Job, i int, res Result, done bool) {
	pos, j = s.job(id)
	if j == nil {
		return 0, nil, 0, Result{Err: fmt.Errorf("%s job %d: %w", what, id, ErrUnknownJob)}, true
	}
	if inc < j.Incarnation {
		return 0, nil, 0, Result{}, true
	}
	if inc > j.Incarnation {
		return 0, nil, 0, Result{Err: fmt.Errorf("%s job %d incarnation %d: %w: job is at incarnation %d",
			what, id, inc, ErrInvalid, j.Incarnation)}, true
	}
	if i = j.Alloc.FindJoin(node, join); i < 0 {
		return 0, nil, 0, Result{Err: fmt.Errorf("%s job %d incarnation %d: %w: node %.64q (join %d) not in its allocation",
			what, id, inc, ErrInvalid, node, join)}, true
	}
	return pos, j, i, Result{}, false
}

func (s *State) taskStarted(index uint64, c TaskStarted) Result {
	pos, old, i, res, done := s.reportTarget("task started:", c.Job, c.Incarnation, c.Node, c.Join)
	if done {
		return res
	}
	if old.Alloc.Nodes[i].State != cluster.TaskAssigned {
		return Result{} // already running, exited or lost: a retried report
	}
	j := old.Clone()
	j.Alloc.Nodes[i].State = cluster.TaskRunning
	j.ModifyIndex = index
	s.storeJob(pos, j)
	return Result{}
}

func (s *State) recordGPUUsage(index uint64, c RecordGPUUsage) Result {
	u := c.Usage
	if u.Samples < 0 || !(u.MeanUtil >= 0 && u.MeanUtil <= 1) || !(u.PeakUtil >= 0 && u.PeakUtil <= 1) {
		return Result{Err: fmt.Errorf("gpu usage of job %d: %w: samples %d, utilization %v/%v (want 0 to 1)",
			c.Job, ErrInvalid, u.Samples, u.MeanUtil, u.PeakUtil)}
	}
	pos, old, i, res, done := s.reportTarget("gpu usage:", c.Job, c.Incarnation, c.Node, c.Join)
	if done {
		return res
	}
	j := old.Clone()
	j.Alloc.Nodes[i].GPUUsage = &u
	j.ModifyIndex = index
	s.storeJob(pos, j)
	return Result{}
}

func (s *State) taskExited(index uint64, c TaskExited) Result {
	pos, old, i, res, done := s.reportTarget("task exited:", c.Job, c.Incarnation, c.Node, c.Join)
	if done {
		return res
	}
	if old.Alloc.Nodes[i].Released {
		return Result{} // a retried report: acknowledge it
	}
	j := old.Clone()
	na := &j.Alloc.Nodes[i]
	na.State = cluster.TaskExited
	na.ExitCode = c.ExitCode
	na.Released = true
	if c.Usage != nil {
		u := *c.Usage
		na.Usage = &u
	}
	if na.Removed {
		// A node the job gave up: its tasks were stopped, how they
		// ended says nothing of the job.
		removedExited(j, i, c.Time)
	} else if j.State == cluster.JobRunning {
		// A batch job's script runs on its first node only; its other
		// nodes run nothing of their own and hold their GPUs for steps.
		batch := j.Spec.Batch != nil
		lost := c.Cause == CauseFenced || c.Cause == CauseLost
		switch {
		case lost && shrinks(j, i):
			na.State = cluster.TaskLost
			shrink(j, i, c.Time)
		case lost && survivesLoss(j, i):
			na.State = cluster.TaskLost // the job goes on without it
			endIfAllDone(j, c.Time)
		case lost:
			lostNode(j, c.Time)
		case batch && i != 0:
			// Such a node reports only once the job has left RUNNING, or
			// when fenced; whatever else it says just releases it.
		case c.Cause == CauseTimeout:
			j.State = cluster.JobTimeout
		case c.Cause == CauseOOM:
			j.State = cluster.JobOutOfMemory
			j.ExitCode = c.ExitCode
		case c.ExitCode != 0 || c.Cause == CauseStartFail:
			j.State = cluster.JobFailed
			j.ExitCode = c.ExitCode
		case batch || allExitedZero(j.Alloc) || j.Alloc.Elastic && liveExitedZero(j.Alloc):
			// The script's exit decides a batch job, whatever its other
			// nodes still hold (they release when they report).
			j.State = cluster.JobCompleted
		case j.Spec.NoKill && lostOne(j.Alloc):
			// A --no-kill job that lost a node ends once the others have.
			endIfAllDone(j, c.Time)
		}
		if j.State.Terminal() {
			j.EndTime = c.Time
		}
	}
	s.storeReleased(index, pos, j, i, c.Time)
	return Result{}
}

// lostOne reports whether one of a's nodes was lost.
func lostOne(a *cluster.Allocation) bool {
	for _, n := range a.Nodes {
		if n.State == cluster.TaskLost {
			return true
		}
	}
	return false
}

func allExitedZero(a *cluster.Allocation) bool {
	for _, n := range a.Nodes {
		if n.State != cluster.TaskExited || n.ExitCode != 0 {
			return false
		}
	}
	return true
}

func (s *State) setReasons(index uint64, c SetReasons) Result {
	for _, r := range c.Reasons {
		pos, old := s.job(r.Job)
		if old == nil || old.State != cluster.JobPending || old.Reason == r.Reason {
			continue
		}
		j := old.Clone()
		j.Reason = r.Reason
		j.ModifyIndex = index
		s.storeJob(pos, j)
	}
	return Result{}
}

func (s *State) setDrain(index uint64, c SetDrain) Result {
	old := s.node(c.Node)
	if old == nil {
		return Result{Err: fmt.Errorf("drain node %.64q: %w", c.Node, ErrUnknownNode)}
	}
	if len(c.Reason) > MaxDrainReasonBytes {
		return Result{Err: fmt.Errorf("drain node %s: %w: reason of %d bytes, want at most %d",
			c.Node, ErrInvalid, len(c.Reason), MaxDrainReasonBytes)}
	}
	reason := c.Reason
	if !c.Drain {
		reason = ""
	}
	if old.Drain == c.Drain && old.DrainReason == reason {
		return Result{}
	}
	n := old.Clone()
	n.Drain, n.DrainReason = c.Drain, reason
	n.ModifyIndex = index
	canonNode(n)
	s.putNode(n)
	return Result{}
}

// storeJob replaces the record at pos with j, a fresh clone (or a copy
// whose pointers it may reassign).
func (s *State) storeJob(pos int, j *cluster.Job) {
	if j.State != cluster.JobRunning {
		j.Preempt = nil // a preemption ends with the run it was for
	}
	canonJob(j)
	s.live.change(s.jobs[pos], j)
	s.jobs[pos] = j
}

// liveJobs counts pending and running jobs.
type liveJobs struct {
	total int
	byUID map[int]int
}

// change accounts for a job record replaced by another (nil: none).
func (l *liveJobs) change(old, new *cluster.Job) {
	if old != nil && !old.State.Terminal() {
		l.total--
		if l.byUID[old.Spec.UID]--; l.byUID[old.Spec.UID] <= 0 {
			delete(l.byUID, old.Spec.UID)
		}
	}
	if new != nil && !new.State.Terminal() {
		if l.byUID == nil {
			l.byUID = map[int]int{}
		}
		l.total++
		l.byUID[new.Spec.UID]++
	}
}

// canonJob stores empty slices as nil, so a record encodes the same
// whether it was built from a command, cloned, or decoded from a snapshot
// (msgpack decodes an empty array as a non-nil slice, Clone the reverse).
//
// It writes only where a slice is empty but not nil, so it leaves alone
// (and may be run on a copy sharing) an Alloc or Batch already canonical:
// stored records are shared with views.
func canonJob(j *cluster.Job) {
	nilEmpty(&j.Spec.Command)
	nilEmpty(&j.Spec.Env)
	nilEmpty(&j.Spec.Request.NodeList)
	nilEmpty(&j.Spec.Request.Exclude)
	if j.Spec.Batch != nil {
		nilEmpty(&j.Spec.Batch.Args)
	}
	if j.Alloc != nil {
		nilEmpty(&j.Alloc.Nodes)
		for i := range j.Alloc.Nodes {
			nilEmpty(&j.Alloc.Nodes[i].GPUs)
		}
	}
	nilEmpty(&j.Steps)
	nilEmpty(&j.Signals)
	for i := range j.Steps {
		st := &j.Steps[i]
		nilEmpty(&st.Spec.Command)
		nilEmpty(&st.Spec.Env)
		nilEmpty(&st.Spec.NodeList)
		nilEmpty(&st.Nodes)
	}
}

// nilEmpty sets *p to nil if it is empty and not nil already.
func nilEmpty[S ~[]E, E any](p *S) {
	if *p != nil && len(*p) == 0 {
		*p = nil
	}
}

// canonNode is canonJob for nodes.
func canonNode(n *cluster.Node) {
	n.GPUs = nilIfEmpty(n.GPUs)
	n.Features = nilIfEmpty(n.Features)
	for i := range n.GPUs {
		n.GPUs[i].NVLinkPeers = nilIfEmpty(n.GPUs[i].NVLinkPeers)
	}
}

func nilIfEmpty[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

// checkCPUsMem returns why placement p, node k of an allocation of nodes
// nodes, cannot take its CPUs and memory of node n for a job asking req,
// or "": exactly the CPUs req takes there (CPUsAt; none on a node that
// reports none), in range, distinct and free, and exactly the memory req
// takes (MemAt), within what the node has left.
func (s *State) checkCPUsMem(req cluster.Request, n *cluster.Node, p Placement, k, nodes int) string {
	want, wantMem := 0, req.MemAt(n, k, nodes)
	if p.Tasks > 0 {
		wantMem = req.MemFor(n, p.Tasks)
	}
	if n.CPUs > 0 {
		want = req.CPUsAt(n, k, nodes)
		if p.Tasks > 0 {
			want = req.CPUsFor(n, p.Tasks)
		}
	}
	if len(p.CPUs) != want {
		return fmt.Sprintf("node %q: %d cpus, job takes %d there", p.Node, len(p.CPUs), want)
	}
	used := make(map[int]bool, len(p.CPUs))
	for _, c := range p.CPUs {
		switch {
		case c < 0 || c >= n.CPUs:
			return fmt.Sprintf("node %q: cpu %d out of range, node has %d", p.Node, c, n.CPUs)
		case used[c]:
			return fmt.Sprintf("node %q: cpu %d named twice", p.Node, c)
		}
		used[c] = true
		if other, held := s.res.cpuHolder(p.Node, c); held {
			return fmt.Sprintf("node %q: cpu %d held by job %d", p.Node, c, other)
		}
	}
	if p.MemMiB != wantMem {
		return fmt.Sprintf("node %q: %d MiB of memory, job takes %d there", p.Node, p.MemMiB, wantMem)
	}
	if held := s.res.mem[p.Node]; !plantedDoubleBook && p.MemMiB > 0 && (held > n.MemoryMiB || p.MemMiB > n.MemoryMiB-held) {
		return fmt.Sprintf("node %q: %d MiB of memory asked, %d of %d free", p.Node, p.MemMiB, n.MemoryMiB-min(held, n.MemoryMiB), n.MemoryMiB)
	}
	return ""
}
