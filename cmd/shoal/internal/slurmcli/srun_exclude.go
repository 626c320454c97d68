//lint:file-ignore ST1005 srun's messages are Slurm's words, capitalised as srun prints them

package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

// errStepNodes is Slurm's reason when a step cannot have the nodes it
// asks for (ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE): srun -x leaves
// too few, or -w names a node -x excludes.
var errStepNodes = errors.New("Requested node configuration is not available")

// excludeNodes is srun -x for a step sp (stepSpec's, before the FSM
// fills its defaults): the step runs on the job's nodes that are up
// (jobNodes, in the allocation's rank order) but those exclude names, as
// Slurm's step picks its nodes; the first -N of them with -N, at most
// one a task with -n alone. sp comes back with those nodes as its node
// list. With -w too the named nodes are the step's, and one that -x
// excludes is refused, as Slurm refuses it. It is pure.
func excludeNodes(sp cluster.StepSpec, jobNodes, exclude []string) (cluster.StepSpec, error) {
	if len(exclude) == 0 {
		return sp, nil
	}
	if len(sp.NodeList) > 0 {
		for _, n := range sp.NodeList {
			if slices.Contains(exclude, n) {
				return sp, fmt.Errorf("%w (-w %s is also excluded by -x)", errStepNodes, n)
			}
		}
		return sp, nil
	}
	var rest []string
	for _, n := range jobNodes {
		if !slices.Contains(exclude, n) {
			rest = append(rest, n)
		}
	}
	want := len(rest)
	switch {
	case sp.Nodes > 0:
		want = sp.Nodes
	case sp.NTasks > 0:
		want = min(want, sp.NTasks)
	}
	if want == 0 || want > len(rest) {
		return sp, fmt.Errorf("%w (-x %s leaves %d of the job's %d nodes, the step needs %d)",
			errStepNodes, slurm.CompressHostlist(exclude), len(rest), len(jobNodes), max(want, 1))
	}
	sp.NodeList, sp.Nodes = rest[:want], want
	return sp, nil
}

// upNodes are job j's nodes a step may run on: its allocation's, but
// those it lost (a --no-kill job's failed node).
func upNodes(j api.Job) []string {
	var out []string
	for _, n := range j.Nodes {
		lost := slices.ContainsFunc(j.Tasks, func(t api.Task) bool {
			return t.Node == n && t.State == string(cluster.TaskLost)
		})
		if !lost {
			out = append(out, n)
		}
	}
	return out
}

// stepExclude applies srun's -x to the step spec of job: gather the
// job's nodes, decide (excludeNodes). A refusal is Slurm's line, which
// srun prints after "srun: error: ".
func stepExclude(ctx context.Context, c *api.Client, job uint64, opts slurm.Options, spec cluster.StepSpec) (cluster.StepSpec, error) {
	_, exclude, err := request.HostLists(opts)
	if err != nil || len(exclude) == 0 {
		return spec, err
	}
	j, err := readJob(ctx, c, job)
	if err != nil {
		return spec, fmt.Errorf("-x: job %d: %w", job, err)
	}
	if spec, err = excludeNodes(spec, upNodes(j), exclude); err != nil {
		return spec, fmt.Errorf("Unable to create step for job %d: %w", job, err)
	}
	return spec, nil
}

// stepNoKill is what srun --no-kill records in the step: only in an
// elastic batch job, whose steps the state cancels when they lose a node
// (fsm's settleSteps); in any other job srun itself decides to end the
// step or not (planNodeFail), and a step without the field is accepted
// by servers of every protocol.
func stepNoKill(ctx context.Context, c *api.Client, job uint64, opts slurm.Options) (bool, error) {
	if !opts.NoKill {
		return false, nil
	}
	j, err := readJob(ctx, c, job)
	if err != nil {
		return false, fmt.Errorf("--no-kill: job %d: %w", job, err)
	}
	return j.Elastic && j.Batch, nil
}
