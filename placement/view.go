package placement

import (
	"cmp"
	"math/bits"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// View is the cluster as placement sees it: every known node, which of
// its GPUs are free, and which job holds the others until when. Build it
// with NewView. Place and PlaceWith only read it, so concurrent calls may
// share it; Start and Finish change it in place (the simulator's
// incremental view) and must not run alongside any other call on the
// same View.
type View struct {
	nodes   []nodeInfo     // every known node, by name
	byName  map[string]int // name -> index in nodes
	leaves  []leafInfo     // leaf switches with usable nodes, by (parent, name)
	parents []span         // runs of leaves sharing a parent, in leaf order
	words   []uint64       // free-GPU bitsets of all nodes, back to back
	cwords  []uint64       // free-CPU bitsets of the nodes that report CPUs
	// totals holds the GPU count of every usable node, ascending, to tell
	// whether a request could fit were the usable nodes empty.
	totals []int
	// histLen is the size of all leaves' free-count histograms together.
	histLen int
	// maxGPUs is the most GPUs any usable node has.
	maxGPUs int
	// minMem is the least memory of any usable node, minCPUs the fewest
	// CPUs of one that reports them: a job asking for no more takes the
	// aggregate fast path.
	minMem  uint64
	minCPUs int
	// cpuShare and memShare are the least CPUs and memory per GPU of any
	// usable node with GPUs (a node reporting no CPUs does not count):
	// what a GPU brings on every node. A job asking for no more per GPU
	// may take the aggregate fast path; see state.tight.
	cpuShare int
	memShare uint64
	// held lists every job holding GPUs or nodes, sorted by holderOrder:
	// expected end ascending, jobs that never end last. Backfill frees
	// them in this order to find when a blocked job could start.
	held []holder
	// heldEnd maps a holder's job ID to its end, to find it in held.
	heldEnd map[cluster.JobID]time.Time
	// dup counts, per GPU slot (node off*64 + position), the holders
	// beyond the first of a GPU that several jobs' allocations list. The
	// FSM never allows that; NewView tolerates it, and keeps such a GPU
	// taken until its last holder finishes. Nil when there is none.
	dup map[int]int
	// parts are the partitions jobs may name (WithPartitions); nil: none.
	parts map[string]partInfo
	// links are the links between switches their own reports show
	// (WithSwitchLinks); nil: none.
	links map[string][]string
}

// holder is one job holding resources: what, and until when.
type holder struct {
	id cluster.JobID
	// end is StartTime + TimeLimit; zero when the job has no limit (or no
	// start time), so it never ends as far as a reservation is concerned.
	end   time.Time
	nodes []heldNode // by node index, each node once
	// excl is set for a job holding its nodes whole (Request.Exclusive).
	excl bool
}

// heldNode is one node's share of a holder: GPU and CPU positions,
// ascending, distinct and in range, and memory (MiB).
type heldNode struct {
	node int
	gpus []int
	cpus []int
	mem  uint64
}

// holderOrder sorts holders by end, never-ending ones last, then by ID.
func holderOrder(aEnd time.Time, aID cluster.JobID, bEnd time.Time, bID cluster.JobID) int {
	switch {
	case aEnd.IsZero() != bEnd.IsZero():
		if aEnd.IsZero() {
			return 1
		}
		return -1
	case !aEnd.Equal(bEnd):
		return aEnd.Compare(bEnd)
	}
	return cmp.Compare(aID, bID)
}

// expectedEnd is when a job holding resources is expected to release
// them: StartTime + TimeLimit, or zero (never) without both.
func expectedEnd(j *cluster.Job) time.Time {
	if j.Spec.Request.TimeLimit <= 0 || j.StartTime.IsZero() {
		return time.Time{}
	}
	return j.StartTime.Add(j.Spec.Request.TimeLimit)
}

// nodeInfo is one node and where its state lives in the View.
type nodeInfo struct {
	node   *cluster.Node
	usable bool
	leaf   int // index in View.leaves; -1 when not usable
	off    int // first word of the free bitset in View.words
	free   int // free GPUs
	// coff is the first word of the free-CPU bitset in View.cwords, cfree
	// the free CPUs (unlimitedCPUs for a node that reports none), mfree
	// the memory no job holds (MiB).
	coff  int
	cfree int
	mfree uint64
	// jobs counts the holders with an unreleased entry on the node (GPU-less
	// jobs too), excl those of them holding it whole: an exclusive job
	// needs jobs == 0, and no job may join a node with excl > 0.
	jobs, excl int
	// peers lists, per GPU position, the positions it has NVLink to (made
	// symmetric); nil when the node reports no NVLink.
	peers [][]int
	// numa is each GPU's NUMA node; nil when the node reports none.
	numa []int
}

// leafInfo is one leaf switch: its usable nodes and its free histogram.
type leafInfo struct {
	parent, name string
	nodes        []int // indices in View.nodes, by name
	hist         int   // offset of the histogram: hist[f] = nodes with f free GPUs
	maxGPUs      int   // histogram has maxGPUs+1 buckets
}

// span is the half-open run [lo, hi) of leaves under one parent.
type span struct{ lo, hi int }

func wordsFor(gpus int) int { return (gpus + 63) / 64 }

// unlimitedCPUs stands for the free CPUs of a node that reports none: it
// is not judged on CPUs (and no job takes any there).
const unlimitedCPUs = 1 << 30

// fullBits sets the first n bits of words.
func fullBits(words []uint64, n int) {
	for w := range wordsFor(n) {
		words[w] = ^uint64(0)
	}
	if r := n % 64; r != 0 {
		words[wordsFor(n)-1] = 1<<r - 1
	}
}

// NewView builds the view from the FSM's nodes and jobs. Free GPUs are a
// node's GPUs minus those in any job's Alloc entry for that node with
// Released false. Nodes that are not Schedulable (down, left, drained) are
// known but not usable. Every job holding something is recorded with its
// expected end (StartTime + Request.TimeLimit; never without a limit) for
// backfill; of two jobs with one ID, the first one given is recorded and
// the other's GPUs stay taken for good. Neither slice, nor anything they
// point to, is modified; nil entries are skipped.
func NewView(nodes []*cluster.Node, jobs []*cluster.Job) *View {
	v := &View{byName: make(map[string]int, len(nodes)), heldEnd: make(map[cluster.JobID]time.Time)}
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if _, dup := v.byName[n.Name]; dup {
			continue
		}
		v.byName[n.Name] = len(v.nodes)
		v.nodes = append(v.nodes, nodeInfo{node: n})
	}
	slices.SortFunc(v.nodes, func(a, b nodeInfo) int { return cmp.Compare(a.node.Name, b.node.Name) })
	nwords, cwords := 0, 0
	for i := range v.nodes {
		ni := &v.nodes[i]
		v.byName[ni.node.Name] = i
		ni.off = nwords
		nwords += wordsFor(len(ni.node.GPUs))
		ni.coff = cwords
		cwords += wordsFor(max(ni.node.CPUs, 0))
	}
	v.words = make([]uint64, nwords)
	v.cwords = make([]uint64, cwords)
	for i := range v.nodes {
		ni := &v.nodes[i]
		fullBits(v.words[ni.off:], len(ni.node.GPUs))
		fullBits(v.cwords[ni.coff:], max(ni.node.CPUs, 0))
		ni.cfree, ni.mfree = unlimitedCPUs, ni.node.MemoryMiB
		if ni.node.CPUs > 0 {
			ni.cfree = ni.node.CPUs
		}
	}
	for _, j := range jobs {
		if j == nil || j.Alloc == nil {
			continue
		}
		held, _ := v.holdings(j.ID, j.Alloc, false)
		if len(held) == 0 {
			continue
		}
		for _, h := range held {
			ni := &v.nodes[h.node]
			ni.jobs++
			if j.Spec.Request.Exclusive {
				ni.excl++
			}
			v.holdCPUsMem(ni, h)
			for _, p := range h.gpus {
				if w := &v.words[ni.off+p/64]; *w&(1<<(p%64)) != 0 {
					*w &^= 1 << (p % 64)
				} else {
					if v.dup == nil {
						v.dup = make(map[int]int)
					}
					v.dup[ni.off*64+p]++
				}
			}
		}
		if _, seen := v.heldEnd[j.ID]; !seen {
			end := expectedEnd(j)
			v.heldEnd[j.ID] = end
			v.held = append(v.held, holder{id: j.ID, end: end, nodes: held, excl: j.Spec.Request.Exclusive})
		}
	}
	slices.SortFunc(v.held, func(a, b holder) int { return holderOrder(a.end, a.id, b.end, b.id) })
	for i := range v.nodes {
		ni := &v.nodes[i]
		for w := 0; w < wordsFor(len(ni.node.GPUs)); w++ {
			ni.free += bits.OnesCount64(v.words[ni.off+w])
		}
		ni.peers, ni.numa = gpuTopology(ni.node.GPUs)
		ni.leaf = -1
		ni.usable = ni.node.Schedulable()
	}
	v.buildLeaves()
	return v
}

