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

// TestArchiveCommand: the archive loop asks the FSM to age request ids
// only where every server speaks the protocol that does (7): an older
// server would keep the ids, and its state would differ.
func TestArchiveCommand(t *testing.T) {
	before, now := time.Unix(100, 0), time.Unix(400, 0)
	for _, tc := range []struct {
		name   string
		oldest int
		forget bool
	}{
		{"every server speaks 7", 7, true},
		{"a server speaks 6", 6, false},
		{"a server speaks 2", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := func(ct fsm.CmdType, need int) error {
				return ProtocolGate(ct, need, []ServerProtocol{{ID: "n1", Protocol: 7}, {ID: "n2", Protocol: tc.oldest}})
			}
			got := ArchiveCommand(before, now, gate)
			want := fsm.ArchiveJobs{Before: before, Time: now, ForgetRequests: tc.forget}
			if got != want {
				t.Errorf("ArchiveCommand = %+v; want %+v", got, want)
			}
		})
	}
}
