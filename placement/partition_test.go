package placement

import (
	"slices"
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
