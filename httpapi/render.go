package httpapi

import (
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// restarts is how many times a job was requeued: each start after the
// first, counting a requeued job waiting for its next start.
func restarts(j *cluster.Job) uint64 {
	n := j.Incarnation
	if j.State != cluster.JobPending && n > 0 {
		n-- // the current run is not a restart of itself
	}
	return n
}

// JobOf renders a job for the API (the README's output contract).
func JobOf(j *cluster.Job) api.Job {
	out := api.Job{
		ID: uint64(j.ID), Name: j.Spec.Name, User: j.Spec.User, State: string(j.State), Reason: j.Reason,
		Nodes: []string{}, GPUs: map[string][]int{}, ExitCode: j.ExitCode,
		SubmitTime: api.FormatTime(j.SubmitTime), StartTime: api.FormatTime(j.StartTime), EndTime: api.FormatTime(j.EndTime),
		Command: j.Spec.Command, WorkDir: j.Spec.WorkDir,
		NumNodes: j.Spec.Request.Nodes, GPUsPerNode: j.Spec.Request.GPUsPerNode,
		TasksPerNode: j.Spec.Request.TasksPerNode, CPUsPerTask: j.Spec.Request.CPUsPerTask,
		TimeLimitS: int64(j.Spec.Request.TimeLimit / time.Second), Incarnation: j.Incarnation,
		Requeue: j.Spec.Requeue, RestartCount: restarts(j),
		CPUsPerNode: j.Spec.Request.CPUsPerNode(), CPUsPerGPU: j.Spec.Request.CPUsPerGPU,
		MemPerNodeMiB: j.Spec.Request.MemPerNode(), MemWholeNode: j.Spec.Request.WholeMem(),
		Batch: j.Spec.Batch != nil, Steps: []api.Step{}, Signal: j.Spec.Signal,
		Tasks:   []api.Task{},
		Account: j.Spec.Account, QoS: j.Spec.QoS, Nice: j.Spec.Nice,
	}
	out.UID, out.GID, out.AdminPriority = j.Spec.UID, j.Spec.GID, j.AdminPriority
	out.NodesMax, out.Comment, out.SubmitHost = j.Spec.Request.NodesMax, j.Spec.Comment, j.Spec.SubmitHost
	batchHost := ""
	if j.Alloc != nil && len(j.Alloc.Nodes) > 0 {
		batchHost = j.Alloc.Nodes[0].Node
	}
	out.StdOut, out.StdErr = j.BatchOutput(batchHost)
	out.StdIn = j.BatchInput(batchHost)
	out.Container = j.Spec.Container
	out.StdinNodes = j.StdinNodes(-1)
	out.ArrayTaskID, out.JobIDString = -1, j.ID.String()
	if a := j.Array; a != nil {
		out.ArrayJobID, out.ArrayTaskID, out.ArrayThrottle, out.JobIDString = uint64(a.JobID), a.TaskID, a.Throttle, a.Name()
	}
	out.Dependency, out.Hold, out.Partition = j.Spec.Dependency.String(), j.Hold, j.Spec.Request.Partition
	out.Begin = api.FormatTime(j.Spec.Begin)
	out.Deadline = api.FormatTime(j.Spec.Deadline)
	out.ReqNodeList, out.ExcNodeList = j.Spec.Request.NodeList, j.Spec.Request.Exclude
	out.Features, out.Exclusive = j.Spec.Request.Constraint, j.Spec.Request.Exclusive
	out.NTasks, out.Distribution, out.Pack = j.Spec.Request.NTasks, j.Spec.Request.Distribution, j.Spec.Request.Pack
	if j.Alloc != nil && j.Spec.Request.NTasks > 0 {
		for _, n := range j.Alloc.Nodes {
			if n.Tasks < 1 {
				out.NodeTasks = nil
				break
			}
			out.NodeTasks = append(out.NodeTasks, n.Tasks)
		}
	}
	for _, st := range j.Steps {
		as := api.Step{ID: st.ID, Name: st.Spec.Name, State: string(st.State), ExitCode: st.ExitCode,
			Nodes: []string{}, Command: st.Spec.Command,
			StartTime: api.FormatTime(st.StartTime), EndTime: api.FormatTime(st.EndTime),
			StdinNodes: j.StdinNodes(st.ID)}
		for i, n := range st.Nodes {
			as.Nodes = append(as.Nodes, n.Node)
			as.NTasks += n.Tasks
			nt := api.StepNodeTasks{Node: n.Node, Ranks: make([]int, n.Tasks), State: string(n.State), ExitCode: n.ExitCode,
				GPUs: n.GPUs, CPUs: cluster.CPUList(n.CPUs)}
			for l := range nt.Ranks {
				nt.Ranks[l] = st.Spec.RankAt(i, l)
			}
			as.NodeTasks = append(as.NodeTasks, nt)
			if n.Usage != nil {
				if as.Usage == nil {
					as.Usage = map[string]cluster.Usage{}
				}
				as.Usage[n.Node] = *n.Usage
			}
		}
		out.Steps = append(out.Steps, as)
	}
	if j.Alloc != nil {
		// What it has now, within a -N MIN-MAX range: an elastic job
		// without the nodes it lost.
		out.NumNodes = len(j.Alloc.LiveNodes())
		out.MasterPort = j.Alloc.MasterPort
		out.Elastic = j.Alloc.Elastic
		for _, r := range j.Alloc.Resizes {
			out.Resizes = append(out.Resizes, api.Resize{Time: api.FormatTime(r.Time), Cause: r.Cause, Node: r.Node, NumNodes: r.Nodes})
		}
		for i, n := range j.Alloc.Nodes {
			gpus := append([]int{}, n.GPUs...)
			if j.Alloc.Live(i) {
				out.Nodes = append(out.Nodes, n.Node)
				out.GPUs[n.Node] = gpus
			}
			out.Tasks = append(out.Tasks, api.Task{Node: n.Node, GPUs: gpus, State: string(n.State), ExitCode: n.ExitCode,
				CPUs: cluster.CPUList(n.CPUs), MemMiB: n.MemMiB})
			if n.Usage != nil {
				u := *n.Usage
				out.Tasks[len(out.Tasks)-1].Usage = &u
			}
			if n.GPUUsage != nil {
				g := *n.GPUUsage
				out.Tasks[len(out.Tasks)-1].GPUUsage = &g
			}
		}
	}
	return out
}

// NodeState is the Slurm-style state sinfo would show.
func NodeState(n *cluster.Node, free int, busy bool) string {
	switch {
	case n.Status != cluster.NodeUp:
		return "DOWN"
	case n.Drain:
		return "DRAIN"
	case !busy:
		return "IDLE"
	case free == 0:
		return "ALLOCATED"
	default:
		return "MIXED"
	}
}

// GPUModel is the model of a node's GPUs, "" without any.
func GPUModel(n *cluster.Node) string {
	if len(n.GPUs) == 0 {
		return ""
	}
	return n.GPUs[0].Model
}

// RoleOr is name's raft role in roles, "none" when it has none.
func RoleOr(roles map[string]string, name string) string {
	if r, ok := roles[name]; ok {
		return r
	}
	return "none"
}

// NodesOf renders the nodes of a view as sinfo and shoal nodes show them.
func NodesOf(rec NodeRecords) []api.Node {
	out := []api.Node{}
	busy := map[string]bool{}
	cpus, mem := map[string]int{}, map[string]uint64{}
	for _, j := range rec.Jobs {
		if j.Alloc == nil {
			continue
		}
		for _, n := range j.Alloc.Nodes {
			if !n.Released {
				busy[n.Node] = true
				cpus[n.Node] += len(n.CPUs)
				mem[n.Node] += n.MemMiB
			}
		}
	}
	for _, n := range rec.Nodes {
		free := rec.FreeGPUs[n.Name]
		out = append(out, api.Node{
			Name: n.Name, State: NodeState(n, free, busy[n.Name]), GPUs: len(n.GPUs), GPUsFree: free,
			GPUModel: GPUModel(n), CPUs: n.CPUs, MemoryMiB: n.MemoryMiB,
			Switch: n.Topology.Switch, SwitchParent: n.Topology.SwitchParent, Block: n.Topology.Block,
			Raft: RoleOr(rec.Roles, n.Name), Address: n.APIAddr, Reason: n.DrainReason, Version: n.Version,
			Features: n.Features, CPUsAlloc: cpus[n.Name], MemAllocMiB: mem[n.Name],
			Sockets: n.Sockets, CoresPerSocket: n.CoresPerSocket, ThreadsPerCore: n.ThreadsPerCore,
		})
	}
	return out
}
