package leader

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-sched/shoal/fsm"
)

// The protocol version gate of rolling upgrades: the leader proposes a
// command type only once every raft server that gossip shows alive
// announces at least the version that introduced it (or a later field of
// it: fsm.Needs). The agent gathers the servers and what they announce;
// ProtocolGate decides.

// ServerProtocol is a raft server that gossip shows alive, and the
// protocol version it announces (fsm.ProtocolUnannounced for an agent
// built before protocol versions).
type ServerProtocol struct {
	ID       string
	Protocol int
}

// ProtocolGate decides whether an entry of type t that needs protocol
// need may be proposed to servers: refused, with
// fsm.ErrUnsupportedByCluster and the older servers named in order, while
// one announces less; refused too for a type this agent does not know.
// Servers gossip does not show alive are left out by the caller: a server
// down for good would otherwise block every new type until it is
// removed. It is pure.
func ProtocolGate(t fsm.CmdType, need int, servers []ServerProtocol) error {
	if !t.Known() || need == 0 {
		return fmt.Errorf("propose %s: %w: this agent does not know the type", t, fsm.ErrUnsupportedByCluster)
	}
	var older []string
	for _, s := range servers {
		if s.Protocol < need {
			older = append(older, fmt.Sprintf("%s (v%d)", s.ID, s.Protocol))
		}
	}
	if len(older) == 0 {
		return nil
	}
	slices.Sort(older)
	return fmt.Errorf("propose %s: %w: it needs protocol v%d; older servers: %s; upgrade them and retry",
		t, fsm.ErrUnsupportedByCluster, need, strings.Join(older, ", "))
}
