package slurmcli

import (
	"fmt"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// srun --no-kill (-k) for a step: when a node of a step fails (the
// leader declares it down: its share of the step is "lost"), Slurm's
// controller tells srun, which prints "Node failure on NODE" and, unless
// the step was started with --no-kill, terminates the whole step
// (kill_step_on_node, then srun's "Force Terminated"); with --no-kill the
// step's tasks on the other nodes run on and the step ends when they do.
// Only a --no-kill job outlives a node it loses; any other job ends
// NODE_FAIL, and its steps with it, either way.

// nodeFailPlan is what srun does about its step's lost nodes at a poll.
type nodeFailPlan struct {
	// Lines are Slurm's messages, without "srun: ", in order.
	Lines []string
	// Told are the lost nodes Lines tell of: pass them back (told) so
	// each is told once.
	Told []string
	// Terminate: end the step (without --no-kill, on its first lost
	// node).
	Terminate bool
}

// planNodeFail decides it for step job.step (nodes: each node's share),
// given --no-kill and the nodes already told of. It is pure.
func planNodeFail(noKill bool, job uint64, step int, nodes []api.StepNodeTasks, told map[string]bool) nodeFailPlan {
	var p nodeFailPlan
	for _, n := range nodes {
		if n.State != string(cluster.TaskLost) || told[n.Node] {
			continue
		}
		p.Lines = append(p.Lines, "error: Node failure on "+n.Node)
		p.Told = append(p.Told, n.Node)
	}
	if len(p.Told) > 0 && !noKill && len(told) == 0 {
		p.Terminate = true
		p.Lines = append(p.Lines, fmt.Sprintf("Force Terminated StepId=%d.%d", job, step))
	}
	return p
}
