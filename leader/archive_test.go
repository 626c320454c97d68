package leader

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// waitClock is a Clock stopped at now whose waits end when the test
// sends on wake.
type waitClock struct {
	now  time.Time
	wake chan time.Time
}

func (c waitClock) Now() time.Time                                     { return c.now }
func (c waitClock) After(time.Duration) <-chan time.Time               { return c.wake }
func (c waitClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return c.wake, func() {} }

// twoRounds runs loop, sends now on ticks twice (unbuffered, the second
// send is taken only once the first round has finished: proposed all it
// decided), then stops loop and waits for it to return.
func twoRounds(loop func(context.Context), ticks chan<- time.Time, now time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); loop(ctx) }()
	ticks <- now
	ticks <- now
	cancel()
	<-done
}

// TestArchiverArchivesFinishedJobs runs the archive loop for two rounds:
// the first archives the job that ended longer than MinJobAge ago, with
// ArchiveDue's cut-off, the second finds nothing more to archive.
func TestArchiverArchivesFinishedJobs(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	h := &harness{s: fsm.New(), now: t0}
	h.must(t, fsm.CmdSetPolicy, fsm.SetPolicy{Policy: cluster.Policy{MinJobAge: time.Minute}, Time: t0})
	sp := cluster.Spec{Name: "x", Command: []string{"true"}, User: "ada", UID: 1000, GID: 1000,
		Request: cluster.Request{Nodes: 1}.WithDefaults()}
	h.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: sp, Time: t0})
	h.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: sp, Time: t0})
	h.must(t, fsm.CmdCancelJob, fsm.CancelJob{Job: 1, Time: t0})

	if _, due := ArchiveDue(h.s.View(), t0.Add(30*time.Second)); due {
		t.Errorf("archive due 30 s after job 1 ended; MinJobAge is a minute")
	}

	var archives []fsm.ArchiveJobs
	rec := &recorder{h: h}
	prop := proposerFunc(func(ctx context.Context, ct fsm.CmdType, body any) (fsm.Result, error) {
		if aj, ok := body.(fsm.ArchiveJobs); ok {
			archives = append(archives, aj)
		}
		return rec.Apply(ctx, ct, body)
	})
	now := t0.Add(2 * time.Minute)
	clock := waitClock{now: now, wake: make(chan time.Time)}
	speaks := func(context.Context, fsm.CmdType, int) error { return nil }
	a := Archiver{State: h.s, Propose: prop, Clock: clock, Log: slog.New(slog.DiscardHandler), Gate: speaks}
	twoRounds(a.Run, clock.wake, now)

	if len(archives) != 1 || !archives[0].Before.Equal(t0.Add(time.Minute)) || !archives[0].ForgetRequests {
		t.Fatalf("proposed %+v; want one ArchiveJobs before %v forgetting request ids", archives, t0.Add(time.Minute))
	}
	if _, ok := h.s.View().ArchivedJob(1); !ok {
		t.Errorf("job 1 is not archived")
	}
	if _, ok := h.s.View().Job(2); !ok {
		t.Errorf("job 2, pending, left the live state")
	}
	if len(rec.errs) > 0 {
		t.Errorf("the FSM refused: %q", rec.errs)
	}
}

// TestPlanArchive: the archive loop proposes when a finished job is due
// or, once every server speaks protocol 7, when a request id is to be
// stamped or forgotten; it asks the FSM to age ids only then (an older
// server would keep them, and its state would differ).
func TestPlanArchive(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	speaking := func(oldest int) func(fsm.CmdType, int) error {
		return func(ct fsm.CmdType, need int) error {
			return ProtocolGate(ct, need, []ServerProtocol{{ID: "n1", Protocol: 7}, {ID: "n2", Protocol: oldest}})
		}
	}
	sp := cluster.Spec{Name: "x", Command: []string{"true"}, User: "ada", UID: 1000, GID: 1000,
		Request: cluster.Request{Nodes: 1}.WithDefaults()}
	empty := &harness{s: fsm.New(), now: t0}
	withID := &harness{s: fsm.New(), now: t0}
	withID.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: sp, RequestID: "u1000/a", Time: t0})
	// A stamped id whose job has left the live state, and one whose job
	// is still pending (a submit's id names its job while it is live).
	stamped := &harness{s: fsm.New(), now: t0}
	stamped.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: sp, RequestID: "u1000/a", Time: t0})
	stamped.must(t, fsm.CmdCancelJob, fsm.CancelJob{Job: 1, Time: t0})
	stamped.must(t, fsm.CmdArchiveJobs, fsm.ArchiveJobs{Before: t0.Add(time.Second), Time: t0, ForgetRequests: true})
	pending := &harness{s: fsm.New(), now: t0}
	pending.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: sp, RequestID: "u1000/a", Time: t0})
	pending.must(t, fsm.CmdArchiveJobs, fsm.ArchiveJobs{Before: t0, Time: t0, ForgetRequests: true})
	finished := &harness{s: fsm.New(), now: t0}
	finished.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: sp, Time: t0})
	finished.must(t, fsm.CmdCancelJob, fsm.CancelJob{Job: 1, Time: t0})

	for _, tc := range []struct {
		name        string
		h           *harness
		at          time.Duration // after t0
		oldest      int
		due, forget bool
	}{
		{"nothing to do", empty, time.Hour, 7, false, true},
		{"an id to stamp", withID, time.Minute, 7, true, true},
		{"an id to stamp, a server at 6", withID, time.Minute, 6, false, false},
		{"a stamped id, retention not over", stamped, cluster.RequestIDRetention, 7, false, true},
		{"a stamped id past retention", stamped, cluster.RequestIDRetention + time.Second, 7, true, true},
		{"a stamped id past retention, a server at 6", stamped, cluster.RequestIDRetention + time.Second, 6, false, false},
		{"a stamped submit id past retention, its job pending", pending, cluster.RequestIDRetention + time.Second, 7, false, true},
		{"a finished job, a server at 6", finished, cluster.DefaultMinJobAge + time.Second, 6, true, false},
		{"a finished job not due yet", finished, time.Minute, 6, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(tc.at)
			c, due := PlanArchive(tc.h.s.View(), now, speaking(tc.oldest))
			want := fsm.ArchiveJobs{Before: now.Add(-cluster.DefaultMinJobAge), Time: now, ForgetRequests: tc.forget}
			if due != tc.due || c != want {
				t.Errorf("PlanArchive = %+v, %v; want %+v, %v", c, due, want, tc.due)
			}
		})
	}
}
