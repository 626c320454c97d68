package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

func newTopologyCmd(g *globalFlags) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Print the switch tree and NVLink blocks the cluster believes, or write them as Slurm's topology.conf",
		Long: `Print the switch tree the cluster believes: each node's leaf switch, the
leaf's parent and its NVLink block, as the nodes announce them (found by
LLDP, InfiniBand and NVML, or set with --switch, --switch-parent, --block
and topology.conf). A leaf none of whose nodes announces a parent takes
the one the switches' own LLDP reports give ('shoal topology report').
Nodes under no switch are listed as unplaced; they are still scheduled.

--format=topology.conf (or tree) writes the switch tree as Slurm's
topology/tree reads it (SwitchName= lines); --format=block writes the
NVLink blocks as topology/block (Slurm 23.11 and later) reads them
(BlockName= lines). Slurm reads one plugin's lines per file: 22.05 refuses
a BlockName line in a tree topology.conf.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "", "topology.conf", "tree", "block":
			default:
				return fmt.Errorf("--format=%q: want topology.conf (or tree) or block (or no --format for the tree view)", format)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			nodes, err := c.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			reports, err := c.SwitchReports(cmd.Context())
			if err != nil {
				// An agent from before switch reports: the tree of what
				// the nodes announce.
				fmt.Fprintln(os.Stderr, "shoal topology: warning: switch reports not read:", err)
			}
			topo, unplaced, conflicts := topologyOf(nodes, reports)
			for _, c := range conflicts {
				fmt.Fprintln(os.Stderr, "shoal topology: warning:", c)
			}
			if format != "" {
				text, err := topologyConf(topo, unplaced, format == "block")
				if err != nil {
					return err
				}
				fmt.Print(text)
				return nil
			}
			printTopology(os.Stdout, topo, unplaced)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "write Slurm's topology.conf: topology.conf or tree (SwitchName lines, topology/tree), block (BlockName lines, topology/block)")
	cmd.AddCommand(newTopologyReportCmd(g))
	return cmd
}

// topologyOf is the topology the nodes announce: each node's leaf
// switch and block, and each leaf's parent as cluster.LeafParents agrees
// on it from the nodes and the switches' reports (the rule the leader's
// placement uses), with each disagreement in conflicts. unplaced lists
// the nodes under no switch, sorted.
func topologyOf(nodes []api.Node, reports []cluster.SwitchReport) (topo slurm.Topology, unplaced, conflicts []string) {
	topo = slurm.Topology{Leaf: map[string]string{}, Parent: map[string]string{}, Block: map[string]string{}}
	places := make([]cluster.Topology, 0, len(nodes))
	for _, n := range nodes {
		if n.Block != "" {
			topo.Block[n.Name] = n.Block
		}
		if n.Switch == "" {
			unplaced = append(unplaced, n.Name)
			continue
		}
		topo.Leaf[n.Name] = n.Switch
		places = append(places, cluster.Topology{Switch: n.Switch, SwitchParent: n.SwitchParent})
	}
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	rs := make([]*cluster.SwitchReport, len(reports))
	for i := range reports {
		rs[i] = &reports[i]
	}
	links := cluster.SwitchLinks(rs, func(name string) bool { return names[name] })
	topo.Parent, conflicts = cluster.LeafParents(places, links)
	slices.SortFunc(unplaced, slurm.CompareNodeNames)
	return topo, unplaced, conflicts
}

// topologyConf is Slurm's topology.conf for topology/tree (the switches)
// or, with blocks, for topology/block (the NVLink blocks), headed by
// comments naming the nodes it leaves out.
func topologyConf(t slurm.Topology, unplaced []string, blocks bool) (string, error) {
	var b strings.Builder
	b.WriteString("# topology.conf written by shoal topology\n")
	if blocks {
		var out []string
		for node := range t.Leaf {
			if t.Block[node] == "" {
				out = append(out, node)
			}
		}
		for _, node := range unplaced {
			if t.Block[node] == "" {
				out = append(out, node)
			}
		}
		if len(out) > 0 {
			b.WriteString("# in no block: " + slurm.SortedHostlist(out) + "\n")
		}
		t = slurm.Topology{Block: t.Block}
	} else {
		if len(unplaced) > 0 {
			b.WriteString("# under no switch: " + slurm.SortedHostlist(unplaced) + "\n")
		}
		if len(t.Block) > 0 {
			b.WriteString("# NVLink blocks: shoal topology --format=block writes them for topology/block\n")
		}
		t = slurm.Topology{Leaf: t.Leaf, Parent: t.Parent}
	}
	text, err := slurm.FormatTopology(t)
	if err != nil {
		return "", err
	}
	return b.String() + text, nil
}

// printTopology writes the tree: each top switch, the switches under it
// indented, a switch's nodes as a hostlist after its name; then the
// blocks and the nodes under no switch.
func printTopology(w io.Writer, t slurm.Topology, unplaced []string) {
	nodes := map[string][]string{}
	children := map[string][]string{}
	switches := map[string]bool{}
	for node, leaf := range t.Leaf {
		nodes[leaf] = append(nodes[leaf], node)
		switches[leaf] = true
	}
	for sw, parent := range t.Parent {
		children[parent] = append(children[parent], sw)
		switches[sw], switches[parent] = true, true
	}
	seen := map[string]bool{}
	var walk func(sw string, depth int)
	walk = func(sw string, depth int) {
		if seen[sw] {
			return // a cycle in what nodes announce; each switch once
		}
		seen[sw] = true
		line := strings.Repeat("  ", depth) + sw
		if len(nodes[sw]) > 0 {
			line += ": " + slurm.SortedHostlist(nodes[sw])
		}
		fmt.Fprintln(w, line)
		slices.SortFunc(children[sw], slurm.CompareNodeNames)
		for _, c := range children[sw] {
			walk(c, depth+1)
		}
	}
	var all []string
	for sw := range switches {
		all = append(all, sw)
	}
	slices.SortFunc(all, slurm.CompareNodeNames)
	for _, sw := range all {
		if _, ok := t.Parent[sw]; !ok {
			walk(sw, 0)
		}
	}
	for _, sw := range all { // switches on a cycle have no top
		walk(sw, 0)
	}
	if len(switches) == 0 {
		fmt.Fprintln(w, "No switches.")
	}
	blocks := map[string][]string{}
	for node, b := range t.Block {
		blocks[b] = append(blocks[b], node)
	}
	if len(blocks) > 0 {
		fmt.Fprintln(w, "Blocks:")
		for _, b := range slices.SortedFunc(maps.Keys(blocks), slurm.CompareNodeNames) {
			fmt.Fprintf(w, "  %s: %s\n", b, slurm.SortedHostlist(blocks[b]))
		}
	}
	if len(unplaced) > 0 {
		fmt.Fprintln(w, "Unplaced:", slurm.SortedHostlist(unplaced))
	}
}
