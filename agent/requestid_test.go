package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/httpapi"
)

// TestKeptRequestID: a step's or a signal's request id rides in its
// proposal only once every raft server alive in gossip speaks protocol 6;
// with one at 5, which would drop it and apply a resent copy again where
// the others answer the first, it is dropped (DESIGN invariant 5:
// replicas agree).
func TestKeptRequestID(t *testing.T) {
	voters := []consensus.Server{{ID: "n1", Suffrage: consensus.Voter}, {ID: "n2", Suffrage: consensus.Voter}, {ID: "n3", Suffrage: consensus.Voter}}
	members := func(protocols ...int) []gossip.Member {
		var out []gossip.Member
		for i, p := range protocols {
			out = append(out, gossip.Member{Name: voters[i].ID, Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: p}})
		}
		return out
	}
	step := func(rid string) (fsm.CmdType, any) { return fsm.CmdStartStep, fsm.StartStep{Job: 1, RequestID: rid} }
	signal := func(rid string) (fsm.CmdType, any) { return fsm.CmdSignalJob, fsm.SignalJob{Job: 1, RequestID: rid} }
	for _, tt := range []struct {
		name    string
		cmd     func(rid string) (fsm.CmdType, any)
		members []gossip.Member
		rid     string
		want    string
	}{
		{"step, every server speaks 6", step, members(6, 6, 6), "step1000/a", "step1000/a"},
		{"step, one server speaks 5", step, members(6, 5, 6), "step1000/a", ""},
		{"step, one server built before versions", step, members(6, 0, 6), "step1000/a", ""},
		{"step, no id", step, members(6, 6, 6), "", ""},
		{"signal, every server speaks 6", signal, members(6, 6, 6), "signal1000/a", "signal1000/a"},
		{"signal, one server speaks 5", signal, members(5, 6, 6), "signal1000/a", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gate := func(ct fsm.CmdType, need int) error { return protocolGateNeed(ct, need, tt.members, voters) }
			ct, body := tt.cmd(tt.rid)
			if got := keptRequestID(tt.rid, ct, body, gate); got != tt.want {
				t.Fatalf("keptRequestID(%q, %s) = %q; want %q", tt.rid, ct, got, tt.want)
			}
		})
	}
}

// TestDroppedOutcome: a write proposed without the request id the client
// sent (a server speaks protocol 5) answers an unknown outcome as final,
// so the client does not send again a copy that could act twice.
func TestDroppedOutcome(t *testing.T) {
	lost := cluster.Mark(cluster.ErrNotLeader, errors.New("apply StartStep: leadership lost while committing"))
	timedOut := fmt.Errorf("apply StartStep: %w", context.DeadlineExceeded)
	busy := cluster.Mark(cluster.ErrConflict, errors.New("step busy"))
	for _, tt := range []struct {
		name    string
		err     error
		dropped bool
		want    int
	}{
		{"lost, id kept", lost, false, http.StatusServiceUnavailable},
		{"lost, id dropped", lost, true, http.StatusInternalServerError},
		{"timed out, id dropped", timedOut, true, http.StatusInternalServerError},
		{"timed out, id kept", timedOut, false, http.StatusGatewayTimeout},
		{"refused, id dropped", busy, true, http.StatusConflict},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := droppedOutcome(tt.err, tt.dropped, httpapi.StepWrite)
			if got := httpapi.Status(err); got != tt.want {
				t.Fatalf("Status(droppedOutcome(%v, %t)) = %d; want %d", tt.err, tt.dropped, got, tt.want)
			}
		})
	}
}

// TestElementIDs: a request with a kept id gives an array's elements ids
// of their own only once every server speaks leader.ElementIDsProtocol;
// otherwise the plan carries none for several jobs and droppedOutcome
// makes a lost answer final.
func TestElementIDs(t *testing.T) {
	voters := []consensus.Server{{ID: "n1", Suffrage: consensus.Voter}, {ID: "n2", Suffrage: consensus.Voter}}
	at := func(p int) []gossip.Member {
		return []gossip.Member{{Name: "n1", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: 7}},
			{Name: "n2", Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: p}}}
	}
	for _, tt := range []struct {
		name   string
		kept   string
		n2     int
		want   bool
		reason string
	}{
		{"every server at 7", "r1000/a", 7, true, ""},
		{"a server at 6", "r1000/a", 6, false, "its leader would drop a copy's ids"},
		{"no id kept", "", 7, false, "nothing to derive from"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gate := func(ct fsm.CmdType, need int) error { return protocolGateNeed(ct, need, at(tt.n2), voters) }
			if got := elementIDs(tt.kept, fsm.CmdRequeueJob, gate); got != tt.want {
				t.Errorf("elementIDs = %v; want %v (%s)", got, tt.want, tt.reason)
			}
		})
	}
}
