package fsm

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// maxWorkDirBytes bounds a step's working directory (Linux's PATH_MAX).
const maxWorkDirBytes = 4096

func (s *State) startStep(index uint64, c StartStep) Result {
	if p, ok, err := s.seenRequest("start step", ridStep, c.Job, c.RequestID); err != nil || ok {
		return Result{JobID: p.Job, StepID: p.Step, Duplicate: ok, Err: err}
	}
	pos, old := s.job(c.Job)
	if old == nil {
		return Result{Err: fmt.Errorf("start step: job %d: %w", c.Job, ErrUnknownJob)}
	}
	what := fmt.Sprintf("start step: job %d incarnation %d", c.Job, c.Incarnation)
	switch {
	case old.State.Terminal():
		return Result{Err: fmt.Errorf("%s: %w (state %s)", what, ErrJobFinished, old.State)}
	case old.State != cluster.JobRunning:
		return Result{Err: fmt.Errorf("%s: %w: job is %s, want RUNNING", what, ErrInvalid, old.State)}
	case c.Incarnation != old.Incarnation:
		return Result{Err: fmt.Errorf("%s: %w: job is at incarnation %d", what, ErrInvalid, old.Incarnation)}
	case len(old.Steps) >= cluster.MaxStepsPerJob:
		return Result{Err: fmt.Errorf("%s: %w: steps: %d started, want at most %d per incarnation",
			what, ErrInvalid, len(old.Steps), cluster.MaxStepsPerJob)}
	}
	sp, err := stepSpec(c.Spec, old, false)
	if err != nil {
		return Result{Err: fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)}
	}
	st := cluster.Step{
		ID:          len(old.Steps),
		Incarnation: old.Incarnation,
		Spec:        sp,
		State:       cluster.StepRunning,
		Nodes:       make([]cluster.StepNode, sp.Nodes),
		StartTime:   c.Time,
	}
	at := stepAllocNodes(sp, old)
	counts := make([]int, len(at))
	for i, ai := range at {
		na := old.Alloc.Nodes[ai]
		if na.Released {
			// Its tasks are dead and its GPUs may already be another job's.
			return Result{Err: fmt.Errorf("%s: %w: node %.64q (rank %d) has released its share of the allocation (%s)",
				what, ErrInvalid, na.Node, i, na.State)}
		}
		tasks, first := sp.Tasks(i)
		counts[i] = tasks
		st.Nodes[i] = cluster.StepNode{Node: na.Node, FirstRank: first, Tasks: tasks, State: cluster.TaskAssigned}
	}
	if sp.Exclusive {
		gpus, cpus, err := stepHolds(old, sp, at, counts)
		switch {
		case errors.Is(err, ErrStepBusy):
			return Result{Err: fmt.Errorf("%s: %w", what, err)}
		case err != nil:
			return Result{Err: fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)}
		}
		for i := range st.Nodes {
			st.Nodes[i].GPUs, st.Nodes[i].CPUs = gpus[i], cpus[i]
		}
	}
	j := *old // shares everything but Steps, which append copies (cap == len)
	j.Steps = append(old.Steps[:len(old.Steps):len(old.Steps)], st)
	j.ModifyIndex = index
	s.storeJob(pos, &j)
	if c.RequestID != "" {
		s.rids.add(ridPair{RequestID: c.RequestID, Job: c.Job, Kind: ridStep, Step: st.ID, Incarnation: st.Incarnation})
	}
	return Result{StepID: st.ID}
}

