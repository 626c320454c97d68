package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// LeafParents is the switch tree's upper level as the cluster believes
// it: each leaf switch's parent, from the places its nodes announce.
// Nodes of one leaf may disagree (one has not yet seen a change, or only
// some found the parent: on Ethernet a node sees its leaf, and an
// operator may give --switch-parent on one node only). The parent most of
// them announce wins, ties going to the smaller name; a node that
// announces none does not vote, so one node's parent completes its
// leaf. Each disagreement is described in conflicts, sorted. The leader's
// placement and `shoal topology` both read the tree through it. It is
// pure.
func LeafParents(places []Topology) (parents map[string]string, conflicts []string) {
	votes := map[string]map[string]int{} // leaf → parent → nodes announcing it
	for _, t := range places {
		if t.Switch == "" || t.SwitchParent == "" || t.SwitchParent == t.Switch {
			continue
		}
		if votes[t.Switch] == nil {
			votes[t.Switch] = map[string]int{}
		}
		votes[t.Switch][t.SwitchParent]++
	}
	parents = make(map[string]string, len(votes))
	for _, leaf := range slices.Sorted(maps.Keys(votes)) {
		cands := slices.Sorted(maps.Keys(votes[leaf]))
		best := slices.MaxFunc(cands, func(a, b string) int {
			// Most votes, then the smaller name (MaxFunc keeps the first maximum).
			return cmp.Compare(votes[leaf][a], votes[leaf][b])
		})
		parents[leaf] = best
		if len(cands) > 1 {
			conflicts = append(conflicts, fmt.Sprintf("nodes of switch %s announce parents %s; using %s", leaf, strings.Join(cands, ", "), best))
		}
	}
	return parents, conflicts
}

// WithLeafParent is t with its leaf's parent from parents (LeafParents)
// in place of the one it announces.
func (t Topology) WithLeafParent(parents map[string]string) Topology {
	if p, ok := parents[t.Switch]; ok {
		t.SwitchParent = p
	}
	return t
}
