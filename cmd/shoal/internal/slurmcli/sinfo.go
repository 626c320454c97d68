package slurmcli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Slurm 22.05's sinfo formats ("#": as wide as the widest value, at least
// 9). Where sinfo aligns a column differently from what its format string
// says (the partition of the node view is right-aligned, the CPUs of the
// long node view left-aligned), these follow what it prints.
const (
	sinfoDefaultFormat  = "%#P %.5a %.10l %.6D %.6t %N"
	sinfoLongFormat     = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
	sinfoSummarizeFmt   = "%#P %.5a %.10l %.16F %N"
	sinfoNodeFormat     = "%#N %.6D %.#P %6t"
	sinfoNodeLongFormat = "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"
	sinfoMinAutoWidth   = 9
)

var sinfoOpts = []slurm.Option{
	{Long: "Node", Short: 'N', Arg: slurm.NoArg},
	optLong,
	optNoheaderH,
	optFormat,
	optPartition,
	{Long: "nodes", Short: 'n', Arg: slurm.NeedArg},
	{Long: "states", Short: 't', Arg: slurm.NeedArg},
	{Long: "summarize", Short: 's', Arg: slurm.NoArg},
	{Long: "responding", Short: 'r', Arg: slurm.NoArg},
	{Long: "dead", Short: 'd', Arg: slurm.NoArg},
	{Long: "all", Short: 'a', Arg: slurm.NoArg},
	{Long: "exact", Short: 'e', Arg: slurm.NoArg},
	optVerbose,
	{Long: "Format", Short: 'O', Arg: slurm.NeedArg, Unsupported: "use -o"},
	{Long: "list-reasons", Short: 'R', Arg: slurm.NoArg, Unsupported: "shoal nodes shows each drained node's reason"},
	{Long: "iterate", Short: 'i', Arg: slurm.NeedArg, Unsupported: "run it under watch(1)"},
	{Long: "sort", Short: 'S', Arg: slurm.NeedArg, Unsupported: "rows are listed by state, then by node name"},
	{Long: "reservation", Short: 'T', Arg: slurm.NoArg, Unsupported: "Shoal has no reservations"},
	optClusters,
	{Long: "json", Arg: slurm.NoArg, Unsupported: "use `shoal nodes --json`"},
	optHelp,
	optUsage,
}

// sinfoState is a node's state as sinfo prints it: compact (%t) and long
// (%T) names, and the rank sinfo sorts partition rows by (highest first).
// A DOWN node has stopped renewing its lease, which Slurm marks with "*"
// (not responding).
func sinfoState(n api.Node) (compact, long string, rank int) {
	switch n.State {
	case "DRAIN":
		if n.GPUsFree < n.GPUs {
			return "drng", "draining", 6
		}
		return "drain", "drained", 5
	case "MIXED":
		return "mix", "mixed", 4
	case "ALLOCATED":
		return "alloc", "allocated", 3
	case "IDLE":
		return "idle", "idle", 2
	case "DOWN":
		return "down*", "down*", 1
	}
	s := strings.ToLower(n.State)
	return s, s, 0
}

// sinfoNode is one node as one row of sinfo sees it: in one partition
// (a node in two partitions shows in both, as in Slurm).
type sinfoNode struct {
	api.Node
	part sinfoPart
}

// sinfoPart is what sinfo prints of a partition.
type sinfoPart struct {
	name      string
	isDefault bool
	maxTime   string // Slurm's form, "infinite" for none
}

// shoalPart is the one partition of a cluster whose queue policy has
// none: every node, no limit.
var shoalPart = sinfoPart{name: ShoalPartition, isDefault: true, maxTime: "infinite"}

