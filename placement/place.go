package placement

import (
	"cmp"
	"maps"
	"math/bits"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// ReasonBadConstraints is the pending reason of a job whose request no
// cluster could satisfy (no nodes, negative GPUs); the FSM's validation
// should make it unreachable. It is Slurm's name for such a job.
const ReasonBadConstraints = "BadConstraints"

// Decision places one job: its gang, in rank order (Nodes[0] is NODE_RANK
// 0, where the batch script runs and MASTER_ADDR points).
type Decision struct {
	Job   cluster.JobID
	Nodes []Assignment
}

// Assignment is one node's share of a decision. GPUs are positions in the
// node's GPU list, ascending; nil when the job asks for no GPUs. CPUs are
// positions in the node's CPU numbering (cluster.Node.SocketOf),
// ascending, near the GPUs; nil on a node that reports no CPUs. MemMiB is
// the memory the job holds there.
type Assignment struct {
	Node   string
	GPUs   []int
	CPUs   []int
	MemMiB uint64
	// Tasks, with Options.Spread, is how many of the job's ranks the
	// node runs (0: the request's layout, Request.TaskCounts).
	Tasks int
}

// Result is what one Place call decided: the jobs to start, in the order
// they were taken (ascending job ID unless Options.Order), and, for every pending job not placed, a Slurm pending
// reason (cluster.ReasonResources, ReasonPriority, ReasonReqNodeNotAvail,
// or ReasonBadConstraints). Reasons is never nil; it is empty when
// Options.OmitReasons asked so. Reservation is set only by the backfilling
// policies, when the first job that does not fit now can be given one.
type Result struct {
	Decisions   []Decision
	Reasons     map[cluster.JobID]string
	Reservation *Reservation
}

// Place decides which jobs of queue (the pending jobs) start now and
// where. Jobs are taken in ascending ID order; each decision takes its
// GPUs out of the view for the jobs after it (the View itself is not
// modified). A gang is all Request.Nodes distinct usable nodes, each
// giving Request.GPUsPerNode free GPUs, or nothing; jobs asking for no
// GPUs may share nodes unless one is Exclusive. A request's node set
// (NodeList, Exclude, Constraint, Exclusive) limits its nodes; see
// nodeset.go. See the package doc for the queue policy, and chooseNodes
// and chooseGPUs for the topology preferences.
//
// Place is the topology preferences of PolicyShoal with strict FIFO and
// no backfill (Slurm's sched/builtin); the leader schedules with
// PlaceWith and PolicyShoal (EASY backfill in priority order) instead.
// now is unused by it. Nil jobs and repeated IDs (after the first) are
// ignored.
func Place(v *View, queue []*cluster.Job, now time.Time) Result {
	return place(v, queue, now, rules{topology: true}, false)
}

// rules are what distinguishes the policies inside place.
type rules struct {
	topology bool // chooseNodes and chooseGPUs, else first fit
	backfill bool // EASY backfill behind the first blocked job
	// order, when non-nil, is the order jobs are taken in (Options.Order).
	order  []cluster.JobID
	spread bool // Options.Spread
}

// started is a job placed earlier in the same call: when it ends (zero:
// never) and what it holds, for the reservation.
type started struct {
	end  time.Time
	held []heldNode
	excl bool // Request.Exclusive
}

// place is Place and PlaceWith.
func place(v *View, queue []*cluster.Job, now time.Time, r rules, omitReasons bool) Result {
	if v == nil {
		v = NewView(nil, nil)
	}
	res := Result{Reasons: make(map[cluster.JobID]string)}
	reason := func(id cluster.JobID, why string) {
		if !omitReasons {
			res.Reasons[id] = why
		}
	}
	s := newState(v, queue)
	var (
		blocked bool
		// m is s without the reserved GPUs that are free now: where a job
		// that would still run at the reservation may go. Nil unless
		// backfilling behind a reservation.
		m    *state
		done []started
	)
jobs:
	for _, j := range byOrder(queue, r.order) {
		req := j.Spec.Request
		s.maxLeaves = switchLimit(j, now)
		s.spreadRanks = r.spread && !j.Spec.Elastic()
		if m != nil {
			m.maxLeaves, m.spreadRanks = s.maxLeaves, s.spreadRanks
		}
		switch {
		case req.Nodes < 1 || req.GPUsPerNode < 0:
			reason(j.ID, ReasonBadConstraints)
			continue
		case s.never(req) != "":
			// Too big for the usable nodes, even empty; or a node set
			// they cannot give (see never).
			reason(j.ID, s.never(req))
			continue
		case !blocked:
			if d, held, ok := s.start(j.ID, req, r.topology, nil, r.backfill); ok {
				res.Decisions = append(res.Decisions, d)
				if r.backfill {
					done = append(done, started{end: endsAt(now, req), held: held, excl: req.Exclusive})
				}
				continue
			}
			blocked = true
			reason(j.ID, cluster.ReasonResources)
			if r.backfill {
				res.Reservation = s.reserve(j.ID, req, done, now, r.topology)
				if res.Reservation != nil {
					m = s.without(res.Reservation, req.Exclusive)
				}
			}
			continue
		case m == nil:
			// Strict FIFO behind the blocked job: without backfill, or
			// when it could not get a reservation (it waits on jobs with
			// no time limit), so no later job may overtake it.
			if omitReasons {
				break jobs
			}
			reason(j.ID, cluster.ReasonPriority)
			continue
		}
		// EASY backfill: a job that ends by the reservation may use any
		// free GPU; one that would still run then only the unreserved.
		var (
			d  Decision
			ok bool
		)
		if end := endsAt(now, req); !end.IsZero() && !end.After(res.Reservation.Start) {
			d, _, ok = s.start(j.ID, req, r.topology, m, false)
		} else {
			d, _, ok = m.start(j.ID, req, r.topology, s, false)
		}
		if ok {
			res.Decisions = append(res.Decisions, d)
		} else {
			reason(j.ID, cluster.ReasonPriority)
		}
	}
	return res
}

// endsAt is when a job starting at now with request req ends at the
// latest: now + TimeLimit, or zero (never) without a limit.
func endsAt(now time.Time, req cluster.Request) time.Time {
	if req.TimeLimit <= 0 {
		return time.Time{}
	}
	return now.Add(req.TimeLimit)
}

// inOrder returns the queue's jobs by ascending ID without nil entries
// and repeated IDs (the first kept). A queue already in that order (the
// simulator's, every pass) is returned as it is, not copied.
func inOrder(queue []*cluster.Job) []*cluster.Job {
	sorted := true
	for i, j := range queue {
		if j == nil || (i > 0 && queue[i-1].ID >= j.ID) {
			sorted = false
			break
		}
	}
	if sorted {
		return queue
	}
	jobs := make([]*cluster.Job, 0, len(queue))
	for _, j := range queue {
		if j != nil {
			jobs = append(jobs, j)
		}
	}
	slices.SortStableFunc(jobs, func(a, b *cluster.Job) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(jobs, func(a, b *cluster.Job) bool { return a.ID == b.ID })
}

// byOrder returns inOrder(queue) rearranged to follow order: the jobs it
// names first, in its order, then the others by ID. Nil order is ID order.
func byOrder(queue []*cluster.Job, order []cluster.JobID) []*cluster.Job {
	jobs := inOrder(queue)
	if order == nil {
		return jobs
	}
	pos := make(map[cluster.JobID]int, len(order))
	for i, id := range order {
		if _, dup := pos[id]; !dup {
			pos[id] = i
		}
	}
	rank := func(j *cluster.Job) int {
		if i, ok := pos[j.ID]; ok {
			return i
		}
		return len(order)
	}
	jobs = slices.Clone(jobs) // inOrder may return the caller's slice
	slices.SortStableFunc(jobs, func(a, b *cluster.Job) int { return cmp.Compare(rank(a), rank(b)) })
	return jobs
}

// start places one job in s, when some gang fits: the policy's choice of
// nodes and GPUs, taken out of s and, where still free there, out of
// mirror (nil for none). It returns the decision and, if keep, what it
// holds.
func (s *state) start(id cluster.JobID, req cluster.Request, topology bool, mirror *state, keep bool) (Decision, []heldNode, bool) {
	nodes, tasks := s.chooseSpread(req, topology)
	if nodes == nil {
		nodes = s.chooseCount(req, topology)
		tasks = s.spreadTasks(req, nodes)
	}
	if nodes == nil {
		return Decision{}, nil, false
	}
	d := Decision{Job: id, Nodes: make([]Assignment, len(nodes))}
	var held []heldNode
	if keep {
		held = make([]heldNode, len(nodes))
	}
	for k, ni := range nodes {
		node := s.v.nodes[ni].node
		var gpus []int
		switch {
		case req.Exclusive:
			gpus = s.lowestGPUs(ni, len(node.GPUs)) // the whole node
		case topology:
			gpus = s.chooseGPUs(ni, req.GPUsPerNode)
		default:
			gpus = s.lowestGPUs(ni, req.GPUsPerNode)
		}
		// A job with -n holds on each node what the ranks it runs there
		// need; the choice of nodes checked room for the busiest.
		cpus, mem := req.CPUsAt(node, k, len(nodes)), req.MemAt(node, k, len(nodes))
		if tasks != nil {
			cpus, mem = req.CPUsFor(node, tasks[k]), req.MemFor(node, tasks[k])
		}
		h := heldNode{node: ni, gpus: gpus, cpus: s.chooseCPUs(ni, cpus, gpus), mem: mem}
		s.take(h)
		s.occupy(ni, req.Exclusive)
		if mirror != nil {
			mirror.takeFree(h)
			mirror.occupy(ni, req.Exclusive)
		}
		d.Nodes[k] = Assignment{Node: node.Name, GPUs: gpus, CPUs: h.cpus, MemMiB: h.mem}
		if tasks != nil {
			d.Nodes[k].Tasks = tasks[k]
		}
		if keep {
			held[k] = h
		}
	}
	return d, held, true
}

// chooseCount is choose for a job that may ask -N MIN-MAX: the most
// nodes that fit, from MIN to MAX, or nil.
func (s *state) chooseCount(req cluster.Request, topology bool) []int {
	nodes := s.choose(req, topology)
	if req.NodesMax > req.Nodes {
		// --nodes MIN-MAX: as many as fit now, up to MAX. Whether n nodes
		// fit only gets harder as n grows, so a binary search finds the
		// most.
		lo, hi := req.Nodes, req.NodesMax
		if nodes == nil {
			return nil
		}
		for lo < hi {
			mid := (lo + hi + 1) / 2
			r := req
			r.Nodes = mid
			if more := s.choose(r, topology); more != nil {
				lo, nodes = mid, more
			} else {
				hi = mid - 1
			}
		}
	}
	return nodes
}

// chooseSpread chooses nodes for a job whose ranks spreadTasks lays out,
// as Slurm chooses them: nodes with room for one of its tasks at least
// (the request's layout asks room for its busiest share on every node),
// and lays its ranks out over their free CPUs. Nil when the job's ranks
// do not spread (see spreadTasks), or when those nodes cannot hold
// them: the caller then chooses by the request's layout.
func (s *state) chooseSpread(req cluster.Request, topology bool) (nodes, tasks []int) {
	if !s.spreadRanks || req.NTasks == 0 {
		return nil, nil
	}
	one := req
	one.TasksPerNode = 1
	if nodes = s.chooseCount(one, topology); nodes == nil {
		return nil, nil
	}
	if tasks = s.spreadTasks(req, nodes); tasks == nil {
		return nil, nil
	}
	return nodes, tasks
}

// spreadTasks is how many of req's ranks each of nodes (in rank order)
// runs when the job starts there now, as Slurm 22.05 sizes a job's CPUs
// (Request.SpreadCounts over the CPUs each node has free): -n 5 on 2
// idle nodes runs 4 and 1, on a first node with 2 CPUs free 2 and 3.
// Nil, for the request's own layout (Request.CPUsAt), unless
// s.spreadRanks and the job has NTasks, every node reports its CPUs, and
// the ranks fit: every node has the CPUs and
// memory of its share free (the shares keep within each node's free
// CPUs, but the nodes may hold too few in all, or too little
// --mem-per-cpu memory).
func (s *state) spreadTasks(req cluster.Request, nodes []int) []int {
	if !s.spreadRanks || req.NTasks == 0 || len(nodes) == 0 {
		return nil
	}
	free, named := make([]int, len(nodes)), make([]bool, len(nodes))
	for k, ni := range nodes {
		n := s.v.nodes[ni].node
		if n.CPUs <= 0 {
			return nil
		}
		free[k], named[k] = s.cfree[ni], slices.Contains(req.NodeList, n.Name)
	}
	counts := req.SpreadCounts(free, named)
	if len(counts) != len(nodes) {
		return nil // the ranks do not fit the shares
	}
	for k, ni := range nodes {
		n := s.v.nodes[ni].node
		if counts[k] < 1 || counts[k] > cluster.MaxTasksPerNode || req.CPUsFor(n, counts[k]) > s.cfree[ni] ||
			n.MemoryMiB > 0 && req.MemFor(n, counts[k]) > s.mfree[ni] {
			return nil
		}
	}
	return counts
}

// choose is the policy's choice of req.Nodes nodes in s, or nil: the node
// set's scan for a constrained job, the topology preferences, or first
// fit. A choice spanning more leaves than --switches allows is none (the
// topology choice already spans the fewest it can).
func (s *state) choose(req cluster.Request, topology bool) []int {
	var nodes []int
	if !s.aggregated(req) {
		nodes = s.chooseEligible(req, topology)
	} else if topology {
		nodes = s.chooseNodes(req)
	} else {
		nodes = s.firstFit(req)
	}
	if nodes == nil || (topology && s.maxLeaves > 0 && s.leavesOf(nodes) > s.maxLeaves) {
		return nil
	}
	return nodes
}

// state is one Place call's private copy of what is free.
//
// The aggregates (hist, atLeast) count the usable nodes by free GPUs, so
// a job asking only for GPUs is placed without looking at every node.
// CPUs and memory are consumed too; the aggregates stay exact for them by
// leaving out the tight nodes: those with free GPUs whose free CPUs or
// memory are less than cpg or mpg per free GPU (the call's floors, the
// most any aggregated job of the queue asks per GPU). Every node left in
// the aggregates with g free GPUs then has the CPUs and memory of any
// aggregated job asking for g; the tight ones are judged one by one
// (tight is short when jobs keep to their share of a node).
type state struct {
	v     *View
	words []uint64 // free bitsets, as View.words
	free  []int    // free GPUs per node
	hist  []int    // per-leaf histograms of free GPUs, as View.leaves[i].hist
	// atLeast[g] counts the aggregated nodes with g or more free GPUs,
	// for g in 0..View.maxGPUs: whether a gang fits at all is one lookup.
	atLeast []int
	// cwords, cfree and mfree are the free CPUs (bitsets, as View.cwords,
	// and counts) and memory per node.
	cwords []uint64
	cfree  []int
	mfree  []uint64
	// cpg and mpg are the floors (see above); where says where each node
	// is counted: outside (unusable or held whole), in the aggregates, or
	// in tight (at position tightAt).
	cpg     int
	mpg     uint64
	where   []int8
	tight   []int
	tightAt []int32
	q       []int // scratch: qualifying nodes per leaf for the current job
	// busy and excl are what this call changed in the View's per-node
	// counts of jobs and of jobs holding the node whole (nodeInfo.jobs and
	// excl), by node index: sparse, so a call allocates in proportion to
	// what it places, not to the cluster. Read them through busyOf and
	// exclOf. A node with exclOf > 0 is left out of hist and atLeast, so
	// the aggregate fast path never offers it.
	busy, excl map[int]int
	// spreadRanks lays the current job's ranks out from its nodes' free
	// CPUs (spreadTasks); place sets it per job.
	spreadRanks bool
	// cons caches parsed Request.Constraint expressions.
	cons map[string]*cluster.Constraint
	// maxLeaves, when above 0, is the most leaf switches (or NVLink
	// blocks) the job being placed may span: its --switches while it may
	// still wait for them.
	maxLeaves int
	// scratch for chooseGPUs, indexed by GPU position
	links, sameNUMA []int
	in              []bool
}

// Where a node is counted in a state.
const (
	outside int8 = iota
	aggregate
	tightNode
)

// floors returns the most CPUs and memory per GPU any job of queue that
// takes the aggregate fast path asks for: the tightness floors of a call.
func floors(v *View, queue []*cluster.Job) (cpg int, mpg uint64) {
	for _, j := range queue {
		if j == nil || !v.aggregated(j.Spec.Request) {
			continue
		}
		c, m := perGPU(j.Spec.Request)
		cpg, mpg = max(cpg, c), max(mpg, m)
	}
	return cpg, mpg
}

// newState returns the state of v for placing queue (its floors).
func newState(v *View, queue []*cluster.Job) *state {
	cpg, mpg := floors(v, queue)
	s := &state{
		v:       v,
		words:   slices.Clone(v.words),
		free:    make([]int, len(v.nodes)),
		hist:    make([]int, v.histLen),
		atLeast: make([]int, v.maxGPUs+2),
		q:       make([]int, len(v.leaves)),
		cwords:  slices.Clone(v.cwords),
		cfree:   make([]int, len(v.nodes)),
		mfree:   make([]uint64, len(v.nodes)),
		cpg:     cpg,
		mpg:     mpg,
		where:   make([]int8, len(v.nodes)),
	}
	// s.place inlined: this loop is most of a call's fixed cost.
	for i := range v.nodes {
		n := &v.nodes[i]
		s.free[i], s.cfree[i], s.mfree[i] = n.free, n.cfree, n.mfree
		switch {
		case n.leaf < 0 || n.excl > 0:
		case n.free > 0 && (n.cfree < n.free*cpg || n.mfree < uint64(n.free)*mpg):
			s.addTight(i)
		default:
			s.hist[v.leaves[n.leaf].hist+n.free]++
			s.atLeast[n.free]++
			s.where[i] = aggregate
		}
	}
	// atLeast holds a histogram so far; sum it from the top.
	for g := len(s.atLeast) - 2; g >= 0; g-- {
		s.atLeast[g] += s.atLeast[g+1]
	}
	return s
}

// place is where node ni belongs in s now.
func (s *state) place(ni int) int8 {
	n := &s.v.nodes[ni]
	switch {
	case n.leaf < 0 || s.exclOf(ni) > 0:
		return outside
	case s.free[ni] > 0 && (s.cfree[ni] < s.free[ni]*s.cpg || s.mfree[ni] < uint64(s.free[ni])*s.mpg):
		return tightNode
	}
	return aggregate
}

// detach takes node ni out of the aggregates or tight, wherever it is
// counted; attach counts it again where it now belongs. Every change to
// a node's free GPUs, CPUs, memory or holders sits between the two.
func (s *state) detach(ni int) {
	switch s.where[ni] {
	case aggregate:
		s.hist[s.v.leaves[s.v.nodes[ni].leaf].hist+s.free[ni]]--
		for f := 0; f <= s.free[ni]; f++ {
			s.atLeast[f]--
		}
	case tightNode:
		at := s.tightAt[ni]
		last := s.tight[len(s.tight)-1]
		s.tight[at], s.tightAt[last] = last, at
		s.tight = s.tight[:len(s.tight)-1]
	}
	s.where[ni] = outside
}

func (s *state) attach(ni int) {
	switch s.place(ni) {
	case aggregate:
		s.hist[s.v.leaves[s.v.nodes[ni].leaf].hist+s.free[ni]]++
		for f := 0; f <= s.free[ni]; f++ {
			s.atLeast[f]++
		}
		s.where[ni] = aggregate
	case tightNode:
		s.addTight(ni)
	}
}

// addTight counts node ni in tight.
func (s *state) addTight(ni int) {
	if s.tightAt == nil {
		s.tightAt = make([]int32, len(s.v.nodes)) // most calls have no tight node
	}
	s.tightAt[ni] = int32(len(s.tight))
	s.tight = append(s.tight, ni)
	s.where[ni] = tightNode
}

// clone returns an independent copy of s (scratch space not shared).
func (s *state) clone() *state {
	return &state{
		v:       s.v,
		words:   slices.Clone(s.words),
		free:    slices.Clone(s.free),
		hist:    slices.Clone(s.hist),
		atLeast: slices.Clone(s.atLeast),
		q:       make([]int, len(s.q)),
		busy:    maps.Clone(s.busy),
		excl:    maps.Clone(s.excl),
		cons:    s.cons,
		cwords:  slices.Clone(s.cwords),
		cfree:   slices.Clone(s.cfree),
		mfree:   slices.Clone(s.mfree),
		cpg:     s.cpg,
		mpg:     s.mpg,
		where:   slices.Clone(s.where),
		tight:   slices.Clone(s.tight),
		tightAt: slices.Clone(s.tightAt),

		maxLeaves: s.maxLeaves,
	}
}

// aggregated reports whether req takes the fast path in s: the view's
// rule, and no more per GPU than s's floors.
func (s *state) aggregated(req cluster.Request) bool {
	if !s.v.aggregated(req) {
		return false
	}
	c, m := perGPU(req)
	return c <= s.cpg && m <= s.mpg
}

// mayFit reports whether count nodes with g free GPUs each could be
// found in s: an upper bound (the tight nodes are not judged), for
// skipping a search that cannot succeed.
func (s *state) mayFit(count, g int) bool {
	if g < 0 || g > s.v.maxGPUs || count < 1 {
		return false
	}
	return s.atLeast[g]+len(s.tight) >= count
}

// fitsNow reports whether node ni, counted somewhere, has g free GPUs,
// c free CPUs and m free memory in s.
func (s *state) fitsNow(ni, g, c int, m uint64) bool {
	return s.free[ni] >= g && s.cfree[ni] >= c && s.mfree[ni] >= m && s.exclOf(ni) == 0
}

// take marks h's GPUs and CPUs of its node as no longer free and takes
// its memory. They must be free.
func (s *state) take(h heldNode) {
	ni := h.node
	n := &s.v.nodes[ni]
	s.detach(ni)
	for _, p := range h.gpus {
		s.words[n.off+p/64] &^= 1 << (p % 64)
	}
	s.free[ni] -= len(h.gpus)
	for _, p := range h.cpus {
		s.cwords[n.coff+p/64] &^= 1 << (p % 64)
	}
	s.cfree[ni] -= len(h.cpus)
	s.mfree[ni] -= min(s.mfree[ni], h.mem)
	s.attach(ni)
}

// takeFree takes those of h's GPUs and CPUs that are still free in s, and
// its memory as far as there is.
func (s *state) takeFree(h heldNode) {
	n := &s.v.nodes[h.node]
	some := heldNode{node: h.node, mem: h.mem}
	for _, p := range h.gpus {
		if s.words[n.off+p/64]&(1<<(p%64)) != 0 {
			some.gpus = append(some.gpus, p)
		}
	}
	for _, p := range h.cpus {
		if s.cwords[n.coff+p/64]&(1<<(p%64)) != 0 {
			some.cpus = append(some.cpus, p)
		}
	}
	s.take(some)
}

// give marks those of h's GPUs and CPUs that are taken as free again (one
// already free is left alone) and gives its memory back.
func (s *state) give(h heldNode) {
	ni := h.node
	n := &s.v.nodes[ni]
	s.detach(ni)
	for _, p := range h.gpus {
		if w := &s.words[n.off+p/64]; *w&(1<<(p%64)) == 0 {
			*w |= 1 << (p % 64)
			s.free[ni]++
		}
	}
	for _, p := range h.cpus {
		if w := &s.cwords[n.coff+p/64]; *w&(1<<(p%64)) == 0 {
			*w |= 1 << (p % 64)
			s.cfree[ni]++
		}
	}
	s.mfree[ni] = min(s.mfree[ni]+h.mem, n.node.MemoryMiB)
	s.attach(ni)
}

// chooseNodes picks count distinct usable nodes with at least g free GPUs
// each, or returns nil when there are not that many. Preferences, in
// order:
//
//  1. One leaf switch: the leaf with the fewest qualifying nodes that
//     still suffice (best fit), ties by (parent, leaf) name.
//  2. Leaves under one parent: the parent needing the fewest leaves, then
//     with the fewest qualifying nodes, then by name; see pickLeaves.
//  3. Leaves anywhere, by the same rule as under one parent.
//
// Inside a leaf, nodes with the fewest free GPUs that suffice come first
// (best fit), ties by name. The result is in rank order: by leaf, then by
// node name, so ranks under one switch are neighbours.
func (s *state) chooseNodes(req cluster.Request) []int {
	count, g, c, m := req.Nodes, req.GPUsPerNode, req.CPUsPerNode(), req.MemPerNode()
	if !s.mayFit(count, g) {
		return nil
	}
	v := s.v
	clear(s.q)
	total := 0
	for _, ni := range s.tight {
		if s.fitsNow(ni, g, c, m) {
			s.q[v.nodes[ni].leaf]++
		}
	}
	best := -1
	for li := range v.leaves {
		l := &v.leaves[li]
		q := s.q[li]
		for f := max(g, 0); f <= l.maxGPUs; f++ {
			q += s.hist[l.hist+f]
		}
		s.q[li] = q
		total += q
		if q >= count && (best < 0 || q < s.q[best]) {
			best = li
		}
	}
	if total < count {
		return nil
	}
	takes := s.leafTakes(best, count)
	var nodes []int
	for _, t := range takes {
		nodes = append(nodes, s.bestFit(t.leaf, t.n, g, c, m)...)
	}
	slices.SortFunc(nodes, func(a, b int) int {
		return cmp.Or(cmp.Compare(v.nodes[a].leaf, v.nodes[b].leaf), cmp.Compare(a, b))
	})
	return nodes
}

// leafTakes is how count nodes are taken by leaf: all from leaf best
// (best >= 0: the leaf that holds them with the fewest to spare), else
// from the fewest leaves under one parent switch (ties: the parent with
// the fewest qualifying nodes), else from the fewest leaves anywhere. It
// reads s.q, filled by the caller.
func (s *state) leafTakes(best, count int) []leafTake {
	if best >= 0 {
		return []leafTake{{leaf: best, n: count}}
	}
	v := s.v
	var takes []leafTake
	bestK, bestQ := 0, 0
	for _, p := range v.parents {
		t, k, q := s.pickLeaves(p, count)
		if t != nil && (takes == nil || k < bestK || (k == bestK && q < bestQ)) {
			takes, bestK, bestQ = t, k, q
		}
	}
	if takes == nil {
		takes, _, _ = s.pickLeaves(span{0, len(v.leaves)}, count)
	}
	return takes
}

// leafTake is how many nodes to take from one leaf.
type leafTake struct{ leaf, n int }

// pickLeaves spreads count nodes over the fewest leaves of span p: every
// qualifying node of the k-1 fullest leaves, and the rest from the leaf
// with the fewest qualifying nodes that still covers it (best fit). It
// returns nil when p has fewer than count qualifying nodes, else the takes,
// k and the qualifying nodes under p. It reads s.q, filled by chooseNodes.
func (s *state) pickLeaves(p span, count int) (takes []leafTake, k, qual int) {
	var order []int
	for li := p.lo; li < p.hi; li++ {
		if s.q[li] > 0 {
			order = append(order, li)
			qual += s.q[li]
		}
	}
	if qual < count {
		return nil, 0, qual
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.q[b], s.q[a]) })
	left := count
	i := 0
	for ; s.q[order[i]] < left; i++ {
		takes = append(takes, leafTake{leaf: order[i], n: s.q[order[i]]})
		left -= s.q[order[i]]
	}
	// order[i] covers the rest; a smaller leaf after it may too.
	last := order[i]
	for _, li := range order[i+1:] {
		if s.q[li] >= left && s.q[li] < s.q[last] {
			last = li
		}
	}
	takes = append(takes, leafTake{leaf: last, n: left})
	return takes, len(takes), qual
}

