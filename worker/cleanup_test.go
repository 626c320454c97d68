package worker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// discard is the loops' log in tests.
var discard = slog.New(slog.DiscardHandler)

// retainedState builds a replica at t0 with OutputRetention an hour:
// job 1 ended at t0 and job 2 at t0+30m, both archived at t0+40m; job 3
// is live.
func retainedState(t *testing.T, t0 time.Time) *fsm.State {
	t.Helper()
	sp := cluster.Spec{Name: "x", Command: []string{"true"}, User: "ada", UID: 1000, GID: 1000,
		Request: cluster.Request{Nodes: 1}.WithDefaults()}
	submit := fsm.SubmitJob{Spec: sp, Time: t0}
	cmds := []struct {
		typ  fsm.CmdType
		body any
	}{
		{fsm.CmdSetPolicy, fsm.SetPolicy{Policy: cluster.Policy{MinJobAge: time.Minute, OutputRetention: time.Hour}, Time: t0}},
		{fsm.CmdSubmitJob, submit}, {fsm.CmdSubmitJob, submit}, {fsm.CmdSubmitJob, submit},
		{fsm.CmdCancelJob, fsm.CancelJob{Job: 1, Time: t0}},
		{fsm.CmdCancelJob, fsm.CancelJob{Job: 2, Time: t0.Add(30 * time.Minute)}},
		{fsm.CmdArchiveJobs, fsm.ArchiveJobs{Before: t0.Add(40 * time.Minute), Time: t0.Add(40 * time.Minute)}},
	}
	st := fsm.New()
	for i, c := range cmds {
		data, err := fsm.Encode(c.typ, c.body)
		if err != nil {
			t.Fatal(err)
		}
		if r := st.Apply(uint64(i+1), data); r.Err != nil {
			t.Fatalf("apply %s: %v", c.typ, r.Err)
		}
	}
	return st
}

// TestOutputsToForget: a node keeps a job's task directories while it is
// live and for OutputRetention after it ended, and drops those of jobs
// the cluster forgot.
func TestOutputsToForget(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	v := retainedState(t, t0).View()
	stored := []cluster.JobID{1, 2, 3, 99}
	for _, tt := range []struct {
		at   time.Duration
		want []cluster.JobID
	}{
		{50 * time.Minute, []cluster.JobID{99}},        // 1, 2 within the hour; 3 live; 99 unknown
		{70 * time.Minute, []cluster.JobID{1, 99}},     // 1 ended 70 min ago
		{100 * time.Minute, []cluster.JobID{1, 2, 99}}, // 2 ended 70 min ago; 3 still live
	} {
		if got := OutputsToForget(v, v.Policy().Retention(), stored, t0.Add(tt.at)); !slices.Equal(got, tt.want) {
			t.Errorf("OutputsToForget at +%s = %v; want %v", tt.at, got, tt.want)
		}
	}
}

func TestCleanupEvery(t *testing.T) {
	for _, tt := range []struct{ retention, want time.Duration }{
		{0, time.Second},
		{5 * time.Second, time.Second},
		{time.Hour, 6 * time.Minute},
		{7 * 24 * time.Hour, 10 * time.Minute},
	} {
		if got := CleanupEvery(tt.retention); got != tt.want {
			t.Errorf("CleanupEvery(%s) = %s; want %s", tt.retention, got, tt.want)
		}
	}
}

// waitClock is a Timer stopped at now whose waits end when the test
// sends on wake (unbuffered: a send is taken once the round before it
// has finished).
type waitClock struct {
	now  time.Time
	wake chan time.Time
}

func (c *waitClock) Now() time.Time                       { return c.now }
func (c *waitClock) After(time.Duration) <-chan time.Time { return c.wake }

// fakeOutputs are task directories in memory.
type fakeOutputs struct {
	stored  []cluster.JobID
	listErr error
	scans   int
	removed []cluster.JobID
}

func (o *fakeOutputs) StoredJobs() ([]cluster.JobID, error) {
	o.scans++
	return o.stored, o.listErr
}

func (o *fakeOutputs) Forget(id cluster.JobID) (int, error) {
	if id == 2 {
		return 0, errors.New("busy")
	}
	o.removed = append(o.removed, id)
	o.stored = slices.DeleteFunc(o.stored, func(s cluster.JobID) bool { return s == id })
	return 1, nil
}

