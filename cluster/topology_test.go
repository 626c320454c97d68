package cluster

import (
	"reflect"
	"testing"
)

func TestLeafParents(t *testing.T) {
	tests := []struct {
		name          string
		places        []Topology
		want          map[string]string
		wantConflicts int
	}{
		{"none", nil, map[string]string{}, 0},
		{"agreeing", []Topology{{Switch: "leaf0", SwitchParent: "spine0"}, {Switch: "leaf0", SwitchParent: "spine0"}}, map[string]string{"leaf0": "spine0"}, 0},
		{"one node completes its leaf", []Topology{{Switch: "leaf0"}, {Switch: "leaf0", SwitchParent: "spine0"}, {Switch: "leaf0"}}, map[string]string{"leaf0": "spine0"}, 0},
		{"majority", []Topology{{Switch: "l", SwitchParent: "b"}, {Switch: "l", SwitchParent: "a"}, {Switch: "l", SwitchParent: "b"}}, map[string]string{"l": "b"}, 1},
		{"tie to the smaller name", []Topology{{Switch: "l", SwitchParent: "b"}, {Switch: "l", SwitchParent: "a"}}, map[string]string{"l": "a"}, 1},
		{"unplaced and self-parent ignored", []Topology{{SwitchParent: "x"}, {Switch: "l", SwitchParent: "l"}}, map[string]string{}, 0},
		{"two leaves", []Topology{{Switch: "l1", SwitchParent: "s"}, {Switch: "l2", SwitchParent: "t"}}, map[string]string{"l1": "s", "l2": "t"}, 0},
	}
	for _, tt := range tests {
		got, conflicts := LeafParents(tt.places, nil)
		if !reflect.DeepEqual(got, tt.want) || len(conflicts) != tt.wantConflicts {
			t.Errorf("%s: LeafParents = %v, %q; want %v and %d conflicts", tt.name, got, conflicts, tt.want, tt.wantConflicts)
		}
	}
}

func TestWithLeafParent(t *testing.T) {
	parents := map[string]string{"leaf0": "spine0"}
	if got := (Topology{Switch: "leaf0"}).WithLeafParent(parents); got.SwitchParent != "spine0" {
		t.Errorf("leaf0 without parent: %+v", got)
	}
	if got := (Topology{Switch: "leaf1", SwitchParent: "p"}).WithLeafParent(parents); got.SwitchParent != "p" {
		t.Errorf("leaf1 keeps its own parent: %+v", got)
	}
}

// TestLeafParentsFromSwitches: a leaf none of whose nodes announces a
// parent takes it from the switches' own LLDP reports (SwitchLinks), and
// what the nodes announce (an operator's --switch-parent) wins.
func TestLeafParentsFromSwitches(t *testing.T) {
	nodes := map[string]bool{"n1": true, "n2": true, "n3": true}
	isNode := func(s string) bool { return nodes[s] }
	rep := func(sw string, ns ...SwitchNeighbor) *SwitchReport { return &SwitchReport{Switch: sw, Neighbors: ns} }
	br := func(name string) SwitchNeighbor { return SwitchNeighbor{Name: name, Bridge: true} }
	host := func(name string) SwitchNeighbor { return SwitchNeighbor{Name: name} }
	tests := []struct {
		name    string
		places  []Topology
		reports []*SwitchReport
		want    map[string]string
	}{
		{"a spine reports both leaves",
			[]Topology{{Switch: "leafA"}, {Switch: "leafB"}},
			[]*SwitchReport{rep("spine", br("leafA"), br("leafB"))},
			map[string]string{"leafA": "spine", "leafB": "spine"}},
		{"a leaf reports its spine, not its hosts nor the other leaf",
			[]Topology{{Switch: "leafA"}, {Switch: "leafB"}},
			[]*SwitchReport{rep("leafA", host("n1"), br("leafB"), br("spine"), br("n2"))},
			map[string]string{"leafA": "spine"}},
		{"two spines: the smaller name",
			[]Topology{{Switch: "leafA"}},
			[]*SwitchReport{rep("leafA", br("spine2"), br("spine1"))},
			map[string]string{"leafA": "spine1"}},
		{"a neighbour that is no switch is no parent",
			[]Topology{{Switch: "leafA"}},
			[]*SwitchReport{rep("leafA", host("spine"))},
			map[string]string{}},
		{"a node's parent wins",
			[]Topology{{Switch: "leafA", SwitchParent: "core"}, {Switch: "leafA"}, {Switch: "leafB"}},
			[]*SwitchReport{rep("spine", br("leafA"), br("leafB"))},
			map[string]string{"leafA": "core", "leafB": "spine"}},
		{"a report by a node is ignored",
			[]Topology{{Switch: "leafA"}},
			[]*SwitchReport{rep("n1", br("leafA"))},
			map[string]string{}},
	}
	for _, tt := range tests {
		got, _ := LeafParents(tt.places, SwitchLinks(tt.reports, isNode))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: LeafParents = %v; want %v", tt.name, got, tt.want)
		}
	}
}

func TestSwitchReportCheck(t *testing.T) {
	r := SwitchReport{Switch: "leafA", Neighbors: []SwitchNeighbor{{Name: "spine"}, {Name: "n1", Bridge: true}, {Name: "spine", Bridge: true}}}.Canonical()
	if want := []SwitchNeighbor{{Name: "n1", Bridge: true}, {Name: "spine", Bridge: true}}; !reflect.DeepEqual(r.Neighbors, want) {
		t.Errorf("Canonical neighbours %v; want %v", r.Neighbors, want)
	}
	if err := r.Check(); err != nil {
		t.Errorf("Check of a canonical report: %v", err)
	}
	for _, bad := range []SwitchReport{
		{Switch: ""},
		{Switch: "a b"},
		{Switch: "leaf", Neighbors: []SwitchNeighbor{{Name: "x,y"}}},
		{Switch: "leaf", Neighbors: []SwitchNeighbor{{Name: "b"}, {Name: "a"}}},
		{Switch: "leaf", Neighbors: make([]SwitchNeighbor, MaxSwitchNeighbors+1)},
	} {
		if bad.Check() == nil {
			t.Errorf("Check(%+v) = nil; want an error", bad)
		}
	}
}
