package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

// fixtureSnapshot is a small state with nodes, a running gang job with a
// running step, a pending job, a running batch job and request ids, as
// snapshot bytes.
func fixtureSnapshot(tb testing.TB) []byte {
	tb.Helper()
	h := newHarness()
	for _, n := range []string{"n1", "n2", "n3"} {
		h.must(tb, CmdUpsertNode, UpsertNode{Node: gpuNode(n, 4, "leaf0")})
	}
	h.must(tb, CmdSubmitJob, SubmitJob{RequestID: "a", Spec: spec(2, 2)})
	h.must(tb, CmdSubmitJob, SubmitJob{RequestID: "b", Spec: spec(1, 2)})
	h.must(tb, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{0, 1}, "n2", []int{0, 1})}})
	h.must(tb, CmdTaskStarted, TaskStarted{Job: 1, Incarnation: 1, Node: "n2"})
	h.must(tb, CmdStartStep, stepCmd(1, 1, 0, 0))
	h.must(tb, CmdSubmitJob, SubmitJob{RequestID: "c", Spec: batchSpec(2, 1)})
	if r := h.must(tb, CmdAllocate, Allocate{Decisions: []Decision{place(3, "n2", []int{2}, "n3", []int{0})}}); len(r.Rejected) != 0 {
		tb.Fatalf("fixture allocate rejected %v", r.Rejected)
	}
	return mustSnapshot(tb, h.s)
}

// FuzzApply: no bytes from the log may panic Apply, every entry advances
// the index, and whatever state Apply makes passes Restore's validation
// (so it keeps the invariants Restore checks, DESIGN invariant 1 among
// them) and snapshots canonically.
func FuzzApply(f *testing.F) {
	for _, c := range []struct {
		t    CmdType
		body any
	}{
		{CmdSubmitJob, SubmitJob{RequestID: "a", Spec: spec(1, 2), Time: t0}},
		{CmdSubmitJob, SubmitJob{RequestID: "x", Spec: spec(2, 1)}},
		{CmdCancelJob, CancelJob{Job: 1, Time: t0}},
		{CmdCancelJob, CancelJob{Job: 2}},
		{CmdUpsertNode, UpsertNode{Node: gpuNode("n4", 2, "leaf1"), Time: t0}},
		{CmdUpsertNode, UpsertNode{Node: gpuNode("n1", 1, "leaf1")}},
		{CmdNodeDown, NodeDown{Node: "n1", Time: t0}},
		{CmdAllocate, Allocate{Decisions: []Decision{place(2, "n3", []int{0, 1})}, Time: t0}},
		{CmdAllocate, Allocate{Decisions: []Decision{place(2, "n1", []int{0, 1}), place(2, "n2", []int{2, 3})}}},
		{CmdTaskStarted, TaskStarted{Job: 1, Incarnation: 1, Node: "n1", Time: t0}},
		{CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n1", ExitCode: 1, Cause: CauseExit, Time: t0}},
		{CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n2", Cause: CauseFenced}},
		{CmdSetReasons, SetReasons{Reasons: []JobReason{{Job: 2, Reason: "Resources"}}}},
		{CmdStartStep, stepCmd(1, 1, 1, 2)},
		{CmdStartStep, StartStep{Job: 3, Incarnation: 1, Spec: cluster.StepSpec{Command: []string{"a"}, Env: []string{"A=1"}, GPUsPerTask: 1}, Time: t0}},
		{CmdStepExited, StepExited{Job: 1, Incarnation: 1, Step: 0, Node: "n2", ExitCode: 1, Cause: CauseExit, Time: t0}},
		{CmdStepExited, StepExited{Job: 1, Incarnation: 1, Step: 0, Node: "n1", Cause: CauseFenced}},
		{CmdCancelStep, CancelStep{Job: 1, Step: 0, Time: t0}},
		{CmdTaskExited, TaskExited{Job: 3, Incarnation: 1, Node: "n2", Cause: CauseExit}},
		{CmdNodeDown, NodeDown{Node: "n2"}},
		{CmdGrowJob, GrowJob{Job: 1, Incarnation: 1, Nodes: []Placement{{Node: "n2", GPUs: []int{2}}}, Rejoin: true, Time: t0}},
		{CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n2", Join: 1, Cause: CauseFenced}},
		{CmdReportSwitch, ReportSwitch{Report: cluster.SwitchReport{Switch: "leaf0", Neighbors: []cluster.SwitchNeighbor{{Name: "spine", Bridge: true}}}, Time: t0}},
		{CmdReportSwitch, ReportSwitch{Report: cluster.SwitchReport{Switch: "leaf0"}}},
		// Protocol 5: per-node rank counts and steps dealt over CPUs.
		{CmdAllocate, Allocate{Consumable: true, Decisions: []Decision{{Job: 2, Nodes: []Placement{{Node: "n3", GPUs: []int{0, 1}, CPUs: []int{0, 1}, Tasks: 2}}}}}},
		{CmdStartStep, StartStep{Job: 1, Incarnation: 1, Spec: cluster.StepSpec{Command: []string{"a"}, NTasks: 3, Distribution: "cyclic", Dealt: true}, Time: t0}},
	} {
		f.Add(mustEncode(f, c.t, c.body))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff})
	f.Add([]byte{byte(CmdAllocate), 0x81, 0xa9, 'd', 'e', 'c', 'i', 's', 'i', 'o', 'n', 's', 0xdd, 0xff, 0xff, 0xff, 0xff})
	base := fixtureSnapshot(f)

	f.Fuzz(func(t *testing.T, data []byte) {
		s := New()
		if err := s.Restore(base); err != nil {
			t.Fatal(err)
		}
		index := s.Index() + 1
		r := s.Apply(index, data)
		if got := s.Index(); got != index {
			t.Fatalf("Index() = %d after Apply; want %d", got, index)
		}
		if (s.Diverged() != nil) != errors.Is(r.Err, ErrDiverged) {
			t.Fatalf("Diverged() = %v but Apply returned %v", s.Diverged(), r.Err)
		}
		restored(t, s)
	})
}

// FuzzRestore: no snapshot bytes may panic Restore; a refused one leaves
// the state alone, and an accepted one is canonical after one round trip.
func FuzzRestore(f *testing.F) {
	good := fixtureSnapshot(f)
	f.Add(good)
	f.Add(mustSnapshot(f, New()))
	f.Add(good[:len(good)/2])
	f.Add([]byte{snapshotVersion})
	f.Add([]byte{snapshotVersion, 0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Add(append([]byte{2}, good[1:]...))

	f.Fuzz(func(t *testing.T, data []byte) {
		s := New()
		if err := s.Restore(data); err != nil {
			if s.Index() != 0 || len(s.View().Jobs()) != 0 {
				t.Fatalf("refused Restore(%x) changed the state", data)
			}
			return
		}
		once := mustSnapshot(t, s)
		back := New()
		if err := back.Restore(once); err != nil {
			t.Fatalf("Restore(Snapshot()) after Restore(%x): %v", data, err)
		}
		if twice := mustSnapshot(t, back); !bytes.Equal(once, twice) {
			t.Fatalf("Snapshot not canonical after restoring %x", data)
		}
	})
}
