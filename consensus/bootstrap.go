package consensus

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"
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

// BootstrapNow is the bootstrap loop's decision at one poll, given the
// set BootstrapSet gave at the previous poll (last; nil when none): it
// returns the set to remember for the next poll, and whether to
// bootstrap with it now, which is when BootstrapSet gives the same set on
// two polls in a row (gossip has settled). It is pure.
func BootstrapNow(expect int, self string, members []BootstrapMember, last []Server) (set []Server, now bool) {
	set, ok := BootstrapSet(expect, self, members)
	if !ok {
		return nil, false
	}
	return set, slices.Equal(set, last)
}

// BootstrapRaft is this node's raft as the bootstrap loop sees it (*Raft).
type BootstrapRaft interface {
	// HasState says raft found state on disk at start.
	HasState() bool
	// Leader is the leader this node knows ("" for none).
	Leader() (id, addr string)
	// Bootstrap writes the first configuration.
	Bootstrap(servers []Server) error
}

// BootstrapPeers is gossip as the bootstrap loop sees it.
type BootstrapPeers interface {
	// BootstrapMembers is everything gossip knows, this node included.
	BootstrapMembers() []BootstrapMember
	// AnnounceRaftState tells the other nodes this one holds raft state.
	AnnounceRaftState(ctx context.Context) error
}

// bootstrapWaitLog spaces the "waiting for peers" lines.
const bootstrapWaitLog = 10 * time.Second

// Bootstrapper is the agent's bootstrap loop: it forms the cluster once
// Expect nodes (--bootstrap-expect) have met (BootstrapNow decides), and
// announces that this node holds raft state once it sees a leader, which
// ends the loop.
type Bootstrapper struct {
	Raft  BootstrapRaft
	Peers BootstrapPeers
	// Self is this node's ID; Expect its --bootstrap-expect (0: none).
	Self     string
	Expect   int
	Clock    Ticker
	Log      *slog.Logger
	Interval time.Duration
}

// Run polls every Interval until it sees a leader or ctx ends.
func (b Bootstrapper) Run(ctx context.Context) {
	announced := b.Raft.HasState()
	tried := b.Raft.HasState() || b.Expect == 0
	var last []Server
	var waitLogged time.Time
	tick, stop := b.Clock.NewTicker(b.Interval)
	defer stop()
	for {
		if id, _ := b.Raft.Leader(); id != "" {
			if !announced {
				if err := b.Peers.AnnounceRaftState(ctx); err != nil {
					b.Log.Warn("update gossip meta", "err", err)
				}
			}
			return
		}
		if !tried {
			members := b.Peers.BootstrapMembers()
			set, now := BootstrapNow(b.Expect, b.Self, members, last)
			last = set
			switch {
			case now:
				if err := b.Raft.Bootstrap(set); err != nil {
					b.Log.Warn("bootstrap", "err", err)
				} else {
					b.Log.Info("bootstrapped raft cluster", "servers", len(set))
				}
				tried = true
			case set == nil:
				if t := b.Clock.Now(); t.Sub(waitLogged) > bootstrapWaitLog {
					waitLogged = t
					b.Log.Info("waiting for peers to bootstrap", "expect", b.Expect, "members", len(members))
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}
