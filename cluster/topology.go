package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// LeafParents is the switch tree's upper level as the cluster believes
// it: each leaf switch's parent, from the places its nodes announce and,
// for a leaf none of whose nodes announces one, from what switches
// report of their own LLDP neighbours (links, SwitchLinks). Nodes of one
// leaf may disagree (one has not yet seen a change, or only some found
// the parent: on Ethernet a node sees its leaf, and an operator may give
// --switch-parent on one node only). The parent most of them announce
// wins, ties going to the smaller name; a node that announces none does
// not vote, so one node's parent completes its leaf. Each disagreement
// is described in conflicts, sorted. A leaf no node gives a parent takes
// the smallest-named switch linked to it that is not itself a leaf: what
// the operator's flags, topology.conf or the fabric (InfiniBand) tell
// the nodes always wins over the switches' reports. The leader's
// placement and `shoal topology` both read the tree through it. It is
// pure.
func LeafParents(places []Topology, links map[string][]string) (parents map[string]string, conflicts []string) {
	votes := map[string]map[string]int{} // leaf → parent → nodes announcing it
	leaves := map[string]bool{}
	for _, t := range places {
		if t.Switch != "" {
			leaves[t.Switch] = true
		}
		if t.Switch == "" || t.SwitchParent == "" || t.SwitchParent == t.Switch {
			continue
		}
		if votes[t.Switch] == nil {
			votes[t.Switch] = map[string]int{}
		}
		votes[t.Switch][t.SwitchParent]++
	}
	parents = make(map[string]string, len(leaves))
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
	for leaf := range leaves {
		if _, ok := parents[leaf]; ok {
			continue
		}
		for _, up := range links[leaf] { // ascending
			if !leaves[up] {
				parents[leaf] = up
				break
			}
		}
	}
	return parents, conflicts
}

// SwitchNeighbor is one LLDP neighbour a switch reports (SwitchReport).
type SwitchNeighbor struct {
	// Name is the neighbour's system name, its chassis id when it sends
	// none.
	Name string `msgpack:"name" json:"name"`
	// Bridge: the neighbour says it is a switch or a router (LLDP's
	// Bridge or Router capability, enabled).
	Bridge bool `msgpack:"bridge,omitempty" json:"bridge,omitempty"`
}

// SwitchReport is what a switch's own lldpd sees, reported by `shoal
// topology report` run on it (or on a host that reads its LLDP table):
// on Ethernet a node sees only its leaf, and a leaf switch that runs
// lldpd (SONiC, Cumulus) sees its spine. Neighbours are canonical:
// sorted by name, each once.
type SwitchReport struct {
	Switch    string           `msgpack:"switch" json:"switch"`
	Neighbors []SwitchNeighbor `msgpack:"neighbors" json:"neighbors"`
	// Time is when the cluster recorded it (leader-stamped).
	Time time.Time `msgpack:"time" json:"time"`
	// By is the user who reported it.
	By string `msgpack:"by,omitempty" json:"by,omitempty"`
}

// Bounds of switch reports.
const (
	// MaxSwitchNeighbors bounds one report (a 64-port leaf with a few
	// neighbours per port stays far below it).
	MaxSwitchNeighbors = 1024
	// MaxSwitchReports bounds the switches the cluster keeps reports of.
	MaxSwitchReports = 4096
)

// Check says why r cannot be recorded, naming the field, or nil.
func (r SwitchReport) Check() error {
	if err := CheckTopologyName(r.Switch); err != nil {
		return fmt.Errorf("switch: %w", err)
	}
	if len(r.Neighbors) > MaxSwitchNeighbors {
		return fmt.Errorf("neighbors: %d, want at most %d", len(r.Neighbors), MaxSwitchNeighbors)
	}
	for i, n := range r.Neighbors {
		if err := CheckTopologyName(n.Name); err != nil {
			return fmt.Errorf("neighbors[%d]: %w", i, err)
		}
		if i > 0 && n.Name <= r.Neighbors[i-1].Name {
			return fmt.Errorf("neighbors[%d] %q: want names ascending, each once", i, n.Name)
		}
	}
	return nil
}

// Canonical is r with its neighbours sorted by name, each once (a
// neighbour seen on several ports is a switch when one sighting says so).
func (r SwitchReport) Canonical() SwitchReport {
	by := map[string]bool{}
	for _, n := range r.Neighbors {
		by[n.Name] = by[n.Name] || n.Bridge
	}
	r.Neighbors = nil
	for _, name := range slices.Sorted(maps.Keys(by)) {
		r.Neighbors = append(r.Neighbors, SwitchNeighbor{Name: name, Bridge: by[name]})
	}
	return r
}

// SwitchLinks are the links between switches that reports show, for
// LeafParents: each switch's linked switches, ascending. A report's
// neighbour is a switch when it says so (Bridge) and is not a node
// (isNode: a host's lldpd may claim Router where it forwards); a link
// one side reports is a link both ways, so a spine's report gives its
// leaves a parent as a leaf's own report does. It is pure.
func SwitchLinks(reports []*SwitchReport, isNode func(string) bool) map[string][]string {
	set := map[string]map[string]bool{}
	add := func(a, b string) {
		if set[a] == nil {
			set[a] = map[string]bool{}
		}
		set[a][b] = true
	}
	for _, r := range reports {
		if isNode(r.Switch) {
			continue
		}
		for _, n := range r.Neighbors {
			if n.Bridge && n.Name != r.Switch && !isNode(n.Name) {
				add(r.Switch, n.Name)
				add(n.Name, r.Switch)
			}
		}
	}
	if len(set) == 0 {
		return nil
	}
	out := make(map[string][]string, len(set))
	for sw, m := range set {
		out[sw] = slices.Sorted(maps.Keys(m))
	}
	return out
}

// MaxTopologyNameLen is the longest switch or block name (the gossip
// metadata's label limit).
const MaxTopologyNameLen = 48

// CheckTopologyName says why s cannot name a switch or a block, or nil:
// 1 to MaxTopologyNameLen bytes of printable ASCII other than space and
// the characters topology.conf and hostlists give a meaning (, = [ ] #).
func CheckTopologyName(s string) error {
	if s == "" || len(s) > MaxTopologyNameLen {
		return fmt.Errorf("name %q: want 1 to %d bytes", s, MaxTopologyNameLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || strings.IndexByte(",=[]#", c) >= 0 {
			return fmt.Errorf("name %q: byte %d (%q) is not allowed: want printable ASCII without space , = [ ] #", s, i, c)
		}
	}
	return nil
}

// WithLeafParent is t with its leaf's parent from parents (LeafParents)
// in place of the one it announces.
func (t Topology) WithLeafParent(parents map[string]string) Topology {
	if p, ok := parents[t.Switch]; ok {
		t.SwitchParent = p
	}
	return t
}
