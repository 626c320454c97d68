package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// Input is everything Check needs: the client history, the rank records
// and the final state of every replica.
type Input struct {
	Seed     uint64
	Attempts []Attempt
	Records  []Record
	Replicas []Replica
	// Nodes names every agent of the cluster; each must have answered in
	// Replicas, or the check is inconclusive.
	Nodes []string
	// FaultsEnd is when the last fault was healed and the workload stopped
	// submitting; TerminalBound is how long after it every job has to reach
	// a terminal state (DESIGN invariant 4).
	FaultsEnd     time.Time
	TerminalBound time.Duration
	// FinalAt is when the replicas' jobs were read.
	FinalAt time.Time
}

// Violation is one broken invariant, or one check that could not be made.
type Violation struct {
	// Invariant is the number of DESIGN.md's "What must always hold".
	Invariant int    `json:"invariant"`
	Seed      uint64 `json:"seed"`
	Job       uint64 `json:"job,omitempty"`
	OtherJob  uint64 `json:"other_job,omitempty"`
	Node      string `json:"node,omitempty"`
	// GPU is the GPU index on Node, or -1 when none is concerned.
	GPU  int       `json:"gpu"`
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	// Inconclusive marks a check that could not be made: a failure too.
	Inconclusive bool   `json:"inconclusive,omitempty"`
	Detail       string `json:"detail"`
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invariant %d", v.Invariant)
	if v.Inconclusive {
		b.WriteString(" (inconclusive)")
	}
	fmt.Fprintf(&b, " seed %d:", v.Seed)
	if v.Job != 0 {
		fmt.Fprintf(&b, " job %d", v.Job)
	}
	if v.OtherJob != 0 {
		fmt.Fprintf(&b, " vs job %d", v.OtherJob)
	}
	if v.Node != "" {
		fmt.Fprintf(&b, " node %s", v.Node)
	}
	if v.GPU >= 0 {
		fmt.Fprintf(&b, " gpu %d", v.GPU)
	}
	if !v.From.IsZero() {
		fmt.Fprintf(&b, " from %s to %s (%s)", v.From.UTC().Format(timeFormat), v.To.UTC().Format(timeFormat), v.To.Sub(v.From))
	}
	fmt.Fprintf(&b, ": %s", v.Detail)
	return b.String()
}

const timeFormat = "15:04:05.000000"

// maxViolationsPerKind bounds a report: past it, one more violation says
// how many were left out.
const maxViolationsPerKind = 50

// terminal reports whether a job state is final.
func terminal(state string) bool { return cluster.JobState(state).Terminal() }

// interval is one rank's life as its records prove it: it held GPUs on
// Node for at least [start, end].
type interval struct {
	node        string
	gpus        []int
	job         uint64
	incarnation uint64
	rank        int
	start, end  int64
	done        bool
	where       string
}

func (iv interval) String() string {
	return fmt.Sprintf("job %d incarnation %d rank %d (%s)", iv.job, iv.incarnation, iv.rank, iv.where)
}

