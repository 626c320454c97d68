package consensus

import (
	"cmp"
	"slices"
)

// BootstrapMember is what gossip says about one node for
// --bootstrap-expect.
type BootstrapMember struct {
	ID, RaftAddr string
	// Expect is the node's own --bootstrap-expect (0 when it has none).
	Expect int
	// HasRaftState is whether the node reports existing raft state.
	HasRaftState bool
	Alive        bool
}

// BootstrapSet decides --bootstrap-expect: it returns the voters to
// bootstrap with and true when this node (self) should bootstrap now.
// members is everything gossip knows, self included. It returns true
// only when
//
//   - expect is at least 1;
//   - no alive member reports raft state (else a cluster exists: wait to
//     be added by its leader);
//   - at least expect alive members advertise the same Expect as ours;
//
// and then the set is the first expect of those by ID. If self is not in
// that set it returns false: self waits for the leader to add it.
//
// Why this does not make two clusters: every node that bootstraps writes
// the same configuration as long as the nodes' views agree on the first
// expect matching IDs, and a raft server can be bootstrapped only once, so
// one set of voters exists and elects one leader. Started with exactly
// expect nodes, the set is all of them and cannot differ between views.
//
// The remaining edge case: when more than expect nodes start with the
// same Expect and their gossip views differ while converging (or gossip
// is partitioned at start), two nodes can compute different first-expect
// sets — a sees {a,b,c,d} and picks {a,b,c}, d sees {b,c,d} and picks
// them — and the two configurations can elect two leaders. HasRaftState
// closes this only after it has gossiped. Operators must start exactly
// expect servers with the flag (as with Consul and Nomad), and the caller
// should wait for the member list to be stable for a few gossip rounds
// before calling.
func BootstrapSet(expect int, self string, members []BootstrapMember) ([]Server, bool) {
	if expect < 1 {
		return nil, false
	}
	var match []BootstrapMember
	seen := map[string]bool{}
	for _, m := range members {
		if !m.Alive {
			continue
		}
		if m.HasRaftState {
			return nil, false
		}
		if seen[m.ID] {
			return nil, false // one name twice: gossip has not settled
		}
		seen[m.ID] = true
		if m.Expect == expect && m.ID != "" {
			match = append(match, m)
		}
	}
	if len(match) < expect {
		return nil, false
	}
	slices.SortFunc(match, func(a, b BootstrapMember) int { return cmp.Compare(a.ID, b.ID) })
	match = match[:expect]
	servers := make([]Server, 0, expect)
	hasSelf := false
	for _, m := range match {
		if m.RaftAddr == "" {
			return nil, false
		}
		hasSelf = hasSelf || m.ID == self
		servers = append(servers, Server{ID: m.ID, Addr: m.RaftAddr, Suffrage: Voter})
	}
	if !hasSelf {
		return nil, false
	}
	return servers, true
}
