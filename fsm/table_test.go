package fsm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// The command table is the one list of type bytes: every row is named
// once, introduced at a protocol version this build speaks, and its
// constant is the byte it is stored under (types are append-only, so a
// renumbered constant would make old logs replay differently).
func TestCommandTable(t *testing.T) {
	names := map[string]CmdType{}
	highest := 0
	for i, c := range commands {
		ct := CmdType(i)
		if c.apply == nil {
			if i != 0 {
				t.Errorf("type %d has no row: the table must have no gaps (append only)", i)
			}
			continue
		}
		if prev, dup := names[c.name]; dup {
			t.Errorf("types %d and %d are both named %s", prev, ct, c.name)
		}
		names[c.name] = ct
		if c.since < ProtocolOldest || c.since > ProtocolVersion {
			t.Errorf("%s: since %d, want %d to ProtocolVersion %d", c.name, c.since, ProtocolOldest, ProtocolVersion)
		}
		if i > 1 && c.since < commands[i-1].since {
			t.Errorf("%s (type %d) since %d, before the type under it (%d): a new type gets a new version", c.name, ct, c.since, commands[i-1].since)
		}
		if got := ct.String(); got != c.name {
			t.Errorf("CmdType(%d).String() = %q; want %q", i, got, c.name)
		}
		highest = c.since
	}
	for _, f := range fields {
		if f.since < ProtocolOldest || f.since > ProtocolVersion {
			t.Errorf("field %s: since %d, want %d to ProtocolVersion %d", f.name, f.since, ProtocolOldest, ProtocolVersion)
		}
		highest = max(highest, f.since)
	}
	if highest != ProtocolVersion {
		t.Errorf("highest since = %d; want ProtocolVersion %d (bump it only with a new type, field or snapshot format)", highest, ProtocolVersion)
	}
	for _, tt := range []struct {
		t     CmdType
		since int
	}{
		{CmdSubmitJob, 1}, {CmdNodeLeft, 1}, {CmdSetJobPriority, 1},
		{CmdSetClusterCA, 2}, {CmdArchiveJobs, 2},
		{0, 0}, {CmdType(len(commands)), 0}, {255, 0},
	} {
		if got := tt.t.Since(); got != tt.since {
			t.Errorf("%s.Since() = %d; want %d", tt.t, got, tt.since)
		}
		if got := tt.t.Known(); got != (tt.since > 0) {
			t.Errorf("%s.Known() = %v; want %v", tt.t, got, tt.since > 0)
		}
	}
	if ProtocolUnannounced < ProtocolOldest || ProtocolUnannounced > ProtocolVersion {
		t.Errorf("ProtocolUnannounced = %d; want %d to %d", ProtocolUnannounced, ProtocolOldest, ProtocolVersion)
	}
}

// A replica replaying a log that holds a type byte it does not know (an
// older agent after a newer one wrote it) diverges and says to upgrade:
// it never skips the entry (DESIGN invariant 5, and DESIGN "a replica
// that cannot apply an entry ... says so loudly").
func TestUnknownCommandDiverges(t *testing.T) {
	h := newHarness()
	h.must(t, CmdUpsertNode, UpsertNode{Node: gpuNode("n1", 1, "leaf0")})
	unknown := CmdType(len(commands)) // the next type a newer agent would add
	r := h.s.Apply(2, []byte{byte(unknown), 0x80})
	want := fmt.Sprintf("unknown command type %d at index 2: this agent (protocol v%d) is older than the cluster; upgrade it",
		unknown, ProtocolVersion)
	if !errors.Is(r.Err, ErrDiverged) || !errors.Is(r.Err, ErrUnknownCommand) || !strings.Contains(r.Err.Error(), want) {
		t.Fatalf("Apply(unknown type) error = %v; want ErrDiverged and ErrUnknownCommand with %q", r.Err, want)
	}
	if err := h.s.Diverged(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Diverged() = %v; want it to say %q", err, want)
	}
	if got := h.s.Index(); got != 2 {
		t.Fatalf("Index() = %d; want 2: the entry is consumed, not skipped silently", got)
	}
	// A later valid entry does not clear it: only a snapshot restore does.
	h.index = 2
	h.apply(t, CmdUpsertNode, UpsertNode{Node: gpuNode("n2", 1, "leaf0")})
	if err := h.s.Diverged(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Diverged() after a later entry = %v; want the first cause kept", err)
	}
}