// stepSpec fills sp's defaults from job j (Nodes 0: every node of the
// allocation; TasksPerNode 0: the job's) and checks it against the
// allocation, naming the first bad field. Restore runs it on stored specs
// (stored), which must come back unchanged: as a stored step may have
// started before its elastic allocation shrank, those are checked against
// every node the allocation had.
func stepSpec(sp cluster.StepSpec, j *cluster.Job, stored bool) (cluster.StepSpec, error) {
	sp.Caps = nil // the FSM's to set, below
	switch {
	case len(sp.Command) == 0 || sp.Command[0] == "":
		return sp, fmt.Errorf("command: empty, want a program and its arguments")
	case len(sp.Command) > cluster.MaxCommandArgs:
		return sp, fmt.Errorf("command: %d arguments, want at most %d", len(sp.Command), cluster.MaxCommandArgs)
	case len(sp.Name) > cluster.MaxJobNameBytes:
		return sp, fmt.Errorf("name: %d bytes, want at most %d", len(sp.Name), cluster.MaxJobNameBytes)
	case len(sp.WorkDir) > maxWorkDirBytes:
		return sp, fmt.Errorf("work_dir: %d bytes, want at most %d", len(sp.WorkDir), maxWorkDirBytes)
	case len(sp.Env) > cluster.MaxEnvVars:
		return sp, fmt.Errorf("env: %d variables, want at most %d", len(sp.Env), cluster.MaxEnvVars)
	}
	n := 0
	for _, a := range sp.Command {
		n += len(a)
	}
	if n > cluster.MaxCommandBytes {
		return sp, fmt.Errorf("command: %d bytes, want at most %d", n, cluster.MaxCommandBytes)
	}
	for i, kv := range sp.Env {
		if !cluster.ValidEnvPair(kv) {
			return sp, fmt.Errorf("env[%d] %.64q: want KEY=VALUE", i, kv)
		}
	}
	if err := cluster.ValidateStdin(sp.Stdin); err != nil {
		return sp, err
	}
	if sig := sp.Signal; sig != nil {
		if err := sig.Validate(); err != nil {
			return sp, err
		}
		if sig.BatchOnly {
			return sp, fmt.Errorf("signal.batch_only: a step has no batch shell")
		}
	}
	if err := cluster.ValidateContainer(sp.Container); err != nil {
		return sp, err
	}
	// An elastic allocation's steps run on the nodes it has now.
	nodes := len(j.Alloc.LiveNodes())
	if stored {
		nodes = len(j.Alloc.Nodes)
	}
	if len(sp.NodeList) > 0 {
		if sp.Nodes != 0 && sp.Nodes != len(sp.NodeList) {
			return sp, fmt.Errorf("nodes %d: the node list names %d nodes", sp.Nodes, len(sp.NodeList))
		}
		if len(sp.NodeList) > nodes {
			return sp, fmt.Errorf("node_list: %d nodes, the allocation has %d", len(sp.NodeList), nodes)
		}
		at := make([]int, 0, len(sp.NodeList))
		for k, name := range sp.NodeList {
			i := j.Alloc.Find(name)
			switch {
			case i < 0 || !stored && !j.Alloc.Live(i):
				return sp, fmt.Errorf("node_list[%d] %.64q: not a node of the allocation", k, name)
			case slices.Contains(at, i):
				return sp, fmt.Errorf("node_list[%d] %.64q: named twice", k, name)
			}
			at = append(at, i)
		}
		// In the allocation's rank order, whatever order srun was given.
		slices.Sort(at)
		sp.NodeList = make([]string, len(at))
		for k, i := range at {
			sp.NodeList[k] = j.Alloc.Nodes[i].Node
		}
		sp.Nodes = len(sp.NodeList)
	}
	if sp.Nodes == 0 {
		sp.Nodes = nodes
	}
	if sp.Nodes < 1 || sp.Nodes > nodes {
		return sp, fmt.Errorf("nodes %d: the allocation has %d nodes, want 0 (all of them) to %d", sp.Nodes, nodes, nodes)
	}
	req := j.Spec.Request
	if k := sp.NTasksPerGPU; k != 0 {
		switch {
		case k < 0 || k > cluster.MaxTasksPerNode:
			return sp, fmt.Errorf("ntasks_per_gpu %d: want 1 to %d", k, cluster.MaxTasksPerNode)
		case sp.TasksPerNode != 0:
			return sp, fmt.Errorf("ntasks_per_gpu and tasks_per_node are mutually exclusive")
		case sp.GPUsPerTask != 0:
			return sp, fmt.Errorf("ntasks_per_gpu and gpus_per_task are mutually exclusive")
		case req.GPUsPerNode == 0:
			return sp, fmt.Errorf("ntasks_per_gpu %d: the job holds no GPUs", k)
		case sp.NTasks == 0:
			sp.NTasks = k * req.GPUsPerNode * sp.Nodes
		}
	}
	if sp.NTasks == 0 && sp.TasksPerNode == 0 && req.NTasks > 0 && sp.Nodes == nodes {
		// srun with no task count on the whole allocation of a job with
		// -n runs the job's ranks, laid out as the job's.
		sp.NTasks = req.NTasks
		if sp.Distribution == "" {
			sp.Distribution = req.Distribution
		}
	}
	if sp.NTasks == 0 && sp.Distribution != "" {
		// srun -m alone: the step's tasks per node on each of its nodes,
		// laid out by the distribution.
		tpn := sp.TasksPerNode
		if tpn == 0 {
			tpn = req.TasksPerNode
		}
		sp.NTasks, sp.TasksPerNode = tpn*sp.Nodes, 0
	}
	if sp.NTasks != 0 {
		// srun -n: laid out over the step's nodes (in blocks by default),
		// fewer nodes than tasks.
		switch {
		case sp.NTasks < 0 || sp.NTasks > nodes*cluster.MaxTasksPerNode:
			return sp, fmt.Errorf("ntasks %d: want 1 to %d", sp.NTasks, nodes*cluster.MaxTasksPerNode)
		case sp.NTasks < sp.Nodes && len(sp.NodeList) > 0:
			return sp, fmt.Errorf("ntasks %d: fewer than the %d nodes of the node list", sp.NTasks, sp.Nodes)
		case sp.NTasks < sp.Nodes:
			sp.Nodes = sp.NTasks
		}
		if _, err := cluster.LayoutCounts(sp.NTasks, sp.Nodes, sp.Distribution); err != nil {
			return sp, err
		}
		switch {
		case sp.Dealt && !j.Alloc.Elastic:
			// The step's tasks are dealt over the job's CPUs on its
			// nodes, as Slurm's srun deals them; an allocation that
			// recorded no CPUs (from before they were consumable) is
			// laid out evenly.
			cpt := max(1, req.CPUsPerTask)
			for _, ai := range stepAllocNodes(sp, j) {
				cpus := len(j.Alloc.Nodes[ai].CPUs)
				if cpus == 0 {
					sp.Caps = nil
					break
				}
				sp.Caps = append(sp.Caps, cpus/cpt)
			}
		case req.Pack && sp.InBlocks() && !j.Alloc.Elastic:
			// Steps from before protocol 5: a packed job's step fills
			// its nodes' shares of the job's ranks.
			jc := req.TaskCounts(len(j.Alloc.Nodes))
			for _, ai := range stepAllocNodes(sp, j) {
				sp.Caps = append(sp.Caps, jc[ai])
			}
		}
		counts := sp.Counts()
		most := 0
		for i, c := range counts {
			if c == 0 {
				return sp, fmt.Errorf("ntasks %d by distribution %q on %d nodes: node %d would run no task", sp.NTasks, sp.Distribution, sp.Nodes, i)
			}
			most = max(most, c)
		}
		if sp.TasksPerNode != 0 && sp.TasksPerNode != most {
			return sp, fmt.Errorf("tasks_per_node %d with ntasks %d on %d nodes: want %d or 0", sp.TasksPerNode, sp.NTasks, sp.Nodes, most)
		}
		sp.TasksPerNode = most
	}
	if sp.TasksPerNode == 0 {
		sp.TasksPerNode = j.Spec.Request.TasksPerNode
	}
	if sp.TasksPerNode < 1 || sp.TasksPerNode > cluster.MaxTasksPerNode {
		return sp, fmt.Errorf("tasks_per_node %d: want 0 (the job's %d) or 1 to %d",
			sp.TasksPerNode, j.Spec.Request.TasksPerNode, cluster.MaxTasksPerNode)
	}
	switch {
	case sp.GPUs < 0 || sp.GPUs > cluster.MaxTasksPerNode*nodes:
		return sp, fmt.Errorf("gpus %d: want 0 to %d", sp.GPUs, cluster.MaxTasksPerNode*nodes)
	case sp.CPUsPerTask < 0 || sp.CPUsPerTask > cluster.MaxTasksPerNode:
		return sp, fmt.Errorf("cpus_per_task %d: want 0 to %d", sp.CPUsPerTask, cluster.MaxTasksPerNode)
	case sp.GPUsPerNode < 0 || sp.GPUsPerNode > cluster.MaxTasksPerNode:
		return sp, fmt.Errorf("gpus_per_node %d: want 0 to %d", sp.GPUsPerNode, cluster.MaxTasksPerNode)
	case !sp.Exclusive && (sp.GPUs != 0 || sp.GPUsPerNode != 0 || sp.Exact || sp.CPUsPerTask != 0):
		return sp, fmt.Errorf("gpus, gpus_per_node, exact and cpus_per_task: only for an exclusive step")
	}
	// Each node holds GPUsPerNode GPUs for the job (Allocate checks it);
	// comparing GPUsPerTask first keeps the product from overflowing.
	gpus := j.Spec.Request.GPUsPerNode
	if sp.GPUsPerTask < 0 || sp.GPUsPerTask > gpus || sp.GPUsPerTask*sp.TasksPerNode > gpus {
		return sp, fmt.Errorf("gpus_per_task %d x tasks_per_node %d: each node holds %d gpus for the job",
			sp.GPUsPerTask, sp.TasksPerNode, gpus)
	}
	return sp, nil
}

