package placement

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// TestPlacePartitions: a job runs only on its partition's nodes, in every
// policy; a partition too small for it gives BadConstraints; a job in a
// partition of all nodes, or in none, is not restricted; and a blocked
// job's reservation stays in its partition.
func TestPlacePartitions(t *testing.T) {
	nodes := cat(mkLeaf("a", 2, 4, "a", "s0"), mkLeaf("b", 2, 4, "b", "s0"))
	parts := []cluster.Partition{
		{Name: "all"},
		{Name: "bee", Nodes: []string{"b1", "b2"}},
		{Name: "one", Nodes: []string{"a2"}},
	}
	inPart := func(id cluster.JobID, nodes, gpus int, part string) *cluster.Job {
		j := pending(id, nodes, gpus)
		j.Spec.Request.Partition = part
		return j
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, pol := range Policies() {
		t.Run(string(pol), func(t *testing.T) {
			v := NewView(nodes, nil).WithPartitions(parts)
			queue := []*cluster.Job{
				inPart(1, 2, 2, "bee"), // b1, b2
				inPart(2, 2, 4, "one"), // never: one node
				inPart(3, 1, 4, "one"), // a2
				inPart(4, 1, 4, "all"), // a1 (the only node left whole)
				inPart(5, 1, 2, "bee"), // b1 or b2 (2 GPUs left each)
			}
			res, err := PlaceWith(v, queue, now, Options{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			got := map[cluster.JobID][]string{}
			for _, d := range res.Decisions {
				for _, a := range d.Nodes {
					got[d.Job] = append(got[d.Job], a.Node)
				}
			}
			for id, allowed := range map[cluster.JobID][]string{1: {"b1", "b2"}, 3: {"a2"}, 4: {"a1", "a2", "b1", "b2"}, 5: {"b1", "b2"}} {
				if len(got[id]) == 0 {
					t.Errorf("job %d not placed (reason %q)", id, res.Reasons[id])
				}
				for _, n := range got[id] {
					if !slices.Contains(allowed, n) {
						t.Errorf("job %d on %s, outside its partition %v", id, n, allowed)
					}
				}
			}
			if _, placed := got[2]; placed || res.Reasons[2] != ReasonBadConstraints {
				t.Errorf("job 2 (2 nodes in a 1-node partition): placed %v, reason %q; want BadConstraints", got[2], res.Reasons[2])
			}
		})
	}

	// The reservation of a blocked partition job is in its partition.
	busy := holding(9, cluster.JobRunning, false, "b1", seq(0, 3), "b2", seq(0, 3))
	busy.StartTime, busy.Spec.Request.TimeLimit = now, time.Hour
	v := NewView(nodes, []*cluster.Job{busy}).WithPartitions(parts)
	res, err := PlaceWith(v, []*cluster.Job{inPart(1, 2, 4, "bee")}, now, Options{Policy: PolicyShoal})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Decisions) != 0 || res.Reservation == nil {
		t.Fatalf("decisions %+v, reservation %+v; want none now and a reservation", res.Decisions, res.Reservation)
	}
	for _, a := range res.Reservation.Nodes {
		if a.Node != "b1" && a.Node != "b2" {
			t.Errorf("reservation on %s, outside partition bee", a.Node)
		}
	}
	if !res.Reservation.Start.Equal(now.Add(time.Hour)) {
		t.Errorf("reservation at %s; want when job 9 ends", res.Reservation.Start)
	}
}

// TestPlaceMemory: a job asking for more memory per node than some nodes
// have runs only on those that have it, in every policy; one no node
// could hold is BadConstraints, and Check refuses it at submit.
func TestPlaceMemory(t *testing.T) {
	small := mkLeaf("s", 2, 4, "a", "s0")
	big := mkLeaf("b", 2, 4, "b", "s0")
	for _, n := range small {
		n.MemoryMiB = 64 << 10
	}
	for _, n := range big {
		n.MemoryMiB = 256 << 10
	}
	nodes := cat(small, big)
	mem := func(id cluster.JobID, nodes int, mib uint64) *cluster.Job {
		j := pending(id, nodes, 1)
		j.Spec.Request.MemPerNodeMiB = mib
		return j
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, pol := range Policies() {
		res, err := PlaceWith(NewView(nodes, nil), []*cluster.Job{mem(1, 2, 128<<10), mem(2, 1, 512<<10), mem(3, 1, 1<<10)}, now, Options{Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range res.Decisions {
			for _, a := range d.Nodes {
				if d.Job == 1 && a.Node[0] != 'b' {
					t.Errorf("%s: job 1 (128 GiB) on %s (64 GiB)", pol, a.Node)
				}
			}
		}
		if len(res.Decisions) != 2 || res.Reasons[2] != ReasonBadConstraints {
			t.Errorf("%s: decisions %+v, reason of job 2 %q; want jobs 1 and 3 placed, job 2 BadConstraints", pol, res.Decisions, res.Reasons[2])
		}
	}
	if err := Check(nodes, mem(9, 3, 128<<10).Spec.Request); err == nil || !strings.Contains(err.Error(), "mem 131072 MiB") {
		t.Errorf("Check of 3 nodes with 128 GiB: %v; want refused naming the memory", err)
	}
}

// TestPlaceCPUs: a job's ranks ask for tasks_per_node x cpus_per_task
// CPUs on each node; nodes with fewer are not used, and Check refuses a
// request no node could hold.
func TestPlaceCPUs(t *testing.T) {
	small := mkNode("s1", 2, "a", "s0")
	small.CPUs = 4
	big := mkNode("b1", 2, "a", "s0")
	big.CPUs = 32
	j := pending(1, 1, 1)
	j.Spec.Request.TasksPerNode, j.Spec.Request.CPUsPerTask = 2, 4 // 8 CPUs
	res, err := PlaceWith(NewView([]*cluster.Node{small, big}, nil), []*cluster.Job{j}, time.Now(), Options{Policy: PolicyShoal})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Decisions) != 1 || res.Decisions[0].Nodes[0].Node != "b1" {
		t.Fatalf("decisions %+v; want job 1 on b1 (32 CPUs), not s1 (4)", res.Decisions)
	}
	j.Spec.Request.CPUsPerTask = 64
	if err := Check([]*cluster.Node{small, big}, j.Spec.Request); err == nil || !strings.Contains(err.Error(), "128 CPUs") {
		t.Errorf("Check of 128 CPUs a node: %v; want refused naming them", err)
	}
}
