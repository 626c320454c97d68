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
// it: fsm.Needs); what it proposes of itself, once every raft server,
// alive or not, does. The agent gathers the servers and what they
// announce; ProtocolGate decides.

// ServerProtocol is a raft server and the protocol version it announces
// (fsm.ProtocolUnannounced for an agent built before protocol versions; 0
// for one the caller counts though gossip does not show it alive).
type ServerProtocol struct {
	ID       string
	Protocol int
}

// ProtocolGate decides whether an entry of type t that needs protocol
// need may be proposed to servers: refused, with
// fsm.ErrUnsupportedByCluster and the older servers named in order, while
// one announces less; refused too for a type this agent does not know.
// Which servers count is the caller's choice: for a user's request, those
// gossip shows alive (a server down for good would otherwise block every
// new type until it is removed). It is pure.
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

// WorkersProtocol is the first protocol version whose agents can be
// workers (follow a server instead of their replica). An agent announcing
// an older one, left out of the raft configuration, would run nothing and
// lose its lease, so until every live member speaks it the leader keeps
// every node a server (ReplicaCap). It is the protocol of the release
// that brings workers (4, fsm/table.go), and stays 4 when later releases
// bump fsm.ProtocolVersion.
const WorkersProtocol = 4

// ElementIDsProtocol is the first protocol whose leaders give each
// element of an array its own request id (ElementRequestID) when a
// request names several jobs; a leader of an older one drops the id of
// such a request, so a copy sent again after a newer leader committed the
// first would act again on it. Until every server speaks it, such a
// request carries no id (and a lost answer to it is final). Like
// WorkersProtocol, a capability with no command of its own.
const ElementIDsProtocol = 7

// EverySpeaks reports whether every live agent, raft server or worker,
// announces protocol need or later (announced: what each live member
// announces). It is pure.
func EverySpeaks(need int, announced []int) bool {
	for _, p := range announced {
		if p < need {
			return false
		}
	}
	return true
}

// ReplicaCap is the raft nonvoters' cap (consensus.VoterConfig's
// MaxNonvoters) for --raft-replicas replicas (negative for none): no cap
// (0) while a live member announces a protocol older than
// WorkersProtocol (a rolling upgrade from before workers), else the
// replicas asked for. It is pure.
func ReplicaCap(replicas int, announced []int) int {
	if !EverySpeaks(WorkersProtocol, announced) {
		return 0
	}
	return max(-1, replicas)
}
