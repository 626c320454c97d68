package placement

import (
	"maps"
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

// TestSpreadRanks: with Options.Spread a job with -n starts with its ranks
// laid out from the CPUs its nodes have free, as Slurm sizes a job's CPUs
// (slurm/testdata/layout_golden.txt, the hold cases): -n 5 on 2 idle
// 16-CPU nodes runs 4 and 1; where another job holds 14 CPUs of the
// first, 2 and 3 (a node with room for one task will do, as in Slurm);
// of the second, 4 and 1; each node holds its ranks' CPUs. Without
// Spread the request's layout (3 and 2) stands.
func TestSpreadRanks(t *testing.T) {
	nodes := func() []*cluster.Node {
		ns := mkLeaf("n", 2, 0, "l1", "p1")
		for _, n := range ns {
			n.CPUs = 16
		}
		return ns
	}
	job := func(ntasks int, dist string) *cluster.Job {
		j := pending(1, 2, 0)
		j.Spec.Request.NTasks, j.Spec.Request.TasksPerNode, j.Spec.Request.Distribution = ntasks, (ntasks+1)/2, dist
		return j
	}
	holder := func(node string, cpus int) []*cluster.Job {
		j := holding(90, cluster.JobRunning, false, node, []int{})
		j.Alloc.Nodes[0].CPUs = seq(0, cpus-1)
		return []*cluster.Job{j}
	}
	for _, tc := range []struct {
		name    string
		running []*cluster.Job
		job     *cluster.Job
		spread  bool
		want    map[string]int // tasks (and CPUs) per node
		tasks   bool           // Assignment.Tasks set
	}{
		{"idle", nil, job(5, ""), true, map[string]int{"n1": 4, "n2": 1}, true},
		{"first busy", holder("n1", 14), job(5, ""), true, map[string]int{"n1": 2, "n2": 3}, true},
		{"second busy", holder("n2", 14), job(5, ""), true, map[string]int{"n1": 4, "n2": 1}, true},
		{"cyclic", holder("n1", 14), job(6, "cyclic"), true, map[string]int{"n1": 2, "n2": 4}, true},
		{"not asked", nil, job(5, ""), false, map[string]int{"n1": 3, "n2": 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := PlaceWith(NewView(nodes(), tc.running), []*cluster.Job{tc.job}, now, Options{Spread: tc.spread})
			if err != nil || len(res.Decisions) != 1 {
				t.Fatalf("PlaceWith() = %+v, %v; want the job placed", res, err)
			}
			got := map[string]int{}
			for _, a := range res.Decisions[0].Nodes {
				got[a.Node] = len(a.CPUs)
				if tc.tasks != (a.Tasks > 0) || tc.tasks && a.Tasks != len(a.CPUs) {
					t.Errorf("node %s: Tasks %d with %d CPUs; want tasks set %v, one CPU each", a.Node, a.Tasks, len(a.CPUs), tc.tasks)
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("CPUs per node %v; want %v", got, tc.want)
			}
		})
	}
	// An exclusive job takes whole nodes, its ranks dealt over all their
	// CPUs: 3 and 2, as Slurm (layout_golden.txt: -n5 -N2 --exclusive).
	j := job(5, "")
	j.Spec.Request.Exclusive = true
	res, _ := PlaceWith(NewView(nodes(), nil), []*cluster.Job{j}, now, Options{Spread: true})
	if len(res.Decisions) != 1 {
		t.Fatalf("exclusive: %+v; want placed", res)
	}
	for k, a := range res.Decisions[0].Nodes {
		if want := []int{3, 2}[k]; a.Tasks != want || len(a.CPUs) != 16 {
			t.Errorf("exclusive: node %d runs %d tasks on %d CPUs; want %d on all 16", k, a.Tasks, len(a.CPUs), want)
		}
	}
}
