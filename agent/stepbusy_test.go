package agent

import (
	"slices"
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

// TestStepTooLargeMessages: srun knows a step its job cannot hold by the
// text of the FSM's refusals, which the small client cannot import.
func TestStepTooLargeMessages(t *testing.T) {
	want := []string{fsm.ErrStepGres.Error(), fsm.ErrStepCPUs.Error()}
	if !slices.Equal(api.StepTooLargeMessages, want) {
		t.Errorf("api.StepTooLargeMessages %q; fsm's %q: want the same", api.StepTooLargeMessages, want)
	}
}