// bestFit returns n qualifying nodes (at least g free GPUs, c free CPUs
// and m free memory) of leaf li with the fewest free GPUs, ties by name.
func (s *state) bestFit(li, n, g, c int, m uint64) []int {
	var cand []int
	for _, ni := range s.v.leaves[li].nodes {
		if s.fitsNow(ni, g, c, m) {
			cand = append(cand, ni)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(s.free[a], s.free[b]) })
	return cand[:n]
}

// maxSeeds bounds how many starting GPUs chooseGPUs tries on a node that
// reports its topology, so a node with hundreds of GPUs stays cheap.
const maxSeeds = 64

// chooseGPUs picks g of node ni's free GPUs, ascending. When the node
// reports NVLink peers or NUMA nodes it prefers, in order, the most NVLink
// pairs inside the set, then the most pairs on one NUMA node, then the
// lowest positions; it builds sets greedily from each free GPU in turn
// (at most maxSeeds), stopping early at a set where every pair is
// NVLinked and on one NUMA node. Otherwise it takes the lowest free
// positions.
func (s *state) chooseGPUs(ni, g int) []int {
	if g <= 0 {
		return nil
	}
	n := &s.v.nodes[ni]
	var free []int
	for w := 0; w < wordsFor(len(n.node.GPUs)); w++ {
		for x := s.words[n.off+w]; x != 0; x &= x - 1 {
			free = append(free, w*64+bits.TrailingZeros64(x))
		}
	}
	if len(free) <= g || (n.peers == nil && n.numa == nil) {
		return free[:g]
	}
	var best []int
	bestLinks, bestNUMA := -1, -1
	if len(s.links) < len(n.node.GPUs) {
		s.links = make([]int, len(n.node.GPUs))
		s.sameNUMA = make([]int, len(n.node.GPUs))
		s.in = make([]bool, len(n.node.GPUs))
	}
	links, sameNUMA, in := s.links[:len(n.node.GPUs)], s.sameNUMA[:len(n.node.GPUs)], s.in[:len(n.node.GPUs)]
	// A set with every pair NVLinked (and on one NUMA node) cannot be
	// beaten; the search stops at the first one.
	perfectLinks, perfectNUMA := 0, 0
	if n.peers != nil {
		perfectLinks = g * (g - 1) / 2
	}
	if n.numa != nil {
		perfectNUMA = g * (g - 1) / 2
	}
	set := make([]int, 0, g)
	for si, seed := range free {
		if si == maxSeeds {
			break
		}
		clear(links)
		clear(sameNUMA)
		clear(in)
		set = set[:0]
		nLinks, nNUMA := 0, 0
		add := func(p int) {
			set = append(set, p)
			in[p] = true
			nLinks += links[p]
			nNUMA += sameNUMA[p]
			if n.peers != nil {
				for _, q := range n.peers[p] {
					links[q]++
				}
			}
			if n.numa != nil && n.numa[p] >= 0 {
				for _, q := range free {
					if n.numa[q] == n.numa[p] {
						sameNUMA[q]++
					}
				}
			}
		}
		add(seed)
		for len(set) < g {
			c := -1
			for _, q := range free {
				if !in[q] && (c < 0 || links[q] > links[c] || (links[q] == links[c] && sameNUMA[q] > sameNUMA[c])) {
					c = q
				}
			}
			add(c)
		}
		slices.Sort(set)
		if nLinks > bestLinks || (nLinks == bestLinks && (nNUMA > bestNUMA || (nNUMA == bestNUMA && slices.Compare(set, best) < 0))) {
			best, bestLinks, bestNUMA = append(best[:0], set...), nLinks, nNUMA
		}
		if bestLinks == perfectLinks && bestNUMA == perfectNUMA {
			break
		}
	}
	return best
}