// intervals merges records into one interval per rank life: the same node,
// job, incarnation, rank and start. The end is the last record's: a rank
// killed between two records lived a little longer than it proves, so a
// conflict shorter than one record period can go unseen, never be made up.
func intervals(recs []Record) []interval {
	type key struct {
		node      string
		job, inc  uint64
		rank      int
		startedAt int64
		gpus      string
	}
	byKey := map[key]*interval{}
	var order []key
	for _, r := range recs {
		k := key{r.Node, r.Job, r.Incarnation, r.Rank, r.Start, fmt.Sprint(r.GPUs)}
		iv, ok := byKey[k]
		if !ok {
			iv = &interval{node: r.Node, gpus: r.GPUs, job: r.Job, incarnation: r.Incarnation,
				rank: r.Rank, start: r.Start, end: r.End, where: r.Where}
			byKey[k] = iv
			order = append(order, k)
		}
		iv.end = max(iv.end, r.End)
		iv.done = iv.done || r.Done
	}
	out := make([]interval, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// checker accumulates violations with a bound per kind.
type checker struct {
	in     Input
	out    []Violation
	counts map[string]int
}

func (c *checker) add(kind string, v Violation) {
	c.counts[kind]++
	n := c.counts[kind]
	if n > maxViolationsPerKind {
		return
	}
	v.Seed = c.in.Seed
	if n == maxViolationsPerKind {
		v.Detail += fmt.Sprintf(" (and possibly more of this kind: only %d are reported)", maxViolationsPerKind)
	}
	c.out = append(c.out, v)
}

func ns(t int64) time.Time { return time.Unix(0, t) }

// Check verifies DESIGN.md's five invariants over in and returns every
// violation found; none means every invariant was checked and held.
func Check(in Input) []Violation {
	c := &checker{in: in, counts: map[string]int{}}
	ivs := intervals(in.Records)
	ref := c.replicas()
	c.noDoubleBooking(ivs)
	c.oneIncarnation(ivs)
	if ref != nil {
		c.ranksMatchAllocations(ivs, ref)
		c.noCPUOrMemoryOvercommit(ivs, ref)
		c.terminalInTime(ref)
		c.ranksRecorded(ivs, ref)
	}
	for _, r := range in.Replicas {
		if r.Err == "" {
			c.submitsKept(r)
		}
	}
	return c.out
}

// replicas checks invariant 5 and returns the replica the other checks
// read the final state from, or nil when none answered.
func (c *checker) replicas() *Replica {
	var ref *Replica
	seen := map[string]bool{}
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		seen[r.Node] = true
		if r.Err != "" {
			c.add("5-unread", Violation{Invariant: 5, Node: r.Node, GPU: -1, Inconclusive: true,
				Detail: "replica could not be read: " + r.Err})
			continue
		}
		if r.Status.Worker {
			continue // no replica kept: its reads are the leader's
		}
		if r.Status.Diverged != "" {
			c.add("5-diverged", Violation{Invariant: 5, Node: r.Node, GPU: -1,
				Detail: "replica diverged: " + r.Status.Diverged})
		}
		if ref == nil {
			ref = r
		}
	}
	for _, n := range c.in.Nodes {
		if !seen[n] {
			c.add("5-unread", Violation{Invariant: 5, Node: n, GPU: -1, Inconclusive: true,
				Detail: "no final state from this replica"})
		}
	}
	if ref == nil {
		c.add("5-none", Violation{Invariant: 5, GPU: -1, Inconclusive: true,
			Detail: "no replica answered: invariants 2 and 4 could not be checked"})
		return nil
	}
	// Every replica must report its hash at one common index.
	at := map[uint64][]string{}
	for _, r := range c.in.Replicas {
		if r.Err == "" && !r.Status.Worker {
			at[r.Status.HashIndex] = append(at[r.Status.HashIndex], r.Node)
		}
	}
	if len(at) > 1 {
		var parts []string
		for _, idx := range slices.Sorted(maps.Keys(at)) {
			parts = append(parts, fmt.Sprintf("%v at index %d", at[idx], idx))
		}
		c.add("5-index", Violation{Invariant: 5, GPU: -1, Inconclusive: true,
			Detail: "replicas never reached one applied index: " + strings.Join(parts, ", ")})
		return ref
	}
	hashes := map[string][]string{}
	for _, r := range c.in.Replicas {
		if r.Err == "" && !r.Status.Worker {
			hashes[r.Status.StateHash] = append(hashes[r.Status.StateHash], r.Node)
		}
	}
	if len(hashes) > 1 || ref.Status.StateHash == "" {
		var parts []string
		for _, h := range slices.Sorted(maps.Keys(hashes)) {
			parts = append(parts, fmt.Sprintf("%v hash %q", hashes[h], h))
		}
		c.add("5-hash", Violation{Invariant: 5, GPU: -1,
			Detail: fmt.Sprintf("replicas differ at index %d: %s", ref.Status.HashIndex, strings.Join(parts, ", "))})
	}
	return ref
}

// noDoubleBooking checks invariant 1: no GPU of a node is held by ranks of
// two different jobs at one instant.
func (c *checker) noDoubleBooking(ivs []interval) {
	type slot struct {
		node string
		gpu  int
	}
	byGPU := map[slot][]interval{}
	for _, iv := range ivs {
		for _, g := range iv.gpus {
			s := slot{iv.node, g}
			byGPU[s] = append(byGPU[s], iv) // ivs is sorted by start
		}
	}
	slots := slices.SortedFunc(maps.Keys(byGPU), func(a, b slot) int {
		if a.node != b.node {
			return strings.Compare(a.node, b.node)
		}
		return a.gpu - b.gpu
	})
	type pair struct {
		a, b uint64
		s    slot
	}
	reported := map[pair]bool{}
	for _, s := range slots {
		list := byGPU[s]
		for i := range list {
			for j := i + 1; j < len(list) && list[j].start < list[i].end; j++ {
				a, b := list[i], list[j]
				if a.job == b.job {
					continue
				}
				p := pair{min(a.job, b.job), max(a.job, b.job), s}
				if reported[p] {
					continue
				}
				reported[p] = true
				c.add("1", Violation{Invariant: 1, Job: a.job, OtherJob: b.job, Node: s.node, GPU: s.gpu,
					From: ns(b.start), To: ns(min(a.end, b.end)),
					Detail: fmt.Sprintf("GPU held by two jobs at once: %s and %s", a, b)})
			}
		}
	}
}

// noCPUOrMemoryOvercommit checks invariant 1 for CPUs and memory: no CPU
// of a node is allocated to two jobs whose ranks run there at one
// instant, and the memory allocated to the jobs running on a node at any
// instant is within the node's. Ranks record their GPUs but not their
// CPUs, so a rank is taken to hold what its incarnation's allocation
// gives it on its node (the job's cgroup enforces that); ranks of older
// incarnations, whose allocations the final state no longer has, are not
// judged here.
func (c *checker) noCPUOrMemoryOvercommit(ivs []interval, ref *Replica) {
	jobs := map[uint64]*api.Job{}
	for i := range ref.Jobs {
		jobs[ref.Jobs[i].ID] = &ref.Jobs[i]
	}
	memOf := map[string]uint64{}
	for _, n := range ref.Nodes {
		memOf[n.Name] = n.MemoryMiB
	}
	// One life per (job, node) of the final incarnation: its ranks' span.
	type life struct {
		job        uint64
		node       string
		cpus       []int
		mem        uint64
		start, end int64
	}
	type key struct {
		job  uint64
		node string
	}
	lives := map[key]*life{}
	for _, iv := range ivs {
		j, ok := jobs[iv.job]
		if !ok || iv.incarnation != j.Incarnation {
			continue
		}
		k := key{iv.job, iv.node}
		if l := lives[k]; l != nil {
			l.start, l.end = min(l.start, iv.start), max(l.end, iv.end)
			continue
		}
		for _, t := range j.Tasks {
			if t.Node == iv.node {
				cpus, _ := cluster.ParseCPUList(t.CPUs)
				lives[k] = &life{job: iv.job, node: iv.node, cpus: cpus, mem: t.MemMiB, start: iv.start, end: iv.end}
			}
		}
	}
	byNode := map[string][]*life{}
	for _, l := range lives {
		byNode[l.node] = append(byNode[l.node], l)
	}
	for _, node := range slices.Sorted(maps.Keys(byNode)) {
		list := byNode[node]
		slices.SortFunc(list, func(a, b *life) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.job, b.job)) })
		for i, a := range list {
			held := a.mem
			for _, b := range list[i+1:] {
				if b.start >= a.end {
					break
				}
				if shared := slices.IndexFunc(a.cpus, func(x int) bool { return slices.Contains(b.cpus, x) }); shared >= 0 {
					c.add("1-cpu", Violation{Invariant: 1, Job: a.job, OtherJob: b.job, Node: node, GPU: -1,
						From: ns(b.start), To: ns(min(a.end, b.end)),
						Detail: fmt.Sprintf("CPU %d held by two jobs at once: job %d and job %d", a.cpus[shared], a.job, b.job)})
				}
			}
			// Memory at a's start: a and every life begun before it that
			// has not ended.
			for _, b := range list[:i] {
				if b.end > a.start {
					held += b.mem
				}
			}
			if total, ok := memOf[node]; ok && held > total {
				c.add("1-mem", Violation{Invariant: 1, Job: a.job, Node: node, GPU: -1, From: ns(a.start), To: ns(a.end),
					Detail: fmt.Sprintf("memory over-committed when job %d started: %d MiB held of the node's %d", a.job, held, total)})
			}
		}
	}
}