// feedReplica hands the loop one Retained per round, from the test, and
// a zero one once stop is closed. A round starts when the test feeds it;
// a send on the clock's wake returns once the round has finished, and
// the next waits for its feed, so the test reads the fakes in between.
type feedReplica struct {
	feed chan Retained
	stop chan struct{}
}

func (f feedReplica) Retained() Retained {
	select {
	case r := <-f.feed:
		return r
	case <-f.stop:
		return Retained{}
	}
}

// TestCleanerRun runs the cleanup loop: it scans nothing while the
// replica is not trusted; trusted, it removes what OutputsToForget names
// (a failed removal is only logged) and does not scan again before
// CleanupEvery has passed.
func TestCleanerRun(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	v := retainedState(t, t0).View()
	rep := feedReplica{feed: make(chan Retained), stop: make(chan struct{})}
	out := &fakeOutputs{stored: []cluster.JobID{1, 2, 3, 99}}
	clock := &waitClock{now: t0.Add(100 * time.Minute), wake: make(chan time.Time)}
	c := Cleaner{Replica: rep, Outputs: out, Clock: clock, Log: discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	round := func(trusted bool) {
		rep.feed <- Retained{Jobs: v, Retention: time.Hour, Trusted: trusted}
		clock.wake <- clock.now
	}

	round(false)
	if out.scans != 0 {
		t.Fatalf("scanned an untrusted replica")
	}
	round(true)
	if want := []cluster.JobID{1, 99}; out.scans != 1 || !slices.Equal(out.removed, want) {
		t.Fatalf("%d scans removed %v; want 1 removing %v (2 fails, 3 is live)", out.scans, out.removed, want)
	}
	clock.now = clock.now.Add(time.Minute)
	round(true)
	if out.scans != 1 {
		t.Fatalf("%d scans a minute after the first; want 1", out.scans)
	}
	clock.now = clock.now.Add(6 * time.Minute)
	round(true)
	cancel()
	close(rep.stop)
	<-done
	if out.scans != 2 || !slices.Equal(out.removed, []cluster.JobID{1, 99}) {
		t.Errorf("%d scans removed %v; want 2, the second removing nothing", out.scans, out.removed)
	}
	if want := []cluster.JobID{2, 3}; !slices.Equal(out.stored, want) {
		t.Errorf("left %v; want %v", out.stored, want)
	}

	// A failed listing removes nothing.
	out = &fakeOutputs{stored: []cluster.JobID{99}, listErr: errors.New("disk gone")}
	c.Outputs = out
	c.Round(Retained{Jobs: v, Retention: time.Hour}, nil, clock.now)
	if len(out.removed) != 0 {
		t.Errorf("removed %v after a failed listing", out.removed)
	}
}

// followedJobs is JobRecords holding live jobs only, as a worker's view
// from its server does.
type followedJobs map[cluster.JobID]bool

func (l followedJobs) Job(id cluster.JobID) (*cluster.Job, bool) {
	if !l[id] {
		return nil, false
	}
	return &cluster.Job{ID: id}, true
}

func (followedJobs) ArchivedJob(cluster.JobID) (*cluster.Job, bool) { return nil, false }

// TestPartialOutputsToForget: a worker keeps a job's task directories for
// the output retention after the job left its view (its server sends no
// archive), and never removes those of a job still in it.
func TestPartialOutputsToForget(t *testing.T) {
	t0 := time.Unix(5000, 0)
	keep := time.Hour
	live := followedJobs{1: true}
	gone := map[cluster.JobID]time.Time{}
	stored := []cluster.JobID{1, 2}
	for _, s := range []struct {
		at   time.Duration
		want []cluster.JobID
	}{
		{0, nil}, // 2 just left the view: its retention starts
		{keep - time.Second, nil},
		{keep, []cluster.JobID{2}}, // past the retention; 1 is live
		{2 * keep, []cluster.JobID{2}},
	} {
		if got := PartialOutputsToForget(live, keep, stored, gone, t0.Add(s.at)); !slices.Equal(got, s.want) {
			t.Errorf("at +%s: PartialOutputsToForget = %v; want %v", s.at, got, s.want)
		}
	}
	// Directories gone are forgotten from the memory too.
	PartialOutputsToForget(live, keep, []cluster.JobID{1}, gone, t0)
	if len(gone) != 0 {
		t.Errorf("gone = %v after job 2's directories went; want empty", gone)
	}
}
