package agent

import (
	"context"

	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
)

// Request ids of writes other than submits (srun's step, scancel
// --signal): the client sends one, the leader proposes it only once every
// raft server speaks the protocol that deduplicates it (fsm.Needs of the
// command carrying it), and a repeat is answered as the first was. A
// server of an older protocol would drop the id and apply a resent copy
// again where the others answer the first.

// gate is the protocol gate on this leader's proposal of an entry of type
// t that needs protocol need (checkProtocol), as keptRequestID takes it.
func (c *core) gate(ctx context.Context) func(t fsm.CmdType, need int) error {
	return func(t fsm.CmdType, need int) error { return c.checkProtocol(ctx, t, need) }
}

// keptRequestID is the request id an entry of type t is proposed with:
// rid when gate lets through withID (the command carrying rid), else none.
// It is pure but for gate.
func keptRequestID(rid string, t fsm.CmdType, withID any, gate func(t fsm.CmdType, need int) error) string {
	if rid == "" || gate(t, fsm.Needs(t, withID)) != nil {
		return ""
	}
	return rid
}

// elementIDs reports whether a request of type t with the kept request id
// gives an array's elements ids of their own: every server speaks
// leader.ElementIDsProtocol (a leader of an older one would drop the id
// of a copy sent again). gate counts only the servers alive in gossip, as
// for a user's request: a leader just killed, whose answer the copy
// replaces, must not take the ids from it. It is pure but for gate.
func elementIDs(kept string, t fsm.CmdType, gate func(t fsm.CmdType, need int) error) bool {
	return kept != "" && gate(t, leader.ElementIDsProtocol) == nil
}

// droppedOutcome is the error write w whose proposal failed with err
// answers with: where its request id was dropped (keptRequestID: a server
// older than the protocol that keeps it), an outcome the client would take
// as unknown is made final (httpapi.DroppedIDOutcome). It is pure.
func droppedOutcome(err error, dropped bool, w httpapi.IDWrite) error {
	if !dropped {
		return err
	}
	return httpapi.DroppedIDOutcome(err, w)
}

// KeepsRequestIDs reports whether the leader keeps the request id of
// write w, as this agent sees the cluster: every live agent announces the
// protocol the write's id needs and, for one that may name an array's
// elements, the one whose leaders derive theirs (the forwarder does not
// know whether the reference names several jobs). Live agents include
// every live raft server, whose versions the leader's gate checks
// (keptRequestID, elementIDs), and gossip alone tells them, so a worker,
// whose raft configuration is stale, answers as a server does.
func (c *core) KeepsRequestIDs(w httpapi.IDWrite) bool {
	need := max(
		fsm.Needs(fsm.CmdStartStep, fsm.StartStep{RequestID: "-"}),
		fsm.Needs(fsm.CmdSignalJob, fsm.SignalJob{RequestID: "-"}),
		fsm.Needs(fsm.CmdRequeueJob, fsm.RequeueJob{RequestID: "-"}),
		fsm.Needs(fsm.CmdUpdateJob, fsm.UpdateJob{RequestID: "-"}))
	if w.Elements {
		need = max(need, leader.ElementIDsProtocol)
	}
	return leader.EverySpeaks(need, liveProtocols(c.gossip.Members()))
}
