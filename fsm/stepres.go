package fsm

import (
	"errors"
	"fmt"

	"github.com/shoal-sched/shoal/cluster"
)

// Refusals of an Exclusive step that asks for more than its job holds
// (GPUs, CPUs), with Slurm's words, which srun prints: it could never
// start, so srun does not wait.
var (
	//lint:ignore ST1005 Slurm's srun prints these words, and scripts match them
	ErrStepGres = errors.New("Invalid generic resource (gres) specification")
	//lint:ignore ST1005 Slurm's srun prints these words, and scripts match them
	ErrStepCPUs = errors.New("More processors requested than permitted")
)

// stepHolds decides what an Exclusive step sp of job j holds on each of
// its nodes: step node i runs tasks[i] tasks on the allocation's node
// at[i], and takes there the lowest GPUs (of the job's NodeAlloc.GPUs)
// and CPUs (of its NodeAlloc.CPUs) that no live Exclusive step of j
// holds. It needs, per node, GPUsPerTask per task, or its share of
// sp.GPUs, or GPUsPerNode, or else every GPU the job holds there (Slurm gives a step that
// asks for none all of the job's); and, with Exact or CPUsPerTask, CPUsPerTask (the
// step's, else the job's, else 1) per task, or else every CPU the job
// holds there. A node whose allocation records no CPUs (made before CPUs
// were consumable) counts none. More than the job holds is refused
// (ErrInvalid, with Slurm's words), more than is free now is ErrStepBusy.
// It is pure.
func stepHolds(j *cluster.Job, sp cluster.StepSpec, at, tasks []int) (gpus, cpus [][]int, err error) {
	heldG := map[string]map[int]bool{}
	heldC := map[string]map[int]bool{}
	for _, st := range j.Steps {
		for _, sn := range st.Nodes {
			if !taskLive(sn.State) {
				continue
			}
			mark(heldG, sn.Node, sn.GPUs)
			mark(heldC, sn.Node, sn.CPUs)
		}
	}
	cpt := max(1, j.Spec.Request.CPUsPerTask)
	if sp.CPUsPerTask > 0 {
		cpt = sp.CPUsPerTask
	}
	busy := false
	gpus, cpus = make([][]int, len(at)), make([][]int, len(at))
	for i, ai := range at {
		na := j.Alloc.Nodes[ai]
		ng := len(na.GPUs)
		switch n := len(at); {
		case sp.GPUsPerTask > 0:
			ng = sp.GPUsPerTask * tasks[i]
		case sp.GPUs > 0:
			ng = sp.GPUs / n
			if i < sp.GPUs%n {
				ng++
			}
		case sp.GPUsPerNode > 0:
			ng = sp.GPUsPerNode
		}
		if ng > len(na.GPUs) {
			return nil, nil, fmt.Errorf("%w: gpus: %d on node %.64q, the job holds %d there", ErrStepGres, ng, na.Node, len(na.GPUs))
		}
		nc := len(na.CPUs)
		if (sp.Exact || sp.CPUsPerTask > 0) && nc > 0 {
			nc = cpt * tasks[i]
		}
		if nc > len(na.CPUs) {
			return nil, nil, fmt.Errorf("%w: cpus: %d on node %.64q, the job holds %d there", ErrStepCPUs, nc, na.Node, len(na.CPUs))
		}
		var ok bool
		if gpus[i], ok = takeFree(na.GPUs, heldG[na.Node], ng); !ok {
			busy = true
		}
		if cpus[i], ok = takeFree(na.CPUs, heldC[na.Node], nc); !ok {
			busy = true
		}
	}
	if busy {
		return nil, nil, ErrStepBusy
	}
	return gpus, cpus, nil
}

func mark(held map[string]map[int]bool, node string, ids []int) {
	if len(ids) == 0 {
		return
	}
	if held[node] == nil {
		held[node] = map[int]bool{}
	}
	for _, id := range ids {
		held[node][id] = true
	}
}

// takeFree is the first n of ids (ascending) not in held; false if fewer
// are free. n 0 takes nothing (nil).
func takeFree(ids []int, held map[int]bool, n int) ([]int, bool) {
	if n == 0 {
		return nil, true
	}
	out := make([]int, 0, n)
	for _, id := range ids {
		if len(out) < n && !held[id] {
			out = append(out, id)
		}
	}
	return out, len(out) == n
}