// stepAllocNodes returns, for a step spec with its defaults filled in,
// the allocation indices of its nodes in step order: the first Nodes of
// the allocation (of an elastic one, of the nodes it has now), or those
// its NodeList names.
func stepAllocNodes(sp cluster.StepSpec, j *cluster.Job) []int {
	out := make([]int, 0, sp.Nodes)
	if len(sp.NodeList) == 0 {
		for i := range j.Alloc.Nodes {
			if len(out) < sp.Nodes && j.Alloc.Live(i) {
				out = append(out, i)
			}
		}
		return out
	}
	for _, name := range sp.NodeList {
		out = append(out, j.Alloc.Find(name))
	}
	return out
}

func (s *State) stepExited(index uint64, c StepExited) Result {
	pos, old := s.job(c.Job)
	if old == nil {
		return Result{Err: fmt.Errorf("step exited: job %d: %w", c.Job, ErrUnknownJob)}
	}
	what := fmt.Sprintf("step exited: job %d incarnation %d step %d", c.Job, c.Incarnation, c.Step)
	switch {
	case c.Incarnation < old.Incarnation:
		return Result{} // an older incarnation's step: acknowledge it
	case c.Incarnation > old.Incarnation:
		return Result{Err: fmt.Errorf("%s: %w: job is at incarnation %d", what, ErrInvalid, old.Incarnation)}
	case old.State == cluster.JobPending && old.Incarnation > 0:
		// The incarnation was requeued and its steps forgotten, but it did
		// run them: a late report, acknowledged.
		return Result{}
	case c.Step < 0 || c.Step >= len(old.Steps):
		return Result{Err: fmt.Errorf("%s: %w: the incarnation has %d steps", what, ErrUnknownStep, len(old.Steps))}
	}
	k := slices.IndexFunc(old.Steps[c.Step].Nodes, func(sn cluster.StepNode) bool { return sn.Node == c.Node })
	if k < 0 {
		return Result{Err: fmt.Errorf("%s: %w: node %.64q does not run the step", what, ErrInvalid, c.Node)}
	}
	if !taskLive(old.Steps[c.Step].Nodes[k].State) {
		return Result{} // a retried report: acknowledge it
	}
	j := *old // shares everything but Steps, and the changed step's Nodes
	j.Steps = slices.Clone(old.Steps)
	st := &j.Steps[c.Step]
	st.Nodes = slices.Clone(st.Nodes)
	sn := &st.Nodes[k]
	sn.State = cluster.TaskExited
	if c.Cause == CauseFenced || c.Cause == CauseLost {
		sn.State = cluster.TaskLost
	}
	sn.ExitCode = c.ExitCode
	sn.OOM = c.Cause == CauseOOM
	if c.Usage != nil {
		u := *c.Usage
		sn.Usage = &u
	}
	endStep(st, c.Time)
	j.ModifyIndex = index
	s.storeJob(pos, &j)
	return Result{}
}

