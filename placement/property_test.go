package placement

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/shoal-sched/shoal/cluster"
	"pgregory.net/rapid"
)

// bruteNode is a node as the brute-force checker sees it, built straight
// from the inputs, sharing no code with NewView.
type bruteNode struct {
	name         string
	usable       bool
	total        int
	free         map[int]bool
	cpus         int          // 0: the node reports none, not judged
	freeCPUs     map[int]bool // when cpus > 0
	mem, freeMem uint64
	parent, leaf string
	leafKey      string
}

// combos calls f with every set of k distinct indices of nodes that pass ok.
func combos(nodes []*bruteNode, k int, ok func(*bruteNode) bool, f func([]int)) {
	var cur []int
	var rec func(start int)
	rec = func(start int) {
		if len(cur) == k {
			f(slices.Clone(cur))
			return
		}
		for i := start; i < len(nodes); i++ {
			if ok(nodes[i]) {
				cur = append(cur, i)
				rec(i + 1)
				cur = cur[:len(cur)-1]
			}
		}
	}
	rec(0)
}

// leafCount returns how many distinct leaves and parents a set spans.
func leafCount(nodes []*bruteNode, set []int) (leaves, parents int) {
	l, p := map[string]bool{}, map[string]bool{}
	for _, i := range set {
		l[nodes[i].leafKey] = true
		p[nodes[i].parent] = true
	}
	return len(l), len(p)
}

func genCluster(t *rapid.T) ([]*cluster.Node, []*cluster.Job, []*cluster.Job) {
	var nodes []*cluster.Node
	nn := rapid.IntRange(0, 7).Draw(t, "nodes")
	for i := range nn {
		g := rapid.IntRange(0, 4).Draw(t, "gpus")
		n := mkNode(fmt.Sprintf("n%d", i), g,
			rapid.SampledFrom([]string{"l1", "l2", "l3"}).Draw(t, "leaf"),
			rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "parent"))
		n.CPUs = rapid.SampledFrom([]int{0, 2, 4, 8}).Draw(t, "cpus")
		n.MemoryMiB = uint64(rapid.IntRange(0, 4).Draw(t, "mem")) * 1000
		if n.CPUs > 0 && rapid.Bool().Draw(t, "layout") {
			n.Sockets, n.CoresPerSocket, n.ThreadsPerCore = 2, n.CPUs/2, 1
		}
		n.Status = rapid.SampledFrom([]cluster.NodeStatus{cluster.NodeUp, cluster.NodeUp, cluster.NodeUp, cluster.NodeDown, cluster.NodeLeft}).Draw(t, "status")
		n.Drain = rapid.IntRange(0, 5).Draw(t, "drain") == 0
		for gi := range n.GPUs {
			if rapid.Bool().Draw(t, "topo") {
				n.GPUs[gi].NUMA = rapid.IntRange(0, 1).Draw(t, "numa")
				n.GPUs[gi].NVLinkPeers = []int{rapid.IntRange(-1, 4).Draw(t, "peer")}
			}
		}
		nodes = append(nodes, n)
	}
	names := []string{"ghost"}
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	var running []*cluster.Job
	for id := range rapid.IntRange(0, 4).Draw(t, "running") {
		var spec []any
		for range rapid.IntRange(1, 2).Draw(t, "allocNodes") {
			gpus := rapid.SliceOfN(rapid.IntRange(-1, 5), 0, 4).Draw(t, "allocGPUs")
			spec = append(spec, rapid.SampledFrom(names).Draw(t, "allocNode"), gpus)
		}
		st := rapid.SampledFrom([]cluster.JobState{cluster.JobRunning, cluster.JobCompleted, cluster.JobFailed}).Draw(t, "state")
		j := holding(cluster.JobID(100+id), st, rapid.IntRange(0, 3).Draw(t, "released") == 0, spec...)
		for k := range j.Alloc.Nodes {
			j.Alloc.Nodes[k].CPUs = rapid.SliceOfN(rapid.IntRange(-1, 8), 0, 4).Draw(t, "allocCPUs")
			j.Alloc.Nodes[k].MemMiB = uint64(rapid.IntRange(0, 3).Draw(t, "allocMem")) * 700
		}
		running = append(running, j)
	}
	var queue []*cluster.Job
	for _, id := range rapid.SliceOfNDistinct(rapid.IntRange(1, 30), 0, 7, rapid.ID[int]).Draw(t, "queue") {
		j := pending(cluster.JobID(id), rapid.IntRange(1, 4).Draw(t, "reqNodes"), rapid.IntRange(0, 4).Draw(t, "reqGPUs"))
		r := &j.Spec.Request
		r.TasksPerNode = rapid.IntRange(1, 2).Draw(t, "tasks")
		switch rapid.IntRange(0, 3).Draw(t, "cpuForm") {
		case 1:
			r.CPUsPerTask = rapid.IntRange(1, 5).Draw(t, "cpusPerTask")
		case 2:
			r.CPUsPerGPU = rapid.IntRange(1, 3).Draw(t, "cpusPerGPU")
		}
		switch rapid.IntRange(0, 4).Draw(t, "memForm") {
		case 1:
			r.MemPerNodeMiB = uint64(rapid.IntRange(1, 5).Draw(t, "memPerNode")) * 500
		case 2:
			r.MemPerCPUMiB = uint64(rapid.IntRange(1, 3).Draw(t, "memPerCPU")) * 300
		case 3:
			r.MemPerGPUMiB = uint64(rapid.IntRange(1, 3).Draw(t, "memPerGPU")) * 400
		}
		queue = append(queue, j)
	}
	return nodes, running, queue
}

