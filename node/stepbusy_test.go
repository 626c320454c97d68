package node

import (
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/fsm"
)

// TestStepBusyMessage: srun knows a busy step (api.IsStepBusy) by the
// FSM's words, which the leader's 409 carries.
func TestStepBusyMessage(t *testing.T) {
	if fsm.ErrStepBusy.Error() != api.StepBusyMessage {
		t.Errorf("fsm.ErrStepBusy %q; api.StepBusyMessage %q: want the same", fsm.ErrStepBusy, api.StepBusyMessage)
	}
}