func (s *State) cancelStep(index uint64, c CancelStep) Result {
	pos, old := s.job(c.Job)
	if old == nil {
		return Result{Err: fmt.Errorf("cancel step: job %d: %w", c.Job, ErrUnknownJob)}
	}
	if c.Step < 0 || c.Step >= len(old.Steps) {
		return Result{Err: fmt.Errorf("cancel step %d.%d: %w: the job's incarnation %d has %d steps",
			c.Job, c.Step, ErrUnknownStep, old.Incarnation, len(old.Steps))}
	}
	if st := old.Steps[c.Step]; st.State != cluster.StepRunning {
		return Result{Err: fmt.Errorf("cancel step %d.%d: %w (state %s)", c.Job, c.Step, ErrStepFinished, st.State)}
	}
	// A RUNNING step has a live node (endStep), so it cannot end here: its
	// nodes see CANCELLED, stop its tasks and report them.
	j := *old
	j.Steps = slices.Clone(old.Steps)
	j.Steps[c.Step].State = cluster.StepCancelled
	j.ModifyIndex = index
	s.storeJob(pos, &j)
	return Result{}
}

// taskLive reports whether a node's share of a step may still have tasks
// alive.
func taskLive(t cluster.TaskState) bool {
	return t == cluster.TaskAssigned || t == cluster.TaskRunning
}

