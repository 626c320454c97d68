package fsm

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

var updateGolden = flag.Bool("update-golden", false,
	"rewrite testdata/golden from the current code: only when a new golden format is added on purpose, never to make a failing test pass")

// The golden files were written by the code of the first format, before
// the command table and protocol versions existed. They are what a data
// dir of a released agent holds: its raft log entries and a snapshot.
const (
	goldenLogFile  = "testdata/golden/log-v1.hex"  // one entry per line, hex
	goldenWantFile = "testdata/golden/log-v1.want" // each entry's result, then the final hash
	goldenSnapFile = "testdata/golden/snapshot-v1.bin"
)

// goldenEntries is a log that uses every command type of protocol 1, each
// accepted where it can be, and a few refusals.
func goldenEntries(tb testing.TB) [][]byte {
	tb.Helper()
	now := t0
	var out [][]byte
	add := func(t CmdType, body any) {
		now = now.Add(time.Second)
		out = append(out, mustEncode(tb, t, stamp(body, now)))
	}
	at := func(d time.Duration) time.Time { return now.Add(d) }

	add(CmdSetClusterCA, SetClusterCA{CACert: []byte("-----BEGIN CERTIFICATE-----\ngolden\n"), CAKey: []byte("-----BEGIN EC PRIVATE KEY-----\ngolden\n"),
		GossipKey: bytes.Repeat([]byte{7}, 32), TokenKey: bytes.Repeat([]byte{9}, 32), Time: at(time.Second)})
	add(CmdSetPolicy, SetPolicy{Policy: cluster.Policy{PreemptGrace: 30 * time.Second}, Time: at(time.Second)})
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		add(CmdUpsertNode, UpsertNode{Node: gpuNode(n, 4, "leaf0")})
	}
	add(CmdSubmitJob, SubmitJob{RequestID: "a", Spec: spec(2, 2)})
	add(CmdSubmitJob, SubmitJob{RequestID: "b", Spec: spec(1, 2)})
	add(CmdSubmitJob, SubmitJob{RequestID: "c", Spec: batchSpec(2, 1)})
	add(CmdSubmitJob, SubmitJob{RequestID: "a", Spec: spec(2, 2)}) // duplicate
	add(CmdSetReasons, SetReasons{Reasons: []JobReason{{Job: 2, Reason: "Resources"}}})
	add(CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{0, 1}, "n2", []int{0, 1}), place(2, "n1", []int{0, 1})}})
	add(CmdTaskStarted, TaskStarted{Job: 1, Incarnation: 1, Node: "n1"})
	add(CmdTaskStarted, TaskStarted{Job: 1, Incarnation: 1, Node: "n2"})
	add(CmdStartStep, stepCmd(1, 1, 0, 0))
	add(CmdStartStep, stepCmd(1, 1, 1, 1))
	add(CmdStepExited, StepExited{Job: 1, Incarnation: 1, Step: 0, Node: "n1", Cause: CauseExit})
	add(CmdCancelStep, CancelStep{Job: 1, Step: 1})
	add(CmdSignalJob, SignalJob{Job: 1, Signal: 10})
	add(CmdAllocate, Allocate{Decisions: []Decision{place(3, "n3", []int{0}, "n4", []int{0})}})
	add(CmdPreemptJob, PreemptJob{Job: 3, By: 2, Deadline: at(time.Minute + time.Second), Time: at(time.Second)})
	add(CmdSetJobPriority, SetJobPriority{Job: 2, Priority: 500, Time: at(time.Second)})
	add(CmdSetHold, SetHold{Job: 2, Hold: cluster.HoldUser})
	add(CmdSetHold, SetHold{Job: 2})
	add(CmdRequeueJob, RequeueJob{Job: 3})
	add(CmdTaskExited, TaskExited{Job: 3, Incarnation: 1, Node: "n3", Cause: CauseCancelled})
	add(CmdTaskExited, TaskExited{Job: 3, Incarnation: 1, Node: "n4", Cause: CauseCancelled})
	add(CmdSetDrain, SetDrain{Node: "n4", Drain: true, Reason: "maintenance"})
	add(CmdNodeLeft, NodeLeft{Node: "n3"})
	add(CmdCancelJob, CancelJob{Job: 1})
	add(CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n1", ExitCode: 0, Cause: CauseCancelled, Usage: &cluster.Usage{}})
	add(CmdNodeDown, NodeDown{Node: "n2"})
	add(CmdAddJoinToken, AddJoinToken{Token: cluster.JoinToken{ID: "tok1", SecretHash: bytes.Repeat([]byte{1}, 32),
		Created: at(time.Second), Expires: at(time.Hour), UsesLeft: 2}, Time: at(time.Second)})
	add(CmdUseJoinToken, UseJoinToken{ID: "tok1", SecretHash: bytes.Repeat([]byte{1}, 32), Node: "n5", Time: at(time.Second)})
	add(CmdRevokeNode, RevokeNode{Name: "n2", Time: at(time.Second)})
	add(CmdSetGossipKeys, SetGossipKeys{Keys: [][]byte{bytes.Repeat([]byte{8}, 32), bytes.Repeat([]byte{7}, 32)}, Time: at(time.Second)})
	add(CmdRevokeUserToken, RevokeUserToken{ID: "ut1", Expires: at(time.Hour), Time: at(time.Second)})
	add(CmdArchiveJobs, ArchiveJobs{Before: at(time.Second), Time: at(time.Second)})
	add(CmdCancelJob, CancelJob{Job: 99}) // refused: unknown job
	return out
}

