package placement

import (
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

func TestShortage(t *testing.T) {
	node := func(name string) *cluster.Node {
		n := mkNode(name, 4, "l1", "p1")
		n.CPUs, n.MemoryMiB = 16, 1000
		return n
	}
	busy := holding(90, cluster.JobRunning, false, "a", []int{0, 1})
	busy.Alloc.Nodes[0].CPUs = seq(0, 13)
	busy.Alloc.Nodes[0].MemMiB = 200
	hog := holding(91, cluster.JobRunning, false, "b", []int{0})
	hog.Alloc.Nodes[0].CPUs = seq(0, 3)
	hog.Alloc.Nodes[0].MemMiB = 900
	v := NewView([]*cluster.Node{node("a"), node("b")}, []*cluster.Job{busy, hog})
	job := func(gpus, cpus int, mem uint64) *cluster.Job {
		j := pending(1, 1, gpus)
		j.Spec.Request.CPUsPerTask, j.Spec.Request.MemPerNodeMiB = cpus, mem
		return j
	}
	for _, tc := range []struct {
		name string
		j    *cluster.Job
		want string
	}{
		{"gpus", job(4, 1, 0), "GPUs: 0 of the 2 nodes it may use have 4 free GPUs, it needs 1"},
		{"cpus", job(2, 13, 0), "CPUs: 0 of the 2 nodes with 2 free GPUs have 13 free CPUs, it needs 1"},
		{"memory", job(2, 8, 900), "memory: 0 of the 1 nodes with its GPUs and CPUs free have 900 MiB free, it needs 1"},
		{"none short", job(1, 1, 100), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Shortage(v, tc.j); got != tc.want {
				t.Errorf("Shortage() = %q; want %q", got, tc.want)
			}
		})
	}
}