// holdCPUsMem takes h's CPUs and memory out of node ni's free ones. A CPU
// another holder already took stays taken (the FSM never allows that;
// the view tolerates it, as for GPUs, without counting it twice).
func (v *View) holdCPUsMem(ni *nodeInfo, h heldNode) {
	for _, p := range h.cpus {
		if w := &v.cwords[ni.coff+p/64]; *w&(1<<(p%64)) != 0 {
			*w &^= 1 << (p % 64)
			ni.cfree--
		}
	}
	ni.mfree -= min(ni.mfree, h.mem)
}

// freeCPUsMem gives h's CPUs and memory back to node ni; the inverse of
// holdCPUsMem.
func (v *View) freeCPUsMem(ni *nodeInfo, h heldNode) {
	for _, p := range h.cpus {
		if w := &v.cwords[ni.coff+p/64]; *w&(1<<(p%64)) == 0 {
			*w |= 1 << (p % 64)
			ni.cfree++
		}
	}
	ni.mfree = min(ni.mfree+h.mem, ni.node.MemoryMiB)
}

// WithSwitchLinks makes v group leaves under the parents the switches'
// own LLDP reports give (cluster.SwitchLinks) where no node of a leaf
// announces one (cluster.LeafParents). Call it before any placement on
// v.
func (v *View) WithSwitchLinks(links map[string][]string) *View {
	if len(links) == 0 {
		return v
	}
	v.links = links
	v.totals, v.leaves, v.parents, v.histLen = nil, nil, nil, 0
	for i := range v.nodes {
		v.nodes[i].leaf = -1
	}
	v.buildLeaves()
	return v
}

