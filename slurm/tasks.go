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
