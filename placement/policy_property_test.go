package placement

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shoal-sched/shoal/cluster"
	"pgregory.net/rapid"
)

// genBackfill draws a small cluster, jobs holding GPUs (no GPU twice, some
// with time limits, some past them) and a queue with random limits.
func genBackfill(t *rapid.T) (nodes []*cluster.Node, running, queue []*cluster.Job) {
	nodes, _, queue = genCluster(t)
	limits := []time.Duration{0, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour}
	taken := map[string]bool{}
	for id := range rapid.IntRange(0, 5).Draw(t, "running") {
		if len(nodes) == 0 {
			break
		}
		var spec []any
		for range rapid.IntRange(1, 2).Draw(t, "allocNodes") {
			n := rapid.SampledFrom(nodes).Draw(t, "allocNode")
			var gpus []int
			for g := range n.GPUs {
				key := fmt.Sprintf("%s/%d", n.Name, g)
				if !taken[key] && rapid.Bool().Draw(t, "take") {
					taken[key] = true
					gpus = append(gpus, g)
				}
			}
			if !slices.ContainsFunc(spec, func(x any) bool { return x == any(n.Name) }) {
				spec = append(spec, n.Name, gpus)
			}
		}
		j := holding(cluster.JobID(100+id), cluster.JobRunning, false, spec...)
		for k := range j.Alloc.Nodes {
			na := &j.Alloc.Nodes[k]
			n := nodes[slices.IndexFunc(nodes, func(n *cluster.Node) bool { return n.Name == na.Node })]
			for c := range n.CPUs {
				key := fmt.Sprintf("%s/cpu%d", n.Name, c)
				if !taken[key] && rapid.IntRange(0, 3).Draw(t, "takeCPU") == 0 {
					taken[key] = true
					na.CPUs = append(na.CPUs, c)
				}
			}
			na.MemMiB = uint64(rapid.IntRange(0, 2).Draw(t, "takeMem")) * 500
		}
		j.StartTime = now.Add(-time.Duration(rapid.IntRange(0, 6).Draw(t, "age")) * 30 * time.Minute)
		j.Spec.Request.TimeLimit = rapid.SampledFrom(limits).Draw(t, "runLimit")
		running = append(running, j)
	}
	for _, j := range queue {
		j.Spec.Request.TimeLimit = rapid.SampledFrom(limits).Draw(t, "limit")
	}
	return nodes, running, queue
}