// endStep ends st if none of its nodes is live any more: CANCELLED stays
// CANCELLED, every node exited 0 makes COMPLETED, anything else FAILED;
// ExitCode is the largest node exit code, as srun returns it. Call it
// only when a node of st just stopped being live.
func endStep(st *cluster.Step, at time.Time) {
	completed, oom := true, false
	worst := 0
	for i, sn := range st.Nodes {
		if taskLive(sn.State) {
			return
		}
		oom = oom || sn.OOM
		if i == 0 || sn.ExitCode > worst {
			worst = sn.ExitCode
		}
		if sn.State != cluster.TaskExited || sn.ExitCode != 0 {
			completed = false
		}
	}
	switch {
	case st.State == cluster.StepCancelled:
	case oom:
		st.State = cluster.StepOutOfMemory
	case completed:
		st.State = cluster.StepCompleted
	default:
		st.State = cluster.StepFailed
	}
	st.ExitCode = worst
	st.EndTime = at
}

// settleSteps brings j's steps in line with a change to the job or its
// allocation (j is a deep clone the caller owns). A job that is no longer
// RUNNING cancels its RUNNING steps: their nodes stop them because the
// step, and the job, are not RUNNING. A step node whose NodeAlloc is
// released has no live tasks (the agent stops every task of the job on a
// node before it reports, and a node declared down has fenced itself), so
// it is lost; a step whose last live node that was ends, and an elastic
// batch job's step that lost one is cancelled (unless srun --no-kill). The
// job's NodeAllocs hold its GPUs and CPUs in the cluster (DESIGN
// invariant 1); an Exclusive step's live nodes hold some of those within
// the job (StepNode.GPUs and CPUs), no two the same (validateSteps), and
// free them as they stop being live.
func settleSteps(j *cluster.Job, at time.Time) {
	for k := range j.Steps {
		st := &j.Steps[k]
		if j.State != cluster.JobRunning && st.State == cluster.StepRunning {
			st.State = cluster.StepCancelled
		}
		lost := false
		for i := range st.Nodes {
			sn := &st.Nodes[i]
			ai := j.Alloc.Find(sn.Node)
			if taskLive(sn.State) && (ai < 0 || j.Alloc.Nodes[ai].Released) {
				sn.State = cluster.TaskLost
				lost = true
			}
		}
		if lost && st.State == cluster.StepRunning && j.Alloc.Elastic && j.Spec.Batch != nil && !st.Spec.NoKill {
			// An elastic batch job's step that loses a node is killed,
			// as Slurm kills it (srun without --no-kill): its tasks on
			// the other nodes stop, and the script's srun learns it
			// ended. Other jobs' steps (whose replicas may be older)
			// run on with the nodes left, and srun ends them itself
			// unless --no-kill (slurmcli's planNodeFail).
			st.State = cluster.StepCancelled
		}
		if lost {
			endStep(st, at)
		}
	}
}