// sinfoNodes places the nodes in the policy's partitions: one sinfoNode
// per partition a node is in, partitions by name; every node in
// shoalPart when there are none.
func sinfoNodes(nodes []api.Node, pol cluster.PolicyFile) ([]sinfoNode, error) {
	var out []sinfoNode
	if len(pol.Partitions) == 0 {
		for _, n := range nodes {
			out = append(out, sinfoNode{Node: n, part: shoalPart})
		}
		return out, nil
	}
	names := slices.Sorted(maps.Keys(pol.Partitions))
	for _, name := range names {
		f := pol.Partitions[name]
		sp := sinfoPart{name: name, isDefault: f.Default, maxTime: "infinite"}
		if f.MaxTime != "" {
			d, err := slurm.ParseTime(f.MaxTime)
			if err != nil {
				return nil, fmt.Errorf("partition %s: max_time: %w", name, err)
			}
			if d > 0 {
				sp.maxTime = slurm.FormatTime(d)
			}
		}
		var in map[string]bool
		if f.Nodes != "" {
			list, err := slurm.ExpandHostlist(f.Nodes)
			if err != nil {
				return nil, fmt.Errorf("partition %s: nodes: %w", name, err)
			}
			in = make(map[string]bool, len(list))
			for _, n := range list {
				in[n] = true
			}
		}
		for _, n := range nodes {
			if in == nil || in[n.Name] {
				out = append(out, sinfoNode{Node: n, part: sp})
			}
		}
	}
	return out, nil
}

// sinfoField is one % field of sinfo -o. A field with agg describes a set
// of nodes (a partition view row); the others are per node, and nodes
// whose per-node fields print the same share a row.
type sinfoField struct {
	letter byte
	header string
	one    func(n sinfoNode) string
	agg    func(ns []sinfoNode) string
}

var sinfoFields = []sinfoField{
	{letter: 'P', header: "PARTITION", one: func(n sinfoNode) string {
		if n.part.isDefault {
			return n.part.name + "*"
		}
		return n.part.name
	}},
	{letter: 'R', header: "PARTITION", one: func(n sinfoNode) string { return n.part.name }},
	{letter: 'a', header: "AVAIL", one: func(sinfoNode) string { return "up" }},
	{letter: 'l', header: "TIMELIMIT", one: func(n sinfoNode) string { return n.part.maxTime }},
	{letter: 's', header: "JOB_SIZE", one: func(sinfoNode) string { return "1-infinite" }},
	{letter: 'r', header: "ROOT", one: func(sinfoNode) string { return "no" }},
	{letter: 'h', header: "OVERSUBSCRIBE", one: func(sinfoNode) string { return "NO" }},
	{letter: 'g', header: "GROUPS", one: func(sinfoNode) string { return "all" }},
	{letter: 't', header: "STATE", one: func(n sinfoNode) string { c, _, _ := sinfoState(n.Node); return c }},
	{letter: 'T', header: "STATE", one: func(n sinfoNode) string { _, l, _ := sinfoState(n.Node); return l }},
	{letter: 'c', header: "CPUS", one: func(n sinfoNode) string { return strconv.Itoa(n.CPUs) }},
	{letter: 'z', header: "S:C:T", one: func(n sinfoNode) string {
		if n.Sockets > 0 {
			return fmt.Sprintf("%d:%d:%d", n.Sockets, n.CoresPerSocket, n.ThreadsPerCore)
		}
		return fmt.Sprintf("1:%d:1", n.CPUs)
	}},
	{letter: 'C', header: "CPUS(A/I/O/T)", agg: func(ns []sinfoNode) string {
		var a, i, o, t int
		for _, n := range ns {
			t += n.CPUs
			switch n.State {
			case "DOWN", "DRAIN":
				o += n.CPUs
			default:
				a += n.CPUsAlloc
				i += n.CPUs - n.CPUsAlloc
			}
		}
		return fmt.Sprintf("%d/%d/%d/%d", a, i, o, t)
	}},
	{letter: 'm', header: "MEMORY", one: func(n sinfoNode) string { return strconv.FormatUint(n.MemoryMiB, 10) }},
	{letter: 'd', header: "TMP_DISK", one: func(sinfoNode) string { return "0" }},
	{letter: 'w', header: "WEIGHT", one: func(sinfoNode) string { return "1" }},
	{letter: 'f', header: "AVAIL_FEATURES", one: func(n sinfoNode) string { return nodeFeatures(n.Node) }},
	{letter: 'b', header: "ACTIVE_FEATURES", one: func(n sinfoNode) string { return nodeFeatures(n.Node) }},
	{letter: 'G', header: "GRES", one: func(n sinfoNode) string {
		if n.GPUs == 0 {
			return "(null)"
		}
		return fmt.Sprintf("gpu:%d", n.GPUs)
	}},
	{letter: 'E', header: "REASON", one: func(n sinfoNode) string {
		switch {
		case n.Reason != "":
			return n.Reason
		case n.State == "DOWN":
			return "Not responding"
		}
		return "none"
	}},
	{letter: 'N', header: "NODELIST", agg: func(ns []sinfoNode) string { return slurm.CompressHostlist(nodeNames(ns)) }},
	{letter: 'n', header: "HOSTNAMES", agg: func(ns []sinfoNode) string { return strings.Join(nodeNames(ns), ",") }},
	{letter: 'D', header: "NODES", agg: func(ns []sinfoNode) string { return strconv.Itoa(len(ns)) }},
	{letter: 'F', header: "NODES(A/I/O/T)", agg: func(ns []sinfoNode) string {
		var a, i, o int
		for _, n := range ns {
			switch n.State {
			case "ALLOCATED", "MIXED":
				a++
			case "IDLE":
				i++
			default:
				o++
			}
		}
		return fmt.Sprintf("%d/%d/%d/%d", a, i, o, len(ns))
	}},
}

