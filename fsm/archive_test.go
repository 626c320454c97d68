package fsm

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/wire"
)

// TestArchiveJobs: finished jobs leave the live state for the archive,
// except one a live job depends on and one whose GPUs a node still holds;
// a new job cannot depend on an archived one; the archive keeps the newest
// ArchiveMax records and survives a snapshot.
func TestArchiveJobs(t *testing.T) {
	h := newHarness()
	withRunning(t, h) // job 1 running on n1, n2; job 2 pending
	for range 2 {
		h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 1)}) // jobs 3, 4
	}
	dep := spec(1, 1)
	dep.Dependency = &cluster.Dependency{Conditions: []cluster.DepCondition{{Type: cluster.DepAfterAny, Jobs: []cluster.DepJob{{ID: 3, Task: -1}}}}}
	h.must(t, CmdSubmitJob, SubmitJob{Spec: dep}) // job 5 waits on 3
	for _, id := range []cluster.JobID{1, 2, 3} {
		h.must(t, CmdCancelJob, CancelJob{Job: id, Time: h.now})
	}
	h.must(t, CmdArchiveJobs, ArchiveJobs{Before: h.now.Add(time.Hour), Time: h.now})
	v := h.s.View()
	var live, archived []cluster.JobID
	for _, j := range v.Jobs() {
		live = append(live, j.ID)
	}
	for _, j := range v.Archived() {
		archived = append(archived, j.ID)
	}
	// 1: cancelled, but n1 and n2 still hold its GPUs; 3: job 5 depends on it.
	if want := []cluster.JobID{1, 3, 4, 5}; !slices.Equal(live, want) {
		t.Errorf("live jobs %v; want %v", live, want)
	}
	if want := []cluster.JobID{2}; !slices.Equal(archived, want) {
		t.Errorf("archived %v; want %v", archived, want)
	}
	if j, ok := v.ArchivedJob(2); !ok || j.State != cluster.JobCancelled || len(j.Spec.Env) != 0 {
		t.Errorf("archived job 2 = %+v, %v", j, ok)
	}
	late := spec(1, 1)
	late.Dependency = &cluster.Dependency{Conditions: []cluster.DepCondition{{Type: cluster.DepAfterOK, Jobs: []cluster.DepJob{{ID: 2, Task: -1}}}}}
	if r := h.apply(t, CmdSubmitJob, SubmitJob{Spec: late}); r.Err == nil || !strings.Contains(r.Err.Error(), "archived") {
		t.Errorf("a dependency on archived job 2 = %v; want refused, saying it is archived", r.Err)
	}
	// Jobs that ended after Before stay.
	h.must(t, CmdCancelJob, CancelJob{Job: 4, Time: h.now})
	h.must(t, CmdArchiveJobs, ArchiveJobs{Before: h.now.Add(-time.Hour), Time: h.now})
	if _, ok := h.s.View().ArchivedJob(4); ok {
		t.Errorf("job 4, ended after Before, was archived")
	}
	restored(t, h.s)
}

// TestArchiveBounds (issue 12): 100,000 finished jobs leave the live state;
// sacct's source, the archive, keeps the newest ArchiveMax of them, and
// the snapshot stays bounded by it.
func TestArchiveBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 jobs (-short)")
	}
	h := newHarness()
	h.must(t, CmdSetPolicy, SetPolicy{Policy: cluster.Policy{ArchiveMax: 50000, MaxSubmitJobs: 200000, MaxJobCount: 200000}, Time: t0})
	const n = 100000
	s := spec(1, 1)
	s.Env = []string{"A_LONG_VARIABLE=" + strings.Repeat("x", 200)}
	for i := range n {
		h.must(t, CmdSubmitJob, SubmitJob{Spec: s})
		h.must(t, CmdCancelJob, CancelJob{Job: cluster.JobID(i + 1), Time: h.now})
	}
	before, _ := h.s.Snapshot()
	h.must(t, CmdArchiveJobs, ArchiveJobs{Before: h.now.Add(time.Second), Time: h.now})
	v := h.s.View()
	if len(v.Jobs()) != 0 || len(v.Archived()) != 50000 || v.Archived()[0].ID != n-50000+1 {
		t.Fatalf("after archiving: %d live, %d archived (first %d); want 0 live, the newest 50000 archived",
			len(v.Jobs()), len(v.Archived()), v.Archived()[0].ID)
	}
	after, _ := h.s.Snapshot()
	t.Logf("snapshot: %d bytes with 100,000 live finished jobs, %d with 50,000 archived", len(before), len(after))
	if len(after) > len(before)/2 {
		t.Errorf("snapshot %d bytes after archiving, %d before; want it far smaller", len(after), len(before))
	}
}

// restored returns a fresh state restored from s's snapshot, failing the
// test unless the snapshot round-trips to the same bytes.
func restored(tb testing.TB, s *State) *State {
	tb.Helper()
	snap := mustSnapshot(tb, s)
	r := New()
	if err := r.Restore(snap); err != nil {
		tb.Fatalf("Restore(Snapshot()) at %d: %v", s.Index(), err)
	}
	if again := mustSnapshot(tb, r); !bytes.Equal(snap, again) {
		tb.Errorf("snapshot at %d does not round-trip to the same bytes", s.Index())
	}
	return r
}

// snapshotBodyOf decodes s's snapshot, for tests that corrupt it.
func snapshotBodyOf(tb testing.TB, s *State) snapshotBody {
	tb.Helper()
	var b snapshotBody
	if err := wire.Decode(mustSnapshot(tb, s)[1:], &b); err != nil {
		tb.Fatal(err)
	}
	return b
}

// jobCorruption is an edit of the first job in a good snapshot that
// Restore must refuse with an error containing errHas.
type jobCorruption struct {
	name   string
	edit   func(j *cluster.Job)
	errHas string
}

// checkJobCorruptions checks that Restore refuses each edit of good's
// first job, changing nothing, and takes good unedited.
func checkJobCorruptions(t *testing.T, good func() snapshotBody, tests []jobCorruption) {
	t.Helper()
	edit := func(f func(j *cluster.Job)) []byte {
		b := good()
		f(b.Jobs[0])
		return encodeBody(t, b)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			err := s.Restore(edit(tt.edit))
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("Restore(%s) = %v; want an error mentioning %q", tt.name, err, tt.errHas)
			}
			if s.Index() != 0 {
				t.Errorf("a refused Restore changed the state")
			}
		})
	}
	if err := New().Restore(edit(func(*cluster.Job) {})); err != nil {
		t.Errorf("Restore(unedited fixture) = %v; want nil", err)
	}
}