// replayGolden applies entries from index 1 and returns one line per
// entry (its result) and the state.
func replayGolden(entries [][]byte) (string, *State) {
	s := New()
	var b strings.Builder
	for i, e := range entries {
		r := s.Apply(uint64(i+1), e)
		fmt.Fprintf(&b, "%d %s", i+1, CmdType(e[0]))
		if r.Err != nil {
			fmt.Fprintf(&b, " error: %v", r.Err)
		}
		if r.JobID != 0 {
			fmt.Fprintf(&b, " job=%d", r.JobID)
		}
		if r.Duplicate {
			b.WriteString(" duplicate")
		}
		for _, rj := range r.Rejected {
			fmt.Fprintf(&b, " rejected(%d: %s)", rj.Job, rj.Reason)
		}
		b.WriteString("\n")
	}
	_, sum := s.Hash()
	fmt.Fprintf(&b, "hash %x\n", sum)
	return b.String(), s
}

// TestGoldenLog replays a raft log written by the first format's code: it
// must give the same results, the same running hash and the same snapshot
// bytes as it did then, so a data dir of an older agent starts and
// replays to the state hash the others hold (DESIGN invariant 5).
func TestGoldenLog(t *testing.T) {
	if *updateGolden {
		writeGolden(t)
	}
	raw, err := os.ReadFile(goldenLogFile)
	if err != nil {
		t.Fatal(err)
	}
	var entries [][]byte
	for _, line := range strings.Fields(string(raw)) {
		e, err := hex.DecodeString(line)
		if err != nil {
			t.Fatalf("%s: %v", goldenLogFile, err)
		}
		entries = append(entries, e)
	}
	want, err := os.ReadFile(goldenWantFile)
	if err != nil {
		t.Fatal(err)
	}
	got, s := replayGolden(entries)
	if got != string(want) {
		t.Errorf("replay of %s =\n%s\nwant (%s)\n%s", goldenLogFile, got, goldenWantFile, want)
	}
	snap, err := os.ReadFile(goldenSnapFile)
	if err != nil {
		t.Fatal(err)
	}
	if b := mustSnapshot(t, s); !bytes.Equal(b, snap) {
		t.Errorf("Snapshot() after replay differs from %s (%d bytes, want %d)", goldenSnapFile, len(b), len(snap))
	}
}

// TestGoldenSnapshotRestores: a snapshot written by the first format's
// code restores to the state it was taken of (same index and hash) and
// snapshots again to the same bytes.
func TestGoldenSnapshotRestores(t *testing.T) {
	snap, err := os.ReadFile(goldenSnapFile)
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	if err := s.Restore(snap); err != nil {
		t.Fatalf("Restore(%s): %v", goldenSnapFile, err)
	}
	want, err := os.ReadFile(goldenWantFile)
	if err != nil {
		t.Fatal(err)
	}
	index, sum := s.Hash()
	if line := fmt.Sprintf("hash %x\n", sum); !strings.HasSuffix(string(want), line) || index != uint64(strings.Count(string(want), "\n")-1) {
		t.Errorf("Restore(%s): index %d, %s; want the last index and hash of %s", goldenSnapFile, index, line, goldenWantFile)
	}
	if b := mustSnapshot(t, s); !bytes.Equal(b, snap) {
		t.Errorf("Snapshot() after Restore(%s) differs from it", goldenSnapFile)
	}
}

func writeGolden(t *testing.T) {
	entries := goldenEntries(t)
	var log strings.Builder
	for _, e := range entries {
		log.WriteString(hex.EncodeToString(e) + "\n")
	}
	want, s := replayGolden(entries)
	if err := os.MkdirAll(filepath.Dir(goldenLogFile), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{goldenLogFile, []byte(log.String())}, {goldenWantFile, []byte(want)}, {goldenSnapFile, mustSnapshot(t, s)}} {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A snapshot of a format newer than this build reads (a newer leader's,
// sent to a replica not yet upgraded) is refused with what to do, never
// misread, and the state stays as it was.
func TestNewerSnapshotFormatRefused(t *testing.T) {
	snap, err := os.ReadFile(goldenSnapFile)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness()
	h.must(t, CmdUpsertNode, UpsertNode{Node: gpuNode("n1", 1, "leaf0")})
	before := mustSnapshot(t, h.s)
	newer := append([]byte{snapshotVersion + 1}, snap[1:]...)
	err = h.s.Restore(newer)
	want := fmt.Sprintf("format version %d is newer than this agent reads (%d, protocol v%d): upgrade it", snapshotVersion+1, snapshotVersion, ProtocolVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Restore(format %d) error = %v; want one containing %q", snapshotVersion+1, err, want)
	}
	if after := mustSnapshot(t, h.s); !bytes.Equal(before, after) {
		t.Fatal("a refused Restore changed the state")
	}
}