// blockParent is the parent all NVLink blocks share in the leaf grouping;
// no switch name can be it (names are printable).
const blockParent = "\x00block"

// buildLeaves groups the usable nodes by (parent, leaf switch), or by
// NVLink block for nodes that report one.
func (v *View) buildLeaves() {
	var usable []int
	for i := range v.nodes {
		if v.nodes[i].usable {
			usable = append(usable, i)
			v.totals = append(v.totals, len(v.nodes[i].node.GPUs))
		}
	}
	v.cpuShare, v.memShare = unlimitedCPUs, 0
	memShareSet := false
	for k, i := range usable {
		n := v.nodes[i].node
		if m := n.MemoryMiB; k == 0 || m < v.minMem {
			v.minMem = m
		}
		if c := n.CPUs; c > 0 && (v.minCPUs == 0 || c < v.minCPUs) {
			v.minCPUs = c
		}
		if g := len(n.GPUs); g > 0 {
			if n.CPUs > 0 {
				v.cpuShare = min(v.cpuShare, n.CPUs/g)
			}
			if m := n.MemoryMiB / uint64(g); !memShareSet || m < v.memShare {
				v.memShare, memShareSet = m, true
			}
		}
	}
	slices.Sort(v.totals)
	if len(v.totals) > 0 {
		v.maxGPUs = v.totals[len(v.totals)-1]
	}
	// A leaf's nodes may announce different parents, or some none (on
	// Ethernet a node sees only its leaf): the leaf goes under the parent
	// cluster.LeafParents agrees on, so its nodes stay one leaf.
	places := make([]cluster.Topology, 0, len(v.nodes))
	for _, ni := range v.nodes {
		places = append(places, ni.node.Topology)
	}
	parents, _ := cluster.LeafParents(places, v.links)
	key := func(i int) cluster.Topology {
		t := v.nodes[i].node.Topology.WithLeafParent(parents)
		if t.Block != "" {
			// An NVLink block (Slurm's topology/block) stands in for the
			// leaf switch, and all blocks are siblings: a job that fits one
			// block stays in it, best fit, and a larger one spreads over
			// the fewest blocks, filling the fullest first.
			return cluster.Topology{SwitchParent: blockParent, Switch: t.Block}
		}
		return t
	}
	slices.SortStableFunc(usable, func(a, b int) int {
		ta, tb := key(a), key(b)
		return cmp.Or(cmp.Compare(ta.SwitchParent, tb.SwitchParent), cmp.Compare(ta.Switch, tb.Switch))
	})
	for _, i := range usable {
		t := key(i)
		if n := len(v.leaves); n == 0 || v.leaves[n-1].parent != t.SwitchParent || v.leaves[n-1].name != t.Switch {
			v.leaves = append(v.leaves, leafInfo{parent: t.SwitchParent, name: t.Switch})
		}
		l := &v.leaves[len(v.leaves)-1]
		l.nodes = append(l.nodes, i)
		l.maxGPUs = max(l.maxGPUs, len(v.nodes[i].node.GPUs))
		v.nodes[i].leaf = len(v.leaves) - 1
	}
	for li := range v.leaves {
		l := &v.leaves[li]
		l.hist = v.histLen
		v.histLen += l.maxGPUs + 1
		if n := len(v.parents); n == 0 || v.leaves[v.parents[n-1].lo].parent != l.parent {
			v.parents = append(v.parents, span{lo: li, hi: li})
		}
		v.parents[len(v.parents)-1].hi = li + 1
	}
}