// TestPlaceAgainstBruteForce compares Place with a brute-force search on
// small random clusters. It protects DESIGN invariant 1 (no GPU held by
// two jobs: never given twice in one call, never taken from an unreleased
// allocation), gang all-or-nothing, the queue policy (a job is placed if
// and only if some gang exists, in ID order, behind no Resources-blocked
// job), and the topology preferences (one leaf when one suffices, the best
// fitting leaf; else the fewest leaves under one parent; else the fewest
// leaves overall).
func TestPlaceAgainstBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes, running, queue := genCluster(t)
		res := Place(NewView(nodes, running), queue, now)

		var bn []*bruteNode
		byName := map[string]*bruteNode{}
		// A leaf's nodes that announce different parents are one leaf,
		// under the parent cluster.LeafParents agrees on.
		var places []cluster.Topology
		for _, n := range nodes {
			places = append(places, n.Topology)
		}
		leafParents, _ := cluster.LeafParents(places, nil)
		for _, n := range nodes {
			topo := n.Topology.WithLeafParent(leafParents)
			b := &bruteNode{name: n.Name, usable: n.Status == cluster.NodeUp && !n.Drain, total: len(n.GPUs),
				free: map[int]bool{}, parent: topo.SwitchParent, leaf: topo.Switch,
				leafKey: topo.SwitchParent + "/" + topo.Switch}
			for i := range n.GPUs {
				b.free[i] = true
			}
			b.cpus, b.freeCPUs, b.mem, b.freeMem = n.CPUs, map[int]bool{}, n.MemoryMiB, n.MemoryMiB
			for i := range n.CPUs {
				b.freeCPUs[i] = true
			}
			bn = append(bn, b)
			byName[n.Name] = b
		}
		for _, j := range running {
			for _, na := range j.Alloc.Nodes {
				if b := byName[na.Node]; b != nil && !na.Released {
					for _, g := range na.GPUs {
						delete(b.free, g)
					}
					for _, c := range na.CPUs {
						delete(b.freeCPUs, c)
					}
					b.freeMem -= min(b.freeMem, na.MemMiB)
				}
			}
		}
		decided := map[cluster.JobID]Decision{}
		for i, d := range res.Decisions {
			if i > 0 && d.Job <= res.Decisions[i-1].Job {
				t.Fatalf("Place() decisions out of ID order: %v after %v", d.Job, res.Decisions[i-1].Job)
			}
			decided[d.Job] = d
		}
		sorted := slices.Clone(queue)
		slices.SortFunc(sorted, func(a, b *cluster.Job) int { return cmp.Compare(a.ID, b.ID) })
		blocked := false
		for _, j := range sorted {
			req := j.Spec.Request
			n, g := req.Nodes, req.GPUsPerNode
			c, m := req.CPUsPerNode(), req.MemPerNode()
			size := func(b *bruteNode) bool { return b.total >= g && (b.cpus == 0 || b.cpus >= c) && b.mem >= m }
			fitsNow := func(b *bruteNode) bool {
				return len(b.free) >= g && (b.cpus == 0 || len(b.freeCPUs) >= c) && b.freeMem >= m
			}
			d, placed := decided[j.ID]
			reason, hasReason := res.Reasons[j.ID]
			if placed == hasReason {
				t.Fatalf("job %d: placed %v, reason %q; want exactly one of a decision or a reason", j.ID, placed, reason)
			}
			emptyFit := false
			combos(bn, n, func(b *bruteNode) bool { return b.usable && size(b) }, func([]int) { emptyFit = true })
			var now [][]int
			combos(bn, n, func(b *bruteNode) bool { return b.usable && fitsNow(b) }, func(s []int) { now = append(now, s) })
			want := ""
			switch {
			case !emptyFit && reason == ReasonBadConstraints:
				// No node known to the view could ever hold it: the node
				// scan's word for ReqNodeNotAvail then.
				want = ReasonBadConstraints
			case !emptyFit:
				want = cluster.ReasonReqNodeNotAvail
			case blocked:
				want = cluster.ReasonPriority
			case len(now) == 0:
				want = cluster.ReasonResources
				blocked = true
			}
			if reason != want {
				t.Fatalf("job %d (%dx%d): reason %q; want %q", j.ID, n, g, reason, want)
			}
			if !placed {
				continue
			}
			checkGang(t, bn, byName, d, req, now, fitsNow)
		}
		if len(res.Decisions)+len(res.Reasons) != len(queue) {
			t.Fatalf("Place() = %d decisions and %d reasons for %d jobs", len(res.Decisions), len(res.Reasons), len(queue))
		}
		if again := Place(NewView(nodes, running), queue, now); !gocmp.Equal(again, res) {
			t.Fatalf("Place() is not deterministic: %+v then %+v", res, again)
		}
	})
}

