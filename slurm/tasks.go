package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// TasksPerNode formats per-node task counts, in rank order, as Slurm's
// SLURM_TASKS_PER_NODE: a run of k > 1 equal counts n is "n(xk)", a lone
// count is "n", runs are joined by commas. [2,2] is "2(x2)", [2,1] is
// "2,1", [3,3,1] is "3(x2),1"; no counts give "".
func TasksPerNode(counts []int) string {
	var b strings.Builder
	for i := 0; i < len(counts); {
		j := i + 1
		for j < len(counts) && counts[j] == counts[i] {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(counts[i]))
		if j-i > 1 {
			b.WriteString("(x")
			b.WriteString(strconv.Itoa(j - i))
			b.WriteByte(')')
		}
		i = j
	}
	return b.String()
}

// Distribution is how a job's or step's tasks are laid out on its nodes
// (-m/--distribution's first part): which global rank runs on which
// node. The zero value is Slurm's default (see DefaultDistribution).
type Distribution struct {
	// Kind is DistBlock, DistCyclic or DistPlane; "" is the default.
	Kind string
	// Plane is plane=N's block size.
	Plane int
	// Levels is the rest after the node's part, lowercased, with its
	// leading colon (":cyclic", ":block:fcyclic"): how tasks bind to
	// sockets and cores inside a node, a hint Shoal keeps for
	// SLURM_DISTRIBUTION and does not act on.
	Levels string
}

// Distribution kinds.
const (
	DistBlock  = "block"
	DistCyclic = "cyclic"
	DistPlane  = "plane"
)

// maxPlane bounds plane=N.
const maxPlane = 1 << 20

// ParseDistribution reads a --distribution value as Slurm 22.05 does:
// block, cyclic, arbitrary is refused (Shoal has no host files for ranks),
// plane=N, or * (the default), each optionally followed by :LEVEL and
// :LEVEL (block, cyclic, fcyclic or *: how tasks bind to sockets and
// cores, a hint Shoal accepts and does not act on). Slurm's ,Pack and
// ,NoPack are refused: Shoal always spreads tasks over every node.
func ParseDistribution(v string) (Distribution, error) {
	var d Distribution
	first, more, comma := strings.Cut(v, ",")
	if comma {
		return d, fmt.Errorf("distribution %q: %q: Shoal spreads tasks over every node and takes no Pack or NoPack", clip(v), clip(more))
	}
	kind, levels, _ := strings.Cut(first, ":")
	switch k := strings.ToLower(kind); {
	case k == "*":
	case k == DistBlock || k == DistCyclic:
		d.Kind = k
	case strings.HasPrefix(k, "plane="):
		n, err := strconv.Atoi(k[len("plane="):])
		if err != nil || n < 1 || n > maxPlane {
			return d, fmt.Errorf("distribution %q: plane size: want 1 to %d", clip(v), maxPlane)
		}
		d.Kind, d.Plane = DistPlane, n
	case k == "arbitrary":
		return d, fmt.Errorf("distribution %q: arbitrary needs a host file per rank, which Shoal does not read; use block, cyclic or plane=N", clip(v))
	default:
		return d, fmt.Errorf("distribution %q: want block, cyclic, plane=N or *, optionally :block|cyclic|fcyclic for sockets and cores", clip(v))
	}
	if levels != "" {
		ls := strings.Split(levels, ":")
		if len(ls) > 2 {
			return d, fmt.Errorf("distribution %q: at most two levels after the node's", clip(v))
		}
		for _, l := range ls {
			switch strings.ToLower(l) {
			case "*", DistBlock, DistCyclic, "fcyclic":
			default:
				return d, fmt.Errorf("distribution %q: level %q: want block, cyclic, fcyclic or *", clip(v), clip(l))
			}
		}
		d.Levels = ":" + strings.ToLower(levels)
	}
	return d, nil
}

// DefaultDistribution is what srun uses when not given one, as Slurm
// 22.05 chooses it: cyclic when there are no more tasks than nodes, block
// otherwise (SLURM_DISTRIBUTION names it either way).
func DefaultDistribution(ntasks, nodes int) string {
	if ntasks <= nodes {
		return DistCyclic
	}
	return DistBlock
}

// Name is d as SLURM_DISTRIBUTION shows it for ntasks on nodes, as Slurm
// 22.05 does: the kind (the default's for "" or *; plane=N is "plane")
// and the levels, lowercased ("*:CYCLIC" with 7 tasks on 3 nodes is
// "block:cyclic").
func (d Distribution) Name(ntasks, nodes int) string {
	k := d.Kind
	if k == "" {
		k = DefaultDistribution(ntasks, nodes)
	}
	return k + d.Levels
}