// gpuTopology returns the NVLink adjacency (by position, symmetric,
// ascending) and NUMA nodes of a node's GPUs, each nil when the node
// reports none.
func gpuTopology(gpus []cluster.GPU) (peers [][]int, numa []int) {
	var pos map[int]int // GPU.Index -> position, when they differ
	for p, g := range gpus {
		if g.Index != p {
			pos = make(map[int]int, len(gpus))
			break
		}
	}
	for p := len(gpus) - 1; pos != nil && p >= 0; p-- {
		pos[gpus[p].Index] = p // the first GPU with an Index wins
	}
	// adj is a len(gpus) x len(gpus) bit matrix, so repeated and one-sided
	// peer lists come out symmetric and without duplicates.
	var adj []uint64
	words := wordsFor(len(gpus))
	edges := 0
	for p, g := range gpus {
		for _, idx := range g.NVLinkPeers {
			q, ok := idx, idx >= 0 && idx < len(gpus)
			if pos != nil {
				q, ok = pos[idx]
			}
			if !ok || q == p {
				continue
			}
			if adj == nil {
				adj = make([]uint64, len(gpus)*words)
			}
			for _, e := range [2][2]int{{p, q}, {q, p}} {
				w := &adj[e[0]*words+e[1]/64]
				if *w&(1<<(e[1]%64)) == 0 {
					*w |= 1 << (e[1] % 64)
					edges++
				}
			}
		}
		if g.NUMA >= 0 && numa == nil {
			numa = make([]int, len(gpus))
		}
	}
	if adj != nil {
		peers = make([][]int, len(gpus))
		flat := make([]int, 0, edges)
		for p := range gpus {
			start := len(flat)
			for w := 0; w < words; w++ {
				for x := adj[p*words+w]; x != 0; x &= x - 1 {
					flat = append(flat, w*64+bits.TrailingZeros64(x))
				}
			}
			peers[p] = flat[start:len(flat):len(flat)]
		}
	}
	if numa != nil {
		for p, g := range gpus {
			numa[p] = g.NUMA
		}
	}
	return peers, numa
}

// fitsEmpty reports whether n nodes with g GPUs each exist among the
// usable nodes, were they all idle.
func (v *View) fitsEmpty(n, g int) bool {
	i, _ := slices.BinarySearch(v.totals, g)
	return len(v.totals)-i >= n
}

// memShort reports whether some usable node has less memory than req
// asks for, so that a node scan must pick the nodes.
func (v *View) memShort(req cluster.Request) bool {
	return req.MemPerNode() > v.minMem
}

// cpuShort reports whether some usable node has fewer CPUs than req's
// ranks ask for on one node.
func (v *View) cpuShort(req cluster.Request) bool {
	return v.minCPUs > 0 && req.CPUsPerNode() > v.minCPUs
}

// hasCPUs reports whether node n has the CPUs req asks for on one node
// (a node that reports none is not judged), and hasMem the memory.
func hasCPUs(n *cluster.Node, req cluster.Request) bool {
	return n.CPUs <= 0 || n.CPUs >= req.CPUsPerNode()
}

func hasMem(n *cluster.Node, req cluster.Request) bool {
	return req.MemWholeNode || n.MemoryMiB >= req.MemPerNode()
}

// perGPU is what req asks per GPU, rounded up: CPUs and memory.
func perGPU(req cluster.Request) (int, uint64) {
	g := req.GPUsPerNode
	if g <= 0 {
		return 0, 0
	}
	return (req.CPUsPerNode() + g - 1) / g, (req.MemPerNode() + uint64(g) - 1) / uint64(g)
}

// aggregated reports whether req may take the aggregate fast path: it asks
// for GPUs, takes no node whole, and asks for no more CPUs and memory per
// GPU than every usable node gives per GPU (cpuShare, memShare). Others
// scan the nodes one by one.
func (v *View) aggregated(req cluster.Request) bool {
	if req.GPUsPerNode <= 0 || req.WholeMem() || req.Constrained() || v.restricts(req.Partition) || v.memShort(req) || v.cpuShort(req) {
		return false
	}
	c, m := perGPU(req)
	return c <= v.cpuShare && m <= v.memShare
}
