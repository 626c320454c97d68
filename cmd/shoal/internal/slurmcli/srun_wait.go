package slurmcli

import (
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// srun -W/--wait: once the step's first task has ended, srun waits the
// given time and then ends the others, as Slurm's srun does. It belongs
// to srun: a node's supervisor sees only its node's ranks, srun sees the
// whole step. What srun sees of a task's end is its node's: a node's
// tasks are reported together, when the last of them ends (a rank that
// fails ends its node's others at once, as always). So the wait counts
// from the first node whose tasks have all ended; with one task per node
// (a launcher per node, client and server on two nodes) that is the
// first task's end.

// waitPlan is what srun -W does at a poll of the step.
type waitPlan struct {
	// FirstEnd is when srun first saw a node's tasks ended (zero: not
	// yet); pass it back at the next poll.
	FirstEnd time.Time
	// Terminate: the wait is over and tasks still run: end the step,
	// after printing Lines (Slurm's messages, without "srun: ").
	Terminate bool
	Lines     []string
}

// planWait decides srun -W for a poll at now of the step job.step
// (nodes: each node's tasks), given the wait (above 0) and firstEnd, what
// the last plan returned.
func planWait(wait time.Duration, firstEnd time.Time, job uint64, step int, nodes []api.StepNodeTasks, now time.Time) waitPlan {
	var running, exited, abnormal []int
	for _, n := range nodes {
		switch cluster.TaskState(n.State) {
		case cluster.TaskAssigned, cluster.TaskRunning:
			running = append(running, n.Ranks...)
		case cluster.TaskExited:
			if n.ExitCode == 0 {
				exited = append(exited, n.Ranks...)
			} else {
				abnormal = append(abnormal, n.Ranks...)
			}
		default: // lost: neither running nor exited by its own hand
			abnormal = append(abnormal, n.Ranks...)
		}
	}
	p := waitPlan{FirstEnd: firstEnd}
	if len(exited)+len(abnormal) == 0 || len(running) == 0 || wait <= 0 {
		return p
	}
	if p.FirstEnd.IsZero() {
		p.FirstEnd = now
	}
	if now.Sub(p.FirstEnd) < wait {
		return p
	}
	p.Terminate = true
	p.Lines = append(p.Lines, fmt.Sprintf("First task exited %ds ago", int64(wait/time.Second)))
	id := fmt.Sprintf("StepId=%d.%d", job, step)
	for _, g := range []struct {
		ranks []int
		what  string
	}{{running, "running"}, {exited, "exited"}, {abnormal, "exited abnormally"}} {
		if len(g.ranks) > 0 {
			p.Lines = append(p.Lines, fmt.Sprintf("%s %s: %s", id, taskRanges(g.ranks), g.what))
		}
	}
	p.Lines = append(p.Lines, "launch/slurm: _step_signal: Terminating "+id)
	return p
}

// taskRanges writes ranks as Slurm's srun lists tasks: "task 0",
// "tasks 1-2,4" (runs as the cpulist form writes them).
func taskRanges(ranks []int) string {
	r := slices.Clone(ranks)
	slices.Sort(r)
	r = slices.Compact(r)
	if len(r) == 1 {
		return "task " + cluster.CPUList(r)
	}
	return "tasks " + cluster.CPUList(r)
}

// recordedLayout is an allocation of nodes nodes carrying the job's
// recorded rank counts (api.Job.NodeTasks), for cluster.Request's
// TaskCountsIn and RankIn.
func recordedLayout(j api.Job, nodes int) cluster.Allocation {
	a := cluster.Allocation{Nodes: make([]cluster.NodeAlloc, nodes)}
	if len(j.NodeTasks) == nodes {
		for i, t := range j.NodeTasks {
			a.Nodes[i].Tasks = t
		}
	}
	return a
}

// jobNodeTasks is a running job's own tasks on each node, as planWait
// takes a step's: srun outside an allocation runs its command as the job's
// tasks (Slurm's step 0).
func jobNodeTasks(j api.Job) []api.StepNodeTasks {
	r := cluster.Request{Nodes: len(j.Tasks), TasksPerNode: j.TasksPerNode, NTasks: j.NTasks, Distribution: j.Distribution, Pack: j.Pack}
	alloc := recordedLayout(j, len(j.Tasks))
	counts := r.TaskCountsIn(alloc)
	out := make([]api.StepNodeTasks, len(j.Tasks))
	for k, t := range j.Tasks {
		out[k] = api.StepNodeTasks{Node: t.Node, State: t.State, ExitCode: t.ExitCode}
		if k < len(counts) {
			out[k].Ranks = make([]int, counts[k])
			for l := range out[k].Ranks {
				out[k].Ranks[l] = r.RankIn(alloc, k, l)
			}
		}
	}
	return out
}