// String is d as --distribution takes it back ("" for the default).
func (d Distribution) String() string {
	switch d.Kind {
	case "":
		if d.Levels == "" {
			return ""
		}
		return "*" + d.Levels
	case DistPlane:
		return "plane=" + strconv.Itoa(d.Plane) + d.Levels
	}
	return d.Kind + d.Levels
}

// Layout lays ntasks tasks out on nodes nodes as Slurm does when every
// node has room for them: it returns, for each node in order, the global
// ranks it runs, in increasing order (local rank i runs global rank
// out[node][i]).
//
//   - block (the default): consecutive ranks, the first ntasks%nodes
//     nodes one more (5 on 2: 0-2, 3-4);
//   - cyclic: round robin over the nodes (5 on 2: 0,2,4 and 1,3);
//   - plane=N: blocks of N ranks round robin (plane=2, 5 on 2: 0,1,4
//     and 2,3).
//
// With fewer tasks than nodes the last nodes run none; nodes < 1 or
// ntasks < 0 give nil. LayoutCounts and RankAt answer the same without
// building the lists.
func Layout(ntasks, nodes int, d Distribution) [][]int {
	counts := LayoutCounts(ntasks, nodes, d)
	if counts == nil {
		return nil
	}
	out := make([][]int, nodes)
	for n, c := range counts {
		out[n] = make([]int, c)
		for i := range c {
			out[n][i] = RankAt(ntasks, nodes, d, n, i)
		}
	}
	return out
}

// LayoutCounts is how many tasks each node runs in Layout(ntasks, nodes,
// d), in O(nodes).
func LayoutCounts(ntasks, nodes int, d Distribution) []int {
	if nodes < 1 || ntasks < 0 {
		return nil
	}
	counts := make([]int, nodes)
	if d.Kind == DistPlane {
		p := max(d.Plane, 1)
		blocks := (ntasks + p - 1) / p
		for n := range counts {
			k := blocks / nodes
			if n < blocks%nodes {
				k++
			}
			counts[n] = k * p
		}
		if blocks > 0 { // the last block may be short
			counts[(blocks-1)%nodes] -= blocks*p - ntasks
		}
		return counts
	}
	// block and cyclic give the same counts.
	base, extra := ntasks/nodes, ntasks%nodes
	for n := range counts {
		counts[n] = base
		if n < extra {
			counts[n]++
		}
	}
	return counts
}

// RankAt is the global rank of local task local on node node in
// Layout(ntasks, nodes, d), for a local below that node's count.
func RankAt(ntasks, nodes int, d Distribution, node, local int) int {
	nodes = max(nodes, 1)
	switch d.Kind {
	case DistCyclic:
		return local*nodes + node
	case DistPlane:
		p := max(d.Plane, 1)
		return ((local/p)*nodes+node)*p + local%p
	}
	base, extra := ntasks/nodes, ntasks%nodes
	return node*base + min(node, extra) + local
}

// BlockCounts is how many of ntasks tasks each node runs when Slurm lays
// them out in blocks on nodes that can each hold caps[i] (their CPUs
// over the CPUs per task), as Slurm 22.05's _task_layout_block does
// without Pack: one task on each node that can hold one, then each node
// in order filled up to its cap, then what is left round robin over
// every node. On idle nodes this is also how Slurm's allocation packs a
// job's tasks: -n 5 on 2 nodes of 16 CPUs runs 4 and 1 (the ranks in
// blocks: 0-3, 4). It returns nil for no nodes or ntasks < 0.
func BlockCounts(ntasks int, caps []int) []int {
	if len(caps) == 0 || ntasks < 0 {
		return nil
	}
	counts := make([]int, len(caps))
	left := ntasks
	for i, c := range caps {
		if left > 0 && c > 0 {
			counts[i]++
			left--
		}
	}
	for i, c := range caps {
		if k := min(max(c-counts[i], 0), left); k > 0 {
			counts[i] += k
			left -= k
		}
	}
	if left > 0 {
		for i := range counts {
			counts[i] += left / len(counts)
			if i < left%len(counts) {
				counts[i]++
			}
		}
	}
	return counts
}

// NodeRoom is one node of a job's allocation as Spread sees it.
type NodeRoom struct {
	// CPUs is what the node has free for the job.
	CPUs int
	// MaxTasks, above zero, is the most of the job's tasks the node may
	// run: its GPUs over --gpus-per-task, or --ntasks-per-node.
	MaxTasks int
	// Named says -w named the node: Slurm takes named nodes first.
	Named bool
}

