package agent

import (
	"context"
	"fmt"
	"net/http"

	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
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

// droppedOutcome is the error a write whose proposal failed with err
// answers with. Where the write's request id was dropped (keptRequestID:
// a server older than the protocol that keeps it), an outcome the client would take as unknown (502, 503, 504), and so
// send the write again as its id allows, is made final, as a second copy
// could act again (again: what it would do). It is pure.
func droppedOutcome(err error, dropped bool, again string) error {
	switch httpapi.Status(err) {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if dropped {
			return fmt.Errorf("%v (not sent again: it may have taken effect, and its request id could not be kept (a server older than protocol 6), so a second copy could %s)", err, again)
		}
	}
	return err
}