// oneIncarnation checks invariant 3: no two incarnations of one job have
// live ranks at one instant, on any nodes.
func (c *checker) oneIncarnation(ivs []interval) {
	byJob := map[uint64][]interval{}
	for _, iv := range ivs {
		byJob[iv.job] = append(byJob[iv.job], iv)
	}
	for _, job := range slices.Sorted(maps.Keys(byJob)) {
		list := byJob[job]
		reported := map[[2]uint64]bool{}
		for i := range list {
			for j := i + 1; j < len(list) && list[j].start < list[i].end; j++ {
				a, b := list[i], list[j]
				if a.incarnation == b.incarnation {
					continue
				}
				k := [2]uint64{min(a.incarnation, b.incarnation), max(a.incarnation, b.incarnation)}
				if reported[k] {
					continue
				}
				reported[k] = true
				c.add("3", Violation{Invariant: 3, Job: job, Node: a.node + "," + b.node, GPU: -1,
					From: ns(b.start), To: ns(min(a.end, b.end)),
					Detail: fmt.Sprintf("two incarnations live at once: %s on %s and %s on %s", a, a.node, b, b.node)})
			}
		}
	}
}

// ranksMatchAllocations checks the other half of invariant 1: a rank holds
// only GPUs its job's incarnation was allocated on its node.
func (c *checker) ranksMatchAllocations(ivs []interval, ref *Replica) {
	jobs := map[uint64]*api.Job{}
	for i := range ref.Jobs {
		jobs[ref.Jobs[i].ID] = &ref.Jobs[i]
	}
	for _, iv := range ivs {
		j, ok := jobs[iv.job]
		if !ok {
			c.add("1-unknown", Violation{Invariant: 1, Job: iv.job, Node: iv.node, GPU: -1,
				From: ns(iv.start), To: ns(iv.end),
				Detail: fmt.Sprintf("%s ran but replica %s holds no job %d", iv, ref.Node, iv.job)})
			continue
		}
		if iv.incarnation != j.Incarnation {
			continue // an older incarnation's allocation is not in the final state
		}
		// Every node the incarnation held (Tasks): an elastic job's Nodes
		// are only those it has now, not one it lost after ranks ran there.
		alloc, held := j.GPUs[iv.node], slices.Contains(j.Nodes, iv.node)
		if k := slices.IndexFunc(j.Tasks, func(t api.Task) bool { return t.Node == iv.node }); k >= 0 && !held {
			alloc, held = j.Tasks[k].GPUs, true
		}
		if !held {
			c.add("1-alloc", Violation{Invariant: 1, Job: iv.job, Node: iv.node, GPU: -1,
				From: ns(iv.start), To: ns(iv.end),
				Detail: fmt.Sprintf("%s ran on a node outside its allocation %v", iv, j.Nodes)})
			continue
		}
		for _, g := range iv.gpus {
			if !slices.Contains(alloc, g) {
				c.add("1-alloc", Violation{Invariant: 1, Job: iv.job, Node: iv.node, GPU: g,
					From: ns(iv.start), To: ns(iv.end),
					Detail: fmt.Sprintf("%s held a GPU outside its allocation %v on %s", iv, alloc, iv.node)})
			}
		}
	}
}

