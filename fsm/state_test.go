package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

func TestApplyDiverges(t *testing.T) {
	valid := mustEncode(t, CmdCancelJob, CancelJob{Job: 1})
	tests := []struct {
		name   string
		data   []byte
		errHas string
	}{
		{"empty entry", nil, "empty entry"},
		{"unknown type", []byte{0xee, 0x80}, "unknown command type 238"},
		{"type zero", []byte{0}, "unknown command type 0"},
		{"no body", []byte{byte(CmdSubmitJob)}, "truncated"},
		{"garbage body", []byte{byte(CmdCancelJob), 0xc1}, "invalid code"},
		{"trailing bytes", append(bytes.Clone(valid), 0x00), "trailing"},
		{"wrong field type", append([]byte{byte(CmdCancelJob)}, 0x81, 0xa3, 'j', 'o', 'b', 0xa1, 'x'), "decode CancelJob"},
		// msgpack v5.4.1 would preallocate 2^32-1 decisions for this.
		{"huge array header", []byte{byte(CmdAllocate), 0x81, 0xa9, 'd', 'e', 'c', 'i', 's', 'i', 'o', 'n', 's', 0xdd, 0xff, 0xff, 0xff, 0xff}, "declares 4294967295 values"},
		{"huge string header", []byte{byte(CmdNodeDown), 0x81, 0xa4, 'n', 'o', 'd', 'e', 0xdb, 0xff, 0xff, 0xff, 0xff}, "declares 4294967295 bytes"},
		{"too deep", append([]byte{byte(CmdSetReasons)}, bytes.Repeat([]byte{0x91}, 40)...), "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			r := s.Apply(7, tt.data)
			if !errors.Is(r.Err, ErrDiverged) || !strings.Contains(r.Err.Error(), tt.errHas) || !strings.Contains(r.Err.Error(), "index 7") {
				t.Fatalf("Apply(%x).Err = %v; want ErrDiverged at index 7 mentioning %q", tt.data, r.Err, tt.errHas)
			}
			if err := s.Diverged(); !errors.Is(err, ErrDiverged) {
				t.Errorf("Diverged() = %v; want ErrDiverged", err)
			}
			if idx, sum := s.Hash(); idx != 7 || sum != chainHash([32]byte{}, 7, tt.data) {
				t.Errorf("Hash() = %d, %x; want index 7 and the entry hashed", idx, sum)
			}
		})
	}
}

func TestApplyIndexMustIncrease(t *testing.T) {
	h := newHarness()
	h.must(t, CmdUpsertNode, UpsertNode{Node: gpuNode("n1", 1, "l")})
	idx, sum := h.s.Hash()
	for _, index := range []uint64{0, 1} {
		r := h.s.Apply(index, mustEncode(t, CmdNodeDown, NodeDown{Node: "n1"}))
		if !errors.Is(r.Err, ErrDiverged) {
			t.Errorf("Apply(%d, ...) after index 1 = %v; want ErrDiverged", index, r.Err)
		}
	}
	if gotIdx, gotSum := h.s.Hash(); gotIdx != idx || gotSum != sum {
		t.Errorf("Hash() = %d, %x; want %d, %x (an entry from the past must not move the state)", gotIdx, gotSum, idx, sum)
	}
	if n, _ := h.s.View().Node("n1"); n.Status != cluster.NodeUp {
		t.Errorf("node n1 = %s; want up", n.Status)
	}
}

// TestRunningHash pins the hash chain's definition: replicas and the chaos
// checker compare it (DESIGN invariant 5), so it must never change.
func TestRunningHash(t *testing.T) {
	s := New()
	entries := [][]byte{
		mustEncode(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 1), Time: t0}),
		mustEncode(t, CmdCancelJob, CancelJob{Job: 5, Time: t0}), // refused, still hashed
		{0xff}, // diverges, still hashed
	}
	var want [32]byte
	for i, e := range entries {
		index := uint64(10 * (i + 1))
		s.Apply(index, e)
		h := sha256.New()
		h.Write(want[:])
		binary.Write(h, binary.BigEndian, index)
		h.Write(e)
		copy(want[:], h.Sum(nil))
	}
	if idx, sum := s.Hash(); idx != 30 || sum != want {
		t.Errorf("Hash() = %d, %x; want 30, %x", idx, sum, want)
	}
}