// validateSteps checks what Apply guarantees of a job's steps (see
// validateJob); j's allocation is already checked.
func validateSteps(j *cluster.Job) error {
	if len(j.Steps) == 0 {
		return nil
	}
	if len(j.Steps) > cluster.MaxStepsPerJob {
		return fmt.Errorf("job %d: %d steps, want at most %d", j.ID, len(j.Steps), cluster.MaxStepsPerJob)
	}
	if j.Alloc == nil || j.State == cluster.JobPending {
		return fmt.Errorf("job %d: steps in a %s job without a running incarnation", j.ID, j.State)
	}
	// What the live nodes of Exclusive steps hold: no GPU or CPU twice
	// (DESIGN invariant 1 inside a job), each one the job's.
	held := map[string]int{}
	for k := range j.Steps {
		st := &j.Steps[k]
		what := fmt.Sprintf("job %d: steps[%d]", j.ID, k)
		if st.ID != k {
			return fmt.Errorf("%s: id %d, want %d (ids 0..n-1 in order)", what, st.ID, k)
		}
		if st.Incarnation != j.Incarnation {
			return fmt.Errorf("%s: incarnation %d, want the job's %d", what, st.Incarnation, j.Incarnation)
		}
		sp, err := stepSpec(st.Spec, j, true)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if sp.Nodes != st.Spec.Nodes || sp.TasksPerNode != st.Spec.TasksPerNode || sp.NTasks != st.Spec.NTasks {
			return fmt.Errorf("%s: spec without its defaults filled in", what)
		}
		if len(st.Nodes) != sp.Nodes {
			return fmt.Errorf("%s: %d step nodes, want the spec's %d", what, len(st.Nodes), sp.Nodes)
		}
		live, completed := 0, true
		at := stepAllocNodes(sp, j)
		if j.Alloc.Elastic && len(sp.NodeList) == 0 {
			// The nodes the allocation had when the step started, which
			// it may have lost since: its step nodes, in rank order. A
			// node it lost and took back is found at its latest entry,
			// which may come after nodes that joined meanwhile, so the
			// order is checked only where no node came back.
			rejoined := slices.ContainsFunc(j.Alloc.Nodes, func(na cluster.NodeAlloc) bool { return na.Join > 0 })
			at = at[:0]
			for i, sn := range st.Nodes {
				a := j.Alloc.Find(sn.Node)
				if a < 0 || !rejoined && i > 0 && a <= at[i-1] {
					return fmt.Errorf("%s: nodes[%d]: node %.64q, not the allocation's next node in rank order", what, i, sn.Node)
				}
				at = append(at, a)
			}
		}
		for i, sn := range st.Nodes {
			na := j.Alloc.Nodes[at[i]]
			tasks, first := sp.Tasks(i)
			switch {
			case sn.Node != na.Node:
				return fmt.Errorf("%s: nodes[%d]: node %.64q, want the allocation's rank %d node %.64q", what, i, sn.Node, at[i], na.Node)
			case sn.Tasks != tasks || sn.FirstRank != first:
				return fmt.Errorf("%s: nodes[%d]: tasks %d from rank %d, want %d from rank %d",
					what, i, sn.Tasks, sn.FirstRank, tasks, first)
			case !st.Spec.Exclusive && (len(sn.GPUs) > 0 || len(sn.CPUs) > 0):
				return fmt.Errorf("%s: nodes[%d]: holds gpus %v and cpus %v in a shared step", what, i, sn.GPUs, sn.CPUs)
			case taskLive(sn.State):
				if na.Released {
					return fmt.Errorf("%s: nodes[%d]: %s on a released node", what, i, sn.State)
				}
				if err := holdOnce(held, "gpu", sn.Node, sn.GPUs, na.GPUs); err != nil {
					return fmt.Errorf("%s: nodes[%d]: %w", what, i, err)
				}
				if err := holdOnce(held, "cpu", sn.Node, sn.CPUs, na.CPUs); err != nil {
					return fmt.Errorf("%s: nodes[%d]: %w", what, i, err)
				}
				live++
			case sn.State != cluster.TaskExited && sn.State != cluster.TaskLost:
				return fmt.Errorf("%s: nodes[%d]: task state %.32q: want a known task state", what, i, sn.State)
			}
			if sn.State != cluster.TaskExited || sn.ExitCode != 0 {
				completed = false
			}
		}
		switch st.State {
		case cluster.StepRunning:
			if live == 0 {
				return fmt.Errorf("%s: RUNNING with every node done", what)
			}
			if j.State != cluster.JobRunning {
				return fmt.Errorf("%s: RUNNING in a %s job", what, j.State)
			}
		case cluster.StepCompleted, cluster.StepFailed, cluster.StepOutOfMemory:
			if live > 0 {
				return fmt.Errorf("%s: %s with %d nodes live", what, st.State, live)
			}
			if st.State == cluster.StepCompleted && !completed {
				return fmt.Errorf("%s: COMPLETED but a node did not exit 0", what)
			}
		case cluster.StepCancelled:
		default:
			return fmt.Errorf("%s: state %.32q: want a known step state", what, st.State)
		}
	}
	return nil
}

// holdOnce records that a live step node on node holds ids of kind
// ("gpu" or "cpu"), each of which must be in the job's (of) and held
// by no other live step node (held counts them, keyed by kind, node and
// id).
func holdOnce(held map[string]int, kind, node string, ids, of []int) error {
	for _, id := range ids {
		if !slices.Contains(of, id) {
			return fmt.Errorf("%s %d: not the job's on node %.64q", kind, id, node)
		}
		key := fmt.Sprintf("%s\x00%s\x00%d", kind, node, id)
		if held[key] > 0 {
			return fmt.Errorf("%s %d on node %.64q: held by two running steps", kind, id, node)
		}
		held[key]++
	}
	return nil
}
