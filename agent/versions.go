package agent

import (
	"fmt"

	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/leader"
)

// The protocol version gate of rolling upgrades. Every agent announces in
// its gossip metadata the protocol version it speaks (fsm.ProtocolVersion,
// or lower with the hidden --protocol-version); the leader proposes a
// command type only once every raft server that gossip shows alive
// announces at least the version that introduced the type. Until then
// the proposal is refused with fsm.ErrUnsupportedByCluster (HTTP 409)
// and nothing reaches the log, so no older replica meets an entry it
// cannot apply. The gate sees what gossip holds: a server that is down
// during the check and comes back older, or one that restarts older
// (a downgrade) before the others hear its new metadata — immediately for
// an agent that joins someone, only at the next push/pull for a seed that
// joins nobody — can still meet a newer entry. Its FSM then stops with
// "upgrade it" (fsm.ErrUnknownCommand) instead of skipping the entry. An
// upgrade's stale metadata errs the safe way: refused a little longer.

// protocolGate decides whether a command of type t may be proposed to a
// raft group of servers whose gossip members are members. It is pure.
// Servers that gossip does not show alive are not counted (a server down
// for good would otherwise block every new type until it is removed).
func protocolGate(t fsm.CmdType, members []gossip.Member, servers []consensus.Server) error {
	return protocolGateNeed(t, t.Since(), members, servers)
}

// protocolGateNeed is protocolGate for an entry of type t that needs
// protocol need (fsm.Needs: the type's, or a later field's): the servers
// alive in gossip, with what each announces, for leader.ProtocolGate.
func protocolGateNeed(t fsm.CmdType, need int, members []gossip.Member, servers []consensus.Server) error {
	return serverProtocols(t, need, members, servers, false)
}

// protocolGateEvery is protocolGateNeed counting every raft server: one
// that gossip does not show alive speaks nothing (v0). It gates what the
// leader proposes of itself, with no user waiting on it (the archive
// loop's aging of request ids): that waits for a server that is down,
// which could come back on an older binary and meet the entry, rather
// than go on without it.
func protocolGateEvery(t fsm.CmdType, need int, members []gossip.Member, servers []consensus.Server) error {
	return serverProtocols(t, need, members, servers, true)
}

// serverProtocols gathers what the servers announce for
// leader.ProtocolGate: those alive in gossip and, with every, the others
// as v0.
func serverProtocols(t fsm.CmdType, need int, members []gossip.Member, servers []consensus.Server, every bool) error {
	alive := make(map[string]gossip.Meta, len(members))
	for _, m := range members {
		if m.Status == gossip.StatusAlive {
			alive[m.Name] = m.Meta
		}
	}
	var announced []leader.ServerProtocol
	for _, s := range servers {
		if meta, ok := alive[s.ID]; ok {
			announced = append(announced, leader.ServerProtocol{ID: s.ID, Protocol: announcedProtocol(meta)})
		} else if every {
			announced = append(announced, leader.ServerProtocol{ID: s.ID})
		}
	}
	return leader.ProtocolGate(t, need, announced)
}

// liveProtocols are the protocol versions the live gossip members
// announce (announcedProtocol), as leader.EverySpeaks and ReplicaCap
// take them.
func liveProtocols(members []gossip.Member) []int {
	var out []int
	for _, m := range members {
		if m.Status == gossip.StatusAlive {
			out = append(out, announcedProtocol(m.Meta))
		}
	}
	return out
}

// announcedProtocol is the protocol version a member speaks: what it
// announces, or fsm.ProtocolUnannounced for an agent built before
// protocol versions.
func announcedProtocol(m gossip.Meta) int {
	if m.Protocol == 0 {
		return fsm.ProtocolUnannounced
	}
	return m.Protocol
}

// protocol is the version this agent announces: Config.Protocol, or this
// build's.
func (c *Config) protocol() int {
	if c.Protocol == 0 {
		return fsm.ProtocolVersion
	}
	return c.Protocol
}

// validProtocol checks Config.Protocol (--protocol-version).
func validProtocol(p int) error {
	if p != 0 && (p < fsm.ProtocolOldest || p > fsm.ProtocolVersion) {
		return fmt.Errorf("--protocol-version %d: want %d to %d (this build's)", p, fsm.ProtocolOldest, fsm.ProtocolVersion)
	}
	return nil
}
