package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shoal-sched/shoal/api"
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
	topo, unplaced, conflicts := topologyOf(nodes)
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