// Spread is how many of a job's ntasks tasks of cpt CPUs each each of
// its nodes can hold, as Slurm 22.05's cons_tres sizes a job's CPUs on
// the nodes it chose: the nodes named by -w first, then the others, in
// order, each takes the CPUs it has free, but no more than the job still
// needs less one CPU for each node after it, in whole tasks, and at
// least one task (then MaxTasks bounds it). On idle 16-CPU nodes -n 5 on
// 2 nodes holds 4 and 1; with 2 CPUs free on the first, 2 and 3. The
// counts are in node order; Deal lays the tasks out over them. It
// returns nil for no nodes.
func Spread(nodes []NodeRoom, ntasks, cpt int) []int {
	if len(nodes) == 0 {
		return nil
	}
	cpt = max(cpt, 1)
	order := make([]int, 0, len(nodes))
	for _, named := range []bool{true, false} {
		for i, n := range nodes {
			if n.Named == named {
				order = append(order, i)
			}
		}
	}
	caps := make([]int, len(nodes))
	left := max(ntasks, 0) * cpt // CPUs the job still needs
	for v, i := range order {
		after := len(order) - v - 1
		t := max(min(nodes[i].CPUs, left-after)/cpt, 1)
		if m := nodes[i].MaxTasks; m > 0 {
			t = min(t, m)
		}
		caps[i] = t
		left -= t * cpt
	}
	return caps
}

// Deal lays ntasks tasks out on nodes that hold caps[i] tasks each, as
// Slurm 22.05's srun numbers a step's (or a job's own) tasks over the
// CPUs of its nodes (caps: each node's CPUs over the CPUs per task). It
// returns, for each node in order, the global ranks it runs, in
// increasing order.
//
//   - block (the default): one task on each node that holds one more,
//     round after round, as many as each holds, then round robin over
//     every node; the ranks in blocks (caps 4 and 4, 5 tasks: 0-2, 3-4;
//     caps 4 and 1: 0-3, 4);
//   - cyclic: the same rounds, each dealing the next rank (caps 4 and 1:
//     0,2,3,4 and 1);
//   - plane=N: rounds of up to N ranks to each node that holds more, then
//     N at a time round robin (plane=4, caps 8 and 8, 5 tasks: 0-3, 4).
//
// On nodes with room for every task, this is Layout. It returns nil for
// no nodes or ntasks < 0.
func Deal(ntasks int, caps []int, d Distribution) [][]int {
	if len(caps) == 0 || ntasks < 0 {
		return nil
	}
	out := make([][]int, len(caps))
	switch d.Kind {
	case DistCyclic:
		dealRounds(ntasks, caps, 1, func(i, rank int) { out[i] = append(out[i], rank) })
	case DistPlane:
		dealRounds(ntasks, caps, max(d.Plane, 1), func(i, rank int) { out[i] = append(out[i], rank) })
	default:
		rank := 0
		for i, c := range DealCounts(ntasks, caps, d) {
			out[i] = make([]int, c)
			for l := range c {
				out[i][l] = rank
				rank++
			}
		}
	}
	return out
}

// DealCounts is how many tasks each node runs in Deal(ntasks, caps, d).
func DealCounts(ntasks int, caps []int, d Distribution) []int {
	if len(caps) == 0 || ntasks < 0 {
		return nil
	}
	counts := make([]int, len(caps))
	step := 1
	if d.Kind == DistPlane {
		step = max(d.Plane, 1)
	}
	dealRounds(ntasks, caps, step, func(i, _ int) { counts[i]++ })
	return counts
}

// dealRounds deals ranks 0 to ntasks-1 to the nodes in rounds: each
// round gives every node in order up to step ranks while it holds more
// (counts below caps); once a round finds no room, every node takes step
// a round. It calls give for each rank in order. Every round but the
// last deals at least one rank, so it ends after ntasks+1 rounds at most.
func dealRounds(ntasks int, caps []int, step int, give func(node, rank int)) {
	counts := make([]int, len(caps))
	over := false
	for rank := 0; rank < ntasks; {
		dealt := false
		for i := range caps {
			for k := 0; k < step && rank < ntasks && (over || counts[i] < caps[i]); k++ {
				give(i, rank)
				counts[i]++
				rank++
				dealt = true
			}
		}
		if !dealt {
			over = true
		}
	}
}