// TestNeeds: a body that uses a later field needs its version; the same
// type without it needs only the type's.
func TestNeeds(t *testing.T) {
	plain := SubmitJob{Spec: cluster.Spec{Request: cluster.Request{Nodes: 2, TasksPerNode: 2}}}
	uneven := SubmitJob{Spec: cluster.Spec{Request: cluster.Request{Nodes: 2, TasksPerNode: 3, NTasks: 5}}}
	cyclicStep := StartStep{Spec: cluster.StepSpec{NTasks: 4, Distribution: "cyclic"}}
	batchInput := SubmitJob{Spec: cluster.Spec{Batch: &cluster.Batch{Script: "#!/bin/sh\n", Input: "in.txt"}}}
	batchNoInput := SubmitJob{Spec: cluster.Spec{Batch: &cluster.Batch{Script: "#!/bin/sh\n"}}}
	inputStep := StartStep{Spec: cluster.StepSpec{Input: "in.%t"}}
	outputStep := StartStep{Spec: cluster.StepSpec{Output: "out.%t"}}
	errorStep := StartStep{Spec: cluster.StepSpec{Error: "err.%t"}}
	for _, tt := range []struct {
		t    CmdType
		body any
		want int
	}{
		{CmdSubmitJob, plain, 1}, {CmdSubmitJob, uneven, 3},
		{CmdStartStep, StartStep{}, 1}, {CmdStartStep, cyclicStep, 3},
		{CmdArchiveJobs, ArchiveJobs{}, 2}, {255, uneven, 0},
		{CmdSetPolicy, SetPolicy{Policy: cluster.DefaultPolicy()}, 1},
		{CmdSetPolicy, SetPolicy{Policy: cluster.Policy{Scheduler: cluster.SchedulerQSSF}}, 3},
		{CmdSetPolicy, SetPolicy{Policy: cluster.Policy{StarveAfter: time.Hour}}, 3},
		{CmdSubmitJob, batchInput, 3}, {CmdSubmitJob, batchNoInput, 1}, {CmdStartStep, inputStep, 3},
		{CmdStartStep, outputStep, 3}, {CmdStartStep, errorStep, 3},
		{CmdStartStep, StartStep{Spec: cluster.StepSpec{Signal: &cluster.JobSignal{Number: 10, Before: time.Minute}}}, 5},
		{CmdStartStep, StartStep{Spec: cluster.StepSpec{NoKill: true}}, 5},
		{CmdSubmitJob, SubmitJob{Spec: cluster.Spec{Container: "/b"}}, 5},
		{CmdStartStep, StartStep{Spec: cluster.StepSpec{Container: "/b"}}, 5},
		{CmdStartStep, StartStep{RequestID: "s1/r"}, 6}, {CmdSubmitJob, SubmitJob{RequestID: "u1/r"}, 1},
		{CmdSignalJob, SignalJob{RequestID: "k1/r"}, 6}, {CmdSignalJob, SignalJob{Signal: 10}, 1},
		{CmdRequeueJob, RequeueJob{RequestID: "r1/r"}, 6}, {CmdRequeueJob, RequeueJob{Job: 1}, 1},
		{CmdUpdateJob, UpdateJob{RequestID: "t1/r"}, 6}, {CmdUpdateJob, UpdateJob{Job: 1}, 3},
	} {
		if got := Needs(tt.t, tt.body); got != tt.want {
			t.Errorf("Needs(%s, %+v) = %d; want %d", tt.t, tt.body, got, tt.want)
		}
	}
}