// nodeFeatures is a node's features as sinfo and scontrol print them.
func nodeFeatures(n api.Node) string {
	if len(n.Features) == 0 {
		return "(null)"
	}
	return strings.Join(n.Features, ",")
}

func nodeNames(ns []sinfoNode) []string {
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = n.Name
	}
	return names
}

func sinfoFieldByLetter(c byte) *sinfoField {
	for i := range sinfoFields {
		if sinfoFields[i].letter == c {
			return &sinfoFields[i]
		}
	}
	return nil
}

// sinfoCol is a parsed piece of an sinfo format.
type sinfoCol = formatCol[sinfoField]

// parseSinfoFormat parses %[.][#|width]letter fields and text; an unknown
// letter is an error, as in sinfo.
func parseSinfoFormat(format string) ([]sinfoCol, error) {
	var cols []sinfoCol
	err := scanFormat(format, true, func(t string) {
		cols = append(cols, sinfoCol{literal: t})
	}, func(f formatSpec) error {
		if f.letter == 0 {
			return slurmErrorf("Invalid node format specification: %s", f.raw)
		}
		field := sinfoFieldByLetter(f.letter)
		if field == nil {
			return slurmErrorf("Invalid node format specification: %c", f.letter)
		}
		cols = append(cols, specCol(field, f))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cols, nil
}

// sinfoQuery is what sinfo was asked to show.
type sinfoQuery struct {
	nodeView   bool
	long       bool
	summarize  bool
	noHeader   bool
	format     string
	parts      []string // -p: only these partitions
	nodes      map[string]bool
	states     []string
	responding bool
	dead       bool
}

func (q sinfoQuery) match(n sinfoNode) bool {
	if len(q.parts) > 0 && !slices.Contains(q.parts, n.part.name) || q.nodes != nil && !q.nodes[n.Name] {
		return false
	}
	if q.responding && n.State == "DOWN" || q.dead && n.State != "DOWN" {
		return false
	}
	if len(q.states) == 0 {
		return true
	}
	c, l, _ := sinfoState(n.Node)
	c, l = strings.TrimSuffix(c, "*"), strings.TrimSuffix(l, "*")
	for _, s := range q.states {
		switch {
		case s == c || s == l:
			return true
		case (s == "drain" || s == "drained") && (c == "drng" || c == "drain"):
			return true
		case s == "alloc" && c == "alloc", s == "allocated" && c == "alloc":
			return true
		}
	}
	return false
}

// Sinfo is sinfo: the partition view (one row per state), or with -N
// one row per node.
func Sinfo(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
	vals, err := cliOptions("sinfo", sinfoOpts, args, stderr)
	if err != nil {
		return err
	}
	var q sinfoQuery
	for _, v := range vals {
		switch v.Opt.Long {
		case "Node":
			q.nodeView = true
		case "long":
			q.long = true
		case "summarize":
			q.summarize = true
		case "noheader":
			q.noHeader = true
		case "format":
			q.format = v.Value
		case "partition":
			q.parts = append(q.parts, splitList(v.Value)...)
		case "nodes":
			names, err := slurm.ExpandHostlist(v.Value)
			if err != nil {
				return err
			}
			q.nodes = map[string]bool{}
			for _, n := range names {
				q.nodes[n] = true
			}
		case "states":
			for _, s := range splitList(v.Value) {
				q.states = append(q.states, strings.ToLower(s))
			}
		case "responding":
			q.responding = true
		case "dead":
			q.dead = true
		}
	}
	_, in, err := readAgent(ctx, connect, readNodes|readPolicy)
	if err != nil {
		return err
	}
	all, err := sinfoNodes(in.nodes, in.policy.Policy)
	if err != nil {
		return err
	}
	var shown []sinfoNode
	for _, n := range all {
		if q.match(n) {
			shown = append(shown, n)
		}
	}
	format := q.format
	if format == "" {
		switch {
		case q.summarize:
			format = sinfoSummarizeFmt
		case q.nodeView && q.long:
			format = sinfoNodeLongFormat
		case q.nodeView:
			format = sinfoNodeFormat
		case q.long:
			format = sinfoLongFormat
		default:
			format = sinfoDefaultFormat
		}
	}
	cols, err := parseSinfoFormat(format)
	if err != nil {
		return err
	}
	if q.long && q.format == "" {
		fmt.Fprintln(stdout, time.Now().Format("Mon Jan _2 15:04:05 2006"))
	}
	printSinfo(stdout, cols, sinfoRows(cols, shown, q.nodeView), !q.noHeader)
	return nil
}

// sinfoRows groups nodes into rows: one per node in the node view, else
// one per set of nodes whose per-node fields print the same. Rows are in
// sinfo's order: by state (drained first, down last), then by node name.
func sinfoRows(cols []sinfoCol, nodes []sinfoNode, nodeView bool) [][]sinfoNode {
	nodes = slices.Clone(nodes)
	slices.SortStableFunc(nodes, func(a, b sinfoNode) int { return slurm.CompareNodeNames(a.Name, b.Name) })
	var rows [][]sinfoNode
	if nodeView {
		for _, n := range nodes {
			rows = append(rows, []sinfoNode{n})
		}
		return rows
	}
	index := map[string]int{}
	for _, n := range nodes {
		var key strings.Builder
		for _, c := range cols {
			if c.field != nil && c.field.one != nil {
				key.WriteString(c.field.one(n))
				key.WriteByte(0)
			}
		}
		if i, ok := index[key.String()]; ok {
			rows[i] = append(rows[i], n)
			continue
		}
		index[key.String()] = len(rows)
		rows = append(rows, []sinfoNode{n})
	}
	slices.SortStableFunc(rows, func(a, b []sinfoNode) int {
		_, _, ra := sinfoState(a[0].Node)
		_, _, rb := sinfoState(b[0].Node)
		return cmp.Or(strings.Compare(a[0].part.name, b[0].part.name), rb-ra)
	})
	return rows
}

// printSinfo prints the header (when asked) and the rows.
func printSinfo(w io.Writer, cols []sinfoCol, rows [][]sinfoNode, header bool) {
	value := func(f *sinfoField, ns []sinfoNode) string {
		if f.agg != nil {
			return f.agg(ns)
		}
		return f.one(ns[0])
	}
	cols = slices.Clone(cols)
	for i, c := range cols {
		if c.auto {
			cols[i].width = sinfoMinAutoWidth
			for _, r := range rows {
				cols[i].width = max(cols[i].width, len(value(c.field, r)))
			}
		}
	}
	if header {
		printFormatLine(w, cols, func(f *sinfoField) string { return f.header })
	}
	for _, r := range rows {
		printFormatLine(w, cols, func(f *sinfoField) string { return value(f, r) })
	}
}
