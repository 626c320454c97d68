package leader

import (
	"errors"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestMaySee: who sees a job, and who is an operator, with and without a
// policy that keeps jobs private.
func TestMaySee(t *testing.T) {
	j := &cluster.Job{ID: 1, Spec: cluster.Spec{User: "ada", UID: 1000}}
	private := &cluster.Policy{PrivateJobs: true, Operators: []string{"@ops", "olga"}}
	who := func(user string, uid int, proven, group bool) Caller {
		return Caller{Identity: cluster.Identity{User: user, UID: uid, Proven: proven}, InOperatorGroup: group}
	}
	tests := []struct {
		name     string
		p        *cluster.Policy
		c        Caller
		see, ops bool
	}{
		{"no policy: anyone", nil, who("bob", 2000, true, false), true, false},
		{"jobs not private: anyone", &cluster.Policy{Operators: []string{"olga"}}, who("bob", 2000, false, false), true, false},
		{"private: the owner", private, who("ada", 1000, true, false), true, false},
		{"private: the owner unproven", private, who("ada", 1000, false, false), false, false},
		{"private: another user", private, who("bob", 2000, true, false), false, false},
		{"private: root", private, who("root", 0, true, false), true, true},
		{"private: an operator by name", private, who("olga", 3000, true, false), true, true},
		{"private: an operator by group", private, who("gus", 4000, true, true), true, true},
		{"private: an operator's name unproven", private, who("olga", 3000, false, false), false, false},
		{"a group where the policy names none", &cluster.Policy{PrivateJobs: true, Operators: []string{"olga"}}, who("gus", 4000, true, true), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaySee(tt.p, j, tt.c); got != tt.see {
				t.Errorf("MaySee = %v; want %v", got, tt.see)
			}
			if got := IsOperator(tt.p, tt.c); got != tt.ops {
				t.Errorf("IsOperator = %v; want %v", got, tt.ops)
			}
		})
	}
}

// TestRefusal: what the FSM's refusals mean, by operation.
func TestRefusal(t *testing.T) {
	tests := []struct {
		name string
		plan QueuePlan
		err  error
		skip bool
		kind error
	}{
		{"cancel of an array: a finished element passed over", QueuePlan{op: opCancel, several: true}, fsm.ErrJobFinished, true, nil},
		{"cancel of an array: a wrong state is not passed over", QueuePlan{op: opCancel, several: true}, fsm.ErrWrongState, false, cluster.ErrInvalid},
		{"cancel of a finished job", QueuePlan{op: opCancel}, fsm.ErrJobFinished, false, cluster.ErrConflict},
		{"cancel of a job gone since the plan", QueuePlan{op: opCancel}, fsm.ErrUnknownJob, false, cluster.ErrNotFound},
		{"hold of an array: wrong state passed over", QueuePlan{op: opHold, several: true}, fsm.ErrWrongState, true, nil},
		{"hold of one job in the wrong state", QueuePlan{op: opHold}, fsm.ErrWrongState, false, cluster.ErrConflict},
		{"hold: another refusal", QueuePlan{op: opHold, several: true}, fsm.ErrInvalid, false, cluster.ErrInvalid},
		{"priority of a finished job", QueuePlan{op: opPriority, several: true}, fsm.ErrJobFinished, false, cluster.ErrConflict},
		{"update refused", QueuePlan{op: opUpdate}, fsm.ErrUpdateAccessDenied, false, cluster.ErrForbidden},
		{"update of a running job", QueuePlan{op: opUpdate}, fsm.ErrUpdateNotPending, false, cluster.ErrConflict},
		{"update: a bad field", QueuePlan{op: opUpdate}, fsm.ErrUpdateTimeLimit, false, cluster.ErrInvalid},
		{"signal of a finished job", QueuePlan{op: opSignal}, fsm.ErrJobFinished, false, cluster.ErrConflict},
		{"a step in a job gone", QueuePlan{op: opStartStep}, fsm.ErrUnknownJob, false, cluster.ErrNotFound},
		{"a step refused", QueuePlan{op: opStartStep}, fsm.ErrWrongState, false, cluster.ErrInvalid},
		{"a step cancel refused", QueuePlan{op: opCancelStep}, fsm.ErrInvalid, false, cluster.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			skip, marked := tt.plan.Refusal(tt.err)
			if skip != tt.skip || (tt.kind == nil) != (marked == nil) || (tt.kind != nil && (!errors.Is(marked, tt.kind) || !errors.Is(marked, tt.err))) {
				t.Errorf("Refusal(%v) = %v, %v; want %v, %v", tt.err, skip, marked, tt.skip, tt.kind)
			}
		})
	}
}