// TestViewIsImmutable: a view keeps showing its index while the state
// moves on, and its Changed channel tells watchers that it did.
func TestViewIsImmutable(t *testing.T) {
	h := newHarness()
	withRunning(t, h)
	v := h.s.View()
	if v2 := h.s.View(); v2 != v {
		t.Errorf("View() twice at one index built two views; want the cached one")
	}
	select {
	case <-v.Changed():
		t.Fatal("Changed() closed before the state moved")
	default:
	}
	j1, n1 := job(t, v, 1), v.Jobs()[0]
	h.must(t, CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n1", ExitCode: 2})
	h.must(t, CmdNodeDown, NodeDown{Node: "n2"})
	h.must(t, CmdSubmitJob, SubmitJob{RequestID: "c", Spec: spec(1, 1)})
	select {
	case <-v.Changed():
	default:
		t.Fatal("Changed() still open after the state moved")
	}
	if j1.State != cluster.JobRunning || n1 != j1 || j1.Alloc.Nodes[0].Released {
		t.Errorf("job 1 in the old view = %s released %t; want RUNNING unreleased", j1.State, j1.Alloc.Nodes[0].Released)
	}
	if n, _ := v.Node("n2"); n.Status != cluster.NodeUp {
		t.Errorf("old view node n2 = %s; want up", n.Status)
	}
	if len(v.Jobs()) != 2 {
		t.Errorf("old view has %d jobs; want 2", len(v.Jobs()))
	}
	if _, ok := v.JobByRequestID("c"); ok {
		t.Errorf("old view finds request c submitted after it")
	}
	wantFree(t, v, "n1", 2, 3)
	wantFree(t, h.s.View(), "n1", 0, 1, 2, 3)
	if id, ok := v.HeldBy("n1", 0); id != 1 || !ok {
		t.Errorf("old view HeldBy(n1, 0) = %d, %t; want 1, true", id, ok)
	}
}

// TestRequestIDTableCompaction crosses the tail bound so lookups go
// through a rebuilt base map, in the state and in views of either side.
func TestRequestIDTableCompaction(t *testing.T) {
	h := newHarness()
	rid := func(i int) string { return fmt.Sprintf("req-%d", i) }
	n := ridTableTail + 10
	var mid *View
	for i := range n {
		if i == ridTableTail-1 {
			mid = h.s.View()
		}
		h.must(t, CmdSubmitJob, SubmitJob{RequestID: rid(i), Spec: spec(1, 1)})
	}
	last := h.s.View()
	for i := range n {
		if id, ok := last.JobByRequestID(rid(i)); !ok || id != cluster.JobID(i+1) {
			t.Fatalf("JobByRequestID(%q) = %d, %t; want %d", rid(i), id, ok, i+1)
		}
		if r := h.apply(t, CmdSubmitJob, SubmitJob{RequestID: rid(i), Spec: spec(1, 1)}); !r.Duplicate || r.JobID != cluster.JobID(i+1) {
			t.Fatalf("resubmit %q = %+v; want duplicate of %d", rid(i), r, i+1)
		}
		_, ok := mid.JobByRequestID(rid(i))
		if want := i < ridTableTail-1; ok != want {
			t.Fatalf("mid view JobByRequestID(%q) found = %t; want %t", rid(i), ok, want)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	h := newHarness()
	withRunning(t, h)
	h.must(t, CmdTaskStarted, TaskStarted{Job: 1, Incarnation: 1, Node: "n1"})
	h.must(t, CmdSetReasons, SetReasons{Reasons: []JobReason{{Job: 2, Reason: cluster.ReasonResources}}})
	r := restored(t, h.s)
	if a, b := stateDigest(t, h.s), stateDigest(t, r); a != b {
		t.Errorf("Digest() = %x after restore; want %x", b, a)
	}
	if a, _ := h.s.Hash(); a != r.Index() {
		t.Errorf("Index() = %d after restore; want %d", r.Index(), a)
	}
	// The restored replica goes on exactly like the original one.
	next := mustEncode(t, CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n2", ExitCode: 1, Time: t0})
	for _, s := range []*State{h.s, r} {
		s.Apply(h.index+1, next)
	}
	if a, b := stateDigest(t, h.s), stateDigest(t, r); a != b {
		t.Errorf("digests differ after one more entry: %x vs %x", a, b)
	}
	wantFree(t, r.View(), "n2", 0, 1, 2, 3)
	wantFree(t, r.View(), "n1", 2, 3)
}

func stateDigest(t *testing.T, s *State) [32]byte {
	t.Helper()
	_, sum, err := s.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestRestoreRefusesCorruptSnapshots(t *testing.T) {
	good := func() snapshotBody {
		h := newHarness()
		withRunning(t, h)
		v := h.s.View()
		b := snapshotBodyOf(t, h.s)
		if len(b.Jobs) != 2 || len(b.Nodes) != 3 || b.Index != v.Index {
			t.Fatalf("fixture snapshot = %d jobs %d nodes; want 2, 3", len(b.Jobs), len(b.Nodes))
		}
		return b
	}
	edit := func(f func(b *snapshotBody)) []byte {
		b := good()
		f(&b)
		return encodeBody(t, b)
	}
	valid := edit(func(*snapshotBody) {})
	tests := []struct {
		name   string
		data   []byte
		errHas string
	}{
		{"empty", nil, "empty"},
		{"version", append([]byte{9}, valid[1:]...), "format version 9"},
		{"truncated", valid[:len(valid)-3], "decode"},
		{"trailing", append(bytes.Clone(valid), 0), "trailing"},
		{"short hash", edit(func(b *snapshotBody) { b.Hash = b.Hash[:4] }), "hash: 4 bytes"},
		{"duplicate job id", edit(func(b *snapshotBody) { b.Jobs[1] = b.Jobs[0] }), "ascending unique ids"},
		{"nil job", edit(func(b *snapshotBody) { b.Jobs[1] = nil }), "nil"},
		{"job id past last", edit(func(b *snapshotBody) { b.LastJobID = 1 }), "last job id 1"},
		{"unknown job state", edit(func(b *snapshotBody) { b.Jobs[1].State = "ZOMBIE" }), "known job state"},
		{"running without alloc", edit(func(b *snapshotBody) { b.Jobs[0].Alloc = nil }), "RUNNING without an allocation"},
		{"bad request", edit(func(b *snapshotBody) { b.Jobs[0].Spec.Request.Nodes = 0 }), "request: nodes 0"},
		{"released but running", edit(func(b *snapshotBody) { b.Jobs[0].Alloc.Nodes[0].Released = true }), "released"},
		{"unknown task state", edit(func(b *snapshotBody) { b.Jobs[0].Alloc.Nodes[0].State = "odd" }), "known task state"},
		{"node twice in alloc", edit(func(b *snapshotBody) { b.Jobs[0].Alloc.Nodes[1].Node = "n1" }), "named twice"},
		{"gpu out of range", edit(func(b *snapshotBody) { b.Jobs[0].Alloc.Nodes[0].GPUs[0] = -1 }), "out of range"},
		{
			// DESIGN invariant 1 holds in what is restored, too.
			"gpu held twice", edit(func(b *snapshotBody) {
				j := b.Jobs[0].Clone()
				j.ID = 2
				j.Spec = b.Jobs[1].Spec
				j.Spec.Request.Nodes = 2
				b.Jobs[1] = j
			}), "already held by job 1",
		},
		{"nodes out of order", edit(func(b *snapshotBody) { b.Nodes[0], b.Nodes[1] = b.Nodes[1], b.Nodes[0] }), "ascending unique names"},
		{"invalid node", edit(func(b *snapshotBody) { b.Nodes[0].GPUs[0].Index = 3 }), "gpus[0].index 3"},
		{"rid unknown job", edit(func(b *snapshotBody) { b.RequestIDs[0].Job = 99 }), "job 99"},
		{"rids out of order", edit(func(b *snapshotBody) { b.RequestIDs[0], b.RequestIDs[1] = b.RequestIDs[1], b.RequestIDs[0] }), "ascending unique"},
		{"empty rid", edit(func(b *snapshotBody) { b.RequestIDs[0].RequestID = "" }), "want 1 to"},
		{"rid of an unknown kind", edit(func(b *snapshotBody) { b.RequestIDs[0].Kind = "hold" }), "kind \"hold\""},
		{"step rid without its incarnation", edit(func(b *snapshotBody) { b.RequestIDs[0].Kind = ridStep }), "of an incarnation from 1"},
		{"submit rid with a step", edit(func(b *snapshotBody) { b.RequestIDs[0].Step = 2 }), "want none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness()
			h.must(t, CmdUpsertNode, UpsertNode{Node: gpuNode("keep", 2, "l")})
			before := mustSnapshot(t, h.s)
			err := h.s.Restore(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("Restore(%s) = %v; want an error mentioning %q", tt.name, err, tt.errHas)
			}
			if after := mustSnapshot(t, h.s); !bytes.Equal(before, after) {
				t.Errorf("a refused Restore changed the state")
			}
		})
	}
	if err := New().Restore(valid); err != nil {
		t.Errorf("Restore(unedited fixture) = %v; want nil", err)
	}
}

func mustSnapshot(tb testing.TB, s *State) []byte {
	tb.Helper()
	b, err := s.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestRestoreClearsDivergedAndWakesViews(t *testing.T) {
	h := newHarness()
	withRunning(t, h)
	snap := mustSnapshot(t, h.s)
	h.s.Apply(h.index+1, []byte{0xff})
	v := h.s.View()
	if h.s.Diverged() == nil {
		t.Fatal("Diverged() = nil after an unknown command")
	}
	if err := h.s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Diverged(); err != nil {
		t.Errorf("Diverged() = %v after Restore; want nil", err)
	}
	select {
	case <-v.Changed():
	default:
		t.Error("Changed() of a view before Restore still open")
	}
	if got := h.s.Index(); got != h.index {
		t.Errorf("Index() = %d; want the snapshot's %d", got, h.index)
	}
}