// switchLimit is the most leaves job j may span if placed at now: its
// --switches count until SwitchesWait (DefaultSwitchesWait when zero)
// has passed since its submit, then 0, no limit: it takes what there is.
func switchLimit(j *cluster.Job, now time.Time) int {
	req := j.Spec.Request
	if req.Switches <= 0 {
		return 0
	}
	wait := req.SwitchesWait
	if wait <= 0 {
		wait = cluster.DefaultSwitchesWait
	}
	if !now.Before(j.SubmitTime.Add(wait)) {
		return 0
	}
	return req.Switches
}

// leavesOf counts the distinct leaves (switches or blocks) of nodes.
func (s *state) leavesOf(nodes []int) int {
	seen := make(map[int]struct{}, 4)
	for _, ni := range nodes {
		seen[s.v.nodes[ni].leaf] = struct{}{}
	}
	return len(seen)
}

// chooseCPUs picks k of node ni's free CPUs, ascending; nil when the node
// reports no CPUs. CPUs on the sockets of gpus come first (a GPU's NUMA
// node is taken as its socket), as Slurm binds a job's cores near its
// GPUs (--gpu-bind=closest), then the rest; lowest positions first within
// each, which with the node's numbering (cluster.Node.SocketOf) means one
// thread per core before a second. The node must have k free.
func (s *state) chooseCPUs(ni, k int, gpus []int) []int {
	n := &s.v.nodes[ni]
	if n.node.CPUs <= 0 || k <= 0 {
		return nil
	}
	var near []bool // by socket
	for _, p := range gpus {
		if numa := n.node.GPUs[p].NUMA; numa >= 0 && numa < max(n.node.Sockets, 1) {
			if near == nil {
				near = make([]bool, max(n.node.Sockets, 1))
			}
			near[numa] = true
		}
	}
	out := make([]int, 0, k)
	take := func(want func(p int) bool) {
		for w := 0; len(out) < k && w < wordsFor(n.node.CPUs); w++ {
			for x := s.cwords[n.coff+w]; x != 0 && len(out) < k; x &= x - 1 {
				if p := w*64 + bits.TrailingZeros64(x); want(p) {
					out = append(out, p)
				}
			}
		}
	}
	if near == nil {
		take(func(int) bool { return true })
	} else {
		take(func(p int) bool { return near[n.node.SocketOf(p)] })
		take(func(p int) bool { return !near[n.node.SocketOf(p)] })
	}
	slices.Sort(out)
	return out
}
