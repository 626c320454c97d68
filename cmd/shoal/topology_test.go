package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

func TestTopologyOf(t *testing.T) {
	nodes := []api.Node{
		{Name: "n1", Switch: "leaf1", SwitchParent: "spine", Block: "nvl-a-1"},
		{Name: "n2", Switch: "leaf1", SwitchParent: "spine", Block: "nvl-a-1"},
		{Name: "n3", Switch: "leaf2", SwitchParent: "spine"},
		{Name: "n4", Switch: "leaf2", SwitchParent: "spine2"}, // has not seen the move yet
		{Name: "n5", Switch: "leaf3"},
		{Name: "n10", Block: "nvl-a-1"},
		{Name: "n9"},
	}
	topo, unplaced, conflicts := topologyOf(nodes, nil)
	want := slurm.Topology{
		Leaf:   map[string]string{"n1": "leaf1", "n2": "leaf1", "n3": "leaf2", "n4": "leaf2", "n5": "leaf3"},
		Parent: map[string]string{"leaf1": "spine", "leaf2": "spine"},
		Block:  map[string]string{"n1": "nvl-a-1", "n2": "nvl-a-1", "n10": "nvl-a-1"},
	}
	if d := cmp.Diff(want, topo); d != "" {
		t.Errorf("topology (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"n9", "n10"}, unplaced); d != "" {
		t.Errorf("unplaced (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"nodes of switch leaf2 announce parents spine, spine2; using spine"}, conflicts); d != "" {
		t.Errorf("conflicts (-want +got):\n%s", d)
	}

	var b bytes.Buffer
	printTopology(&b, topo, unplaced)
	wantText := `leaf3: n5
spine
  leaf1: n[1-2]
  leaf2: n[3-4]
Blocks:
  nvl-a-1: n[1-2,10]
Unplaced: n[9-10]
`
	if d := cmp.Diff(wantText, b.String()); d != "" {
		t.Errorf("printTopology (-want +got):\n%s", d)
	}

	b.Reset()
	printTopology(&b, slurm.Topology{Parent: map[string]string{"a": "b", "b": "a"}}, nil)
	if d := cmp.Diff("a\n  b\n", b.String()); d != "" {
		t.Errorf("printTopology of a cycle (-want +got):\n%s", d)
	}
	b.Reset()
	printTopology(&b, slurm.Topology{}, []string{"n1"})
	if d := cmp.Diff("No switches.\nUnplaced: n1\n", b.String()); d != "" {
		t.Errorf("printTopology of nothing (-want +got):\n%s", d)
	}
}

func TestTopologyConf(t *testing.T) {
	topo, unplaced, _ := topologyOf([]api.Node{
		{Name: "n1", Switch: "leaf1", SwitchParent: "spine", Block: "nvl-a-1"},
		{Name: "n2", Switch: "leaf1", SwitchParent: "spine", Block: "nvl-a-1"},
		{Name: "n3", Switch: "leaf2", SwitchParent: "spine"},
		{Name: "n9", Block: "nvl-a-1"},
		{Name: "n10"},
	}, nil)
	tree, err := topologyConf(topo, unplaced, false)
	if err != nil {
		t.Fatal(err)
	}
	// Slurm 22.05's topology/tree reads only SwitchName lines.
	wantTree := `# topology.conf written by shoal topology
# under no switch: n[9-10]
# NVLink blocks: shoal topology --format=block writes them for topology/block
SwitchName=leaf1 Nodes=n[1-2]
SwitchName=leaf2 Nodes=n3
SwitchName=spine Switches=leaf[1-2]
`
	if d := cmp.Diff(wantTree, tree); d != "" {
		t.Errorf("tree topology.conf (-want +got):\n%s", d)
	}
	block, err := topologyConf(topo, unplaced, true)
	if err != nil {
		t.Fatal(err)
	}
	wantBlock := `# topology.conf written by shoal topology
# in no block: n[3,10]
BlockName=nvl-a-1 Nodes=n[1-2,9]
`
	if d := cmp.Diff(wantBlock, block); d != "" {
		t.Errorf("block topology.conf (-want +got):\n%s", d)
	}
	for _, text := range []string{tree, block} {
		back, err := slurm.ParseTopology(text)
		if err != nil {
			t.Fatalf("ParseTopology(%q): %v", text, err)
		}
		for _, n := range []string{"n1", "n3", "n9"} {
			l, p, b := back.Place(n)
			wl, wp, wb := topo.Place(n)
			if text == tree && (l != wl || p != wp || b != "") || text == block && (b != wb || l != "") {
				t.Errorf("%s placed %q %q %q from:\n%s", n, l, p, b, text)
			}
		}
	}
}

// TestTopologyOfSwitchReports: a leaf whose nodes announce no parent is
// shown under the switch a switch report links it to; a parent a node
// announces (--switch-parent) wins.
func TestTopologyOfSwitchReports(t *testing.T) {
	nodes := []api.Node{
		{Name: "n1", Switch: "leafA"}, {Name: "n2", Switch: "leafA"},
		{Name: "n3", Switch: "leafB"}, {Name: "n4", Switch: "leafC", SwitchParent: "core"},
	}
	reports := []cluster.SwitchReport{{Switch: "spine", Neighbors: []cluster.SwitchNeighbor{
		{Name: "leafA", Bridge: true}, {Name: "leafB", Bridge: true}, {Name: "leafC", Bridge: true}, {Name: "n9"},
	}}}
	topo, _, _ := topologyOf(nodes, reports)
	want := map[string]string{"leafA": "spine", "leafB": "spine", "leafC": "core"}
	if d := cmp.Diff(want, topo.Parent); d != "" {
		t.Errorf("parents (-want +got):\n%s", d)
	}
}