// checkGang validates one decision against the brute-force state and
// takes its GPUs, CPUs and memory out of it.
func checkGang(t *rapid.T, bn []*bruteNode, byName map[string]*bruteNode, d Decision, req cluster.Request, now [][]int, fitsNow func(*bruteNode) bool) {
	n, g := req.Nodes, req.GPUsPerNode
	if len(d.Nodes) != n {
		t.Fatalf("job %d: %d nodes; want %d", d.Job, len(d.Nodes), n)
	}
	var set []int
	seen := map[string]bool{}
	for _, a := range d.Nodes {
		b := byName[a.Node]
		switch {
		case b == nil:
			t.Fatalf("job %d: unknown node %q", d.Job, a.Node)
		case seen[a.Node]:
			t.Fatalf("job %d: node %q twice in one gang", d.Job, a.Node)
		case !b.usable:
			t.Fatalf("job %d: node %q is down, left or drained", d.Job, a.Node)
		case len(a.GPUs) != g:
			t.Fatalf("job %d: node %q gives %v; want %d GPUs", d.Job, a.Node, a.GPUs, g)
		case !slices.IsSorted(a.GPUs) || len(slices.Compact(slices.Clone(a.GPUs))) != len(a.GPUs):
			t.Fatalf("job %d: node %q GPUs %v; want distinct and ascending", d.Job, a.Node, a.GPUs)
		}
		seen[a.Node] = true
		for _, p := range a.GPUs {
			if !b.free[p] {
				t.Fatalf("job %d: GPU %d of %q is not free (held by another job or out of range)", d.Job, p, a.Node)
			}
		}
		wantCPUs := req.CPUsPerNode()
		if b.cpus == 0 {
			wantCPUs = 0
		}
		switch {
		case len(a.CPUs) != wantCPUs:
			t.Fatalf("job %d: node %q gives CPUs %v; want %d", d.Job, a.Node, a.CPUs, wantCPUs)
		case !slices.IsSorted(a.CPUs) || len(slices.Compact(slices.Clone(a.CPUs))) != len(a.CPUs):
			t.Fatalf("job %d: node %q CPUs %v; want distinct and ascending", d.Job, a.Node, a.CPUs)
		case a.MemMiB != req.MemPerNode():
			t.Fatalf("job %d: node %q gives %d MiB; want %d", d.Job, a.Node, a.MemMiB, req.MemPerNode())
		case a.MemMiB > b.freeMem:
			t.Fatalf("job %d: node %q gives %d MiB, only %d free: memory over-committed", d.Job, a.Node, a.MemMiB, b.freeMem)
		}
		for _, p := range a.CPUs {
			if !b.freeCPUs[p] {
				t.Fatalf("job %d: CPU %d of %q is not free (held by another job or out of range)", d.Job, p, a.Node)
			}
		}
		set = append(set, slices.Index(bn, b))
	}
	// Rank order: by (parent, leaf), then by name.
	if !slices.IsSortedFunc(set, func(a, b int) int {
		return cmp.Or(cmp.Compare(bn[a].parent, bn[b].parent), cmp.Compare(bn[a].leaf, bn[b].leaf), cmp.Compare(bn[a].name, bn[b].name))
	}) {
		t.Fatalf("job %d: nodes %v not in (parent, leaf, name) order", d.Job, d.Nodes)
	}
	leaves, parents := leafCount(bn, set)
	minLeaves, minParentLeaves := 1<<30, 1<<30
	for _, c := range now {
		l, p := leafCount(bn, c)
		minLeaves = min(minLeaves, l)
		if p == 1 {
			minParentLeaves = min(minParentLeaves, l)
		}
	}
	switch {
	case minLeaves == 1:
		if leaves != 1 {
			t.Fatalf("job %d: spans %d leaves; one leaf suffices", d.Job, leaves)
		}
		q := map[string]int{}
		for _, b := range bn {
			if b.usable && fitsNow(b) {
				q[b.leafKey]++
			}
		}
		chosen := bn[set[0]].leafKey
		for k, c := range q {
			if c >= n && c < q[chosen] {
				t.Fatalf("job %d: leaf %s has %d qualifying nodes; leaf %s has %d and fits better", d.Job, chosen, q[chosen], k, c)
			}
		}
		maxChosen := 0
		for _, i := range set {
			maxChosen = max(maxChosen, len(bn[i].free))
		}
		for i, b := range bn {
			if b.leafKey == chosen && b.usable && fitsNow(b) && !slices.Contains(set, i) && len(b.free) < maxChosen {
				t.Fatalf("job %d: left %s with %d free GPUs, took one with %d: not best fit", d.Job, b.name, len(b.free), maxChosen)
			}
		}
	case minParentLeaves < 1<<30:
		if parents != 1 || leaves != minParentLeaves {
			t.Fatalf("job %d: spans %d leaves under %d parents; %d leaves under one parent suffice", d.Job, leaves, parents, minParentLeaves)
		}
	default:
		if leaves != minLeaves {
			t.Fatalf("job %d: spans %d leaves; %d suffice", d.Job, leaves, minLeaves)
		}
	}
	for _, a := range d.Nodes {
		b := byName[a.Node]
		for _, p := range a.GPUs {
			delete(b.free, p)
		}
		for _, p := range a.CPUs {
			delete(b.freeCPUs, p)
		}
		b.freeMem -= a.MemMiB
	}
}
