package placement

import (
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

// TestCPUBinding: a job's CPUs on a node come from the sockets of its
// GPUs first (a GPU's NUMA node is its socket), lowest positions first,
// so with two threads per core the first threads of whole cores come
// before second ones; then from other sockets when those are short.
func TestCPUBinding(t *testing.T) {
	// 2 sockets x 2 cores x 2 threads: socket 0 holds positions 0, 1, 4,
	// 5 and socket 1 holds 2, 3, 6, 7. GPUs 0-1 on socket 0, 2-3 on 1.
	node := func() *cluster.Node {
		n := mkNode("n1", 4, "l1", "p1")
		n.CPUs, n.Sockets, n.CoresPerSocket, n.ThreadsPerCore, n.MemoryMiB = 8, 2, 2, 2, 1000
		for g := range n.GPUs {
			n.GPUs[g].NUMA = g / 2
		}
		return n
	}
	job := func(id cluster.JobID, gpus, cpus int) *cluster.Job {
		j := pending(id, 1, gpus)
		j.Spec.Request.CPUsPerTask = cpus
		return j
	}
	holder := func(gpus, cpus []int) *cluster.Job {
		j := holding(90, cluster.JobRunning, false, "n1", gpus)
		j.Alloc.Nodes[0].CPUs = cpus
		return j
	}
	for _, tc := range []struct {
		name     string
		running  []*cluster.Job
		job      *cluster.Job
		gpus     []int
		wantCPUs []int
	}{
		{"two GPUs on socket 0", nil, job(1, 2, 2), []int{0, 1}, []int{0, 1}},
		{"socket 0 whole", nil, job(1, 2, 4), []int{0, 1}, []int{0, 1, 4, 5}},
		{"past socket 0", nil, job(1, 2, 6), []int{0, 1}, []int{0, 1, 2, 3, 4, 5}},
		{"GPUs on socket 1", []*cluster.Job{holder([]int{0, 1}, []int{0})}, job(1, 1, 2), []int{2}, []int{2, 3}},
		{"socket 1 short", []*cluster.Job{holder([]int{0, 1}, []int{2, 3, 6})}, job(1, 2, 2), []int{2, 3}, []int{0, 7}},
		{"no GPUs: lowest", nil, job(1, 0, 3), nil, []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Place(NewView([]*cluster.Node{node()}, tc.running), []*cluster.Job{tc.job}, now)
			if len(res.Decisions) != 1 {
				t.Fatalf("Place() = %+v; want the job placed", res)
			}
			a := res.Decisions[0].Nodes[0]
			if !slices.Equal(a.GPUs, tc.gpus) || !slices.Equal(a.CPUs, tc.wantCPUs) {
				t.Errorf("Place() gives GPUs %v, CPUs %v; want GPUs %v, CPUs %v", a.GPUs, a.CPUs, tc.gpus, tc.wantCPUs)
			}
		})
	}
}