// ranksRecorded makes the record-based checks conclusive: every rank of a
// job that COMPLETED must have recorded its whole life, or invariants 1
// and 3 were checked over records that are missing.
func (c *checker) ranksRecorded(ivs []interval, ref *Replica) {
	done := map[[3]uint64]bool{} // job, incarnation, rank
	for _, iv := range ivs {
		if iv.done {
			done[[3]uint64{iv.job, iv.incarnation, uint64(iv.rank)}] = true
		}
	}
	for _, j := range ref.Jobs {
		if j.State != "COMPLETED" {
			continue
		}
		ranks := j.NumNodes * max(j.TasksPerNode, 1)
		var missing []int
		for r := range ranks {
			if !done[[3]uint64{j.ID, j.Incarnation, uint64(r)}] {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			c.add("1-records", Violation{Invariant: 1, Job: j.ID, GPU: -1, Inconclusive: true,
				Detail: fmt.Sprintf("job COMPLETED on %v but ranks %v of incarnation %d left no complete records", j.Nodes, missing, j.Incarnation)})
		}
	}
}

// terminalInTime checks invariant 4: once faults stopped, every job reached
// a terminal state within the bound.
func (c *checker) terminalInTime(ref *Replica) {
	if c.in.FaultsEnd.IsZero() || c.in.TerminalBound <= 0 {
		c.add("4-input", Violation{Invariant: 4, GPU: -1, Inconclusive: true,
			Detail: "no time the faults ended, or no bound: cannot check"})
		return
	}
	deadline := c.in.FaultsEnd.Add(c.in.TerminalBound)
	for _, j := range ref.Jobs {
		if !terminal(j.State) {
			c.add("4", Violation{Invariant: 4, Job: j.ID, GPU: -1, From: c.in.FaultsEnd, To: c.in.FinalAt,
				Detail: fmt.Sprintf("still %s (%s) on %s %s after faults stopped (bound %s)",
					j.State, j.Reason, ref.Node, c.in.FinalAt.Sub(c.in.FaultsEnd).Round(time.Millisecond), c.in.TerminalBound)})
			continue
		}
		end, err := time.Parse(time.RFC3339, j.EndTime)
		if err != nil {
			c.add("4", Violation{Invariant: 4, Job: j.ID, GPU: -1, Inconclusive: true,
				Detail: fmt.Sprintf("terminal %s with end_time %q: %v", j.State, j.EndTime, err)})
			continue
		}
		// end_time has whole seconds: allow the one it rounds down.
		if end.After(deadline.Add(time.Second)) {
			c.add("4", Violation{Invariant: 4, Job: j.ID, GPU: -1, From: c.in.FaultsEnd, To: end,
				Detail: fmt.Sprintf("reached %s only %s after faults stopped (bound %s)", j.State, end.Sub(c.in.FaultsEnd).Round(time.Second), c.in.TerminalBound)})
		}
	}
}

// submitsKept checks invariant 2 on one replica: every acknowledged submit
// is there, and no request id yielded two jobs. The workload names each job
// by its request id, so the final state shows which request made it.
func (c *checker) submitsKept(r Replica) {
	byID := map[uint64]*api.Job{}
	byName := map[string][]uint64{}
	for i := range r.Jobs {
		j := &r.Jobs[i]
		byID[j.ID] = j
		byName[j.Name] = append(byName[j.Name], j.ID)
	}
	sent := map[string]bool{}
	ackedAs := map[string]Attempt{}
	for _, a := range c.in.Attempts {
		sent[a.RequestID] = true
		if a.Outcome != Acked {
			continue
		}
		if prev, ok := ackedAs[a.RequestID]; ok && prev.Job != a.Job {
			c.add("2-twice", Violation{Invariant: 2, Job: prev.Job, OtherJob: a.Job, Node: a.Node, GPU: -1, From: prev.End, To: a.End,
				Detail: fmt.Sprintf("request %s acknowledged as job %d via %s and as job %d via %s", a.RequestID, prev.Job, prev.Node, a.Job, a.Node)})
		}
		ackedAs[a.RequestID] = a
		j, ok := byID[a.Job]
		switch {
		case !ok:
			c.add("2-lost", Violation{Invariant: 2, Job: a.Job, Node: r.Node, GPU: -1, From: a.Start, To: a.End,
				Detail: fmt.Sprintf("request %s acknowledged via %s but replica %s has no job %d", a.RequestID, a.Node, r.Node, a.Job)})
		case j.Name != a.RequestID:
			c.add("2-lost", Violation{Invariant: 2, Job: a.Job, Node: r.Node, GPU: -1, From: a.Start, To: a.End,
				Detail: fmt.Sprintf("request %s acknowledged via %s as job %d, but replica %s has job %d from request %s", a.RequestID, a.Node, a.Job, r.Node, a.Job, j.Name)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		ids := byName[name]
		if len(ids) > 1 {
			c.add("2-twice", Violation{Invariant: 2, Job: ids[0], OtherJob: ids[1], Node: r.Node, GPU: -1,
				Detail: fmt.Sprintf("request %s yielded jobs %v on replica %s", name, ids, r.Node)})
		}
		if !sent[name] {
			c.add("2-unsent", Violation{Invariant: 2, Job: ids[0], Node: r.Node, GPU: -1,
				Detail: fmt.Sprintf("replica %s has jobs %v from request %q that the client never sent", r.Node, ids, name)})
		}
	}
}