// TestPlaceWithProperties checks every policy over random clusters:
// decisions are valid gangs on free GPUs, never double-booked (DESIGN
// invariant 1); each job gets a decision or a reason; fifo never places a
// job behind a blocked one; shoal places exactly what Place places up to
// the first blocked job; and backfill never delays the reservation: its
// GPUs are free at its start once every job that ends by then has ended,
// and the jobs behind it do not change it.
func TestPlaceWithProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes, running, queue := genBackfill(t)
		policy := rapid.SampledFrom(Policies()).Draw(t, "policy")
		v := NewView(nodes, running)
		res, err := PlaceWith(v, queue, now, Options{Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		usable := map[string]*cluster.Node{}
		for _, n := range nodes {
			if _, dup := usable[n.Name]; !dup && n.Schedulable() {
				usable[n.Name] = n
			}
		}
		// busy[node/gpu] = when it is free again (zero: never).
		type until struct {
			end  time.Time
			busy bool
		}
		busy := map[string]until{}
		memHeld := map[string]uint64{}
		for _, j := range running {
			for _, na := range j.Alloc.Nodes {
				memHeld[na.Node] += na.MemMiB
				for _, c := range na.CPUs {
					busy[fmt.Sprintf("%s/cpu%d", na.Node, c)] = until{busy: true}
				}
				for _, g := range na.GPUs {
					end := expectedEnd(j)
					if !end.IsZero() && end.Before(now) {
						end = now
					}
					busy[fmt.Sprintf("%s/%d", na.Node, g)] = until{end: end, busy: true}
				}
			}
		}
		byID := map[cluster.JobID]*cluster.Job{}
		for _, j := range queue {
			if _, dup := byID[j.ID]; !dup {
				byID[j.ID] = j
			}
		}
		var started []*cluster.Job
		for i, d := range res.Decisions {
			j := byID[d.Job]
			if j == nil || (i > 0 && d.Job <= res.Decisions[i-1].Job) {
				t.Fatalf("decision %d for job %d: not in the queue or out of order", i, d.Job)
				return // rapid's Fatalf does not return; staticcheck cannot tell
			}
			req := j.Spec.Request
			if len(d.Nodes) != req.Nodes {
				t.Fatalf("job %d: %d nodes; want %d", d.Job, len(d.Nodes), req.Nodes)
			}
			seen := map[string]bool{}
			for _, a := range d.Nodes {
				if usable[a.Node] == nil || seen[a.Node] || len(a.GPUs) != req.GPUsPerNode {
					t.Fatalf("job %d: assignment %+v: unusable, repeated or wrong GPU count", d.Job, a)
				}
				seen[a.Node] = true
				for _, g := range a.GPUs {
					key := fmt.Sprintf("%s/%d", a.Node, g)
					if g < 0 || g >= len(usable[a.Node].GPUs) || busy[key].busy {
						t.Fatalf("job %d: GPU %s double-booked or out of range", d.Job, key)
					}
					busy[key] = until{end: endsAt(now, req), busy: true}
				}
				for _, c := range a.CPUs {
					key := fmt.Sprintf("%s/cpu%d", a.Node, c)
					if c < 0 || c >= usable[a.Node].CPUs || busy[key].busy {
						t.Fatalf("job %d: CPU %s double-booked or out of range", d.Job, key)
					}
					busy[key] = until{busy: true}
				}
				if memHeld[a.Node] += a.MemMiB; memHeld[a.Node] > usable[a.Node].MemoryMiB && a.MemMiB > 0 {
					t.Fatalf("job %d: node %s memory over-committed: %d MiB held of %d", d.Job, a.Node, memHeld[a.Node], usable[a.Node].MemoryMiB)
				}
			}
			sj := j.Clone()
			sj.StartTime = now
			sj.Alloc = &cluster.Allocation{}
			for _, a := range d.Nodes {
				sj.Alloc.Nodes = append(sj.Alloc.Nodes, cluster.NodeAlloc{Node: a.Node, GPUs: a.GPUs, CPUs: a.CPUs, MemMiB: a.MemMiB})
			}
			started = append(started, sj)
		}
		var blocked cluster.JobID
		for id, why := range res.Reasons {
			if why == cluster.ReasonResources {
				if blocked != 0 {
					t.Fatalf("jobs %d and %d both pend with Resources", blocked, id)
				}
				blocked = id
			}
		}
		for id := range byID {
			_, hasReason := res.Reasons[id]
			placed := slices.ContainsFunc(res.Decisions, func(d Decision) bool { return d.Job == id })
			if placed == hasReason {
				t.Fatalf("job %d: placed %v, reason %q; want exactly one", id, placed, res.Reasons[id])
			}
			if policy == PolicyFIFO && placed && blocked != 0 && id > blocked {
				t.Fatalf("fifo placed job %d behind blocked job %d", id, blocked)
			}
		}
		if policy == PolicyShoal {
			want := Place(v, queue, now)
			got := slices.DeleteFunc(slices.Clone(res.Decisions), func(d Decision) bool { return blocked != 0 && d.Job > blocked })
			want.Decisions = slices.DeleteFunc(want.Decisions, func(d Decision) bool { return blocked != 0 && d.Job > blocked })
			if !gocmp.Equal(want.Decisions, got, cmpopts.EquateEmpty()) {
				t.Fatalf("shoal decisions before the blocked job %v; Place gives %v", got, want.Decisions)
			}
		}
		if r := res.Reservation; r != nil {
			if policy == PolicyFIFO || r.Job != blocked || r.Start.Before(now) {
				t.Fatalf("reservation %+v under %s with job %d blocked", r, policy, blocked)
			}
			req := byID[r.Job].Spec.Request
			if len(r.Nodes) != req.Nodes {
				t.Fatalf("reservation %+v: want %d nodes", r, req.Nodes)
			}
			for _, a := range r.Nodes {
				if usable[a.Node] == nil || len(a.GPUs) != req.GPUsPerNode {
					t.Fatalf("reservation %+v: bad assignment %+v", r, a)
				}
				for _, g := range a.GPUs {
					if u := busy[fmt.Sprintf("%s/%d", a.Node, g)]; u.busy && (u.end.IsZero() || u.end.After(r.Start)) {
						t.Fatalf("reservation %+v: GPU %d of %s still busy at its start (until %v)", r, g, a.Node, u.end)
					}
				}
			}
			var head []*cluster.Job
			for _, j := range queue {
				if j.ID <= blocked {
					head = append(head, j)
				}
			}
			alone, _ := PlaceWith(v, head, now, Options{Policy: policy})
			if !gocmp.Equal(alone.Reservation, r) {
				t.Fatalf("reservation %+v; with no job behind it %+v: backfill moved it", r, alone.Reservation)
			}
		}
		// The incremental View agrees with a new one.
		for _, j := range started {
			if err := v.Start(j); err != nil {
				t.Fatalf("View.Start(job %d) = %v", j.ID, err)
			}
		}
		all := append(slices.Clone(running), started...)
		slices.SortFunc(all, func(a, b *cluster.Job) int { return cmp.Compare(a.ID, b.ID) })
		opt := gocmp.AllowUnexported(View{}, nodeInfo{}, leafInfo{}, span{}, holder{}, heldNode{})
		if diff := gocmp.Diff(NewView(nodes, all), v, opt, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("View after Start differs from NewView (-new +incremental):\n%s", diff)
		}
	})
}
