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
		got, conflicts := LeafParents(tt.places)
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
