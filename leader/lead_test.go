package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/fsm"
)

// TestTakeoverOf: a node elected leads only from a replica that holds
// everything committed (the barrier) and has not diverged (DESIGN
// invariants 1 and 5: a diverged replica never schedules).
func TestTakeoverOf(t *testing.T) {
	errB, errD := errors.New("barrier timed out"), errors.New("diverged at 7")
	tests := []struct {
		name              string
		barrier, diverged error
		want              Takeover
	}{
		{"caught up", nil, nil, TakeoverLead},
		{"barrier failed", errB, nil, TakeoverWait},
		{"barrier failed, diverged", errB, errD, TakeoverWait},
		{"diverged", nil, errD, TakeoverHandOff},
	}
	for _, tt := range tests {
		if got := TakeoverOf(tt.barrier, tt.diverged); got != tt.want {
			t.Errorf("%s: TakeoverOf(%v, %v) = %d; want %d", tt.name, tt.barrier, tt.diverged, got, tt.want)
		}
	}
}

type fakeElections struct {
	ch      chan bool
	barrier error
}

func (f fakeElections) LeaderCh() <-chan bool         { return f.ch }
func (f fakeElections) Barrier(context.Context) error { return f.barrier }

type fakeReplica struct{ diverged error }

func (fakeReplica) View() *fsm.View   { return fsm.New().View() }
func (f fakeReplica) Diverged() error { return f.diverged }

// fakeDuties counts what the lead loop asks of the agent; its loops run
// until their context ends.
type fakeDuties struct {
	registered, started, stopped, handOffs atomic.Int32
	since                                  atomic.Pointer[time.Time]
}

func (d *fakeDuties) RegisterSelf(context.Context) error { d.registered.Add(1); return nil }
func (d *fakeDuties) ProposePolicy(context.Context)      {}
func (d *fakeDuties) HandOff(context.Context)            { d.handOffs.Add(1) }
func (d *fakeDuties) Loops(since time.Time) []func(context.Context) {
	d.since.Store(&since)
	loop := func(ctx context.Context) {
		d.started.Add(1)
		<-ctx.Done()
		d.stopped.Add(1)
	}
	return []func(context.Context){loop, loop}
}

// runLead runs the lead loop over the leadership changes events, then
// LeaderCh closing.
func runLead(barrier, diverged error, events ...bool) *fakeDuties {
	ch := make(chan bool, len(events))
	for _, e := range events {
		ch <- e
	}
	close(ch)
	d := &fakeDuties{}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	Lead{
		Raft: fakeElections{ch: ch, barrier: barrier}, State: fakeReplica{diverged}, Lead: d, Duties: d,
		Clock: waitClock{now: now}, Log: slog.New(slog.DiscardHandler), BarrierTimeout: time.Second, RegisterTimeout: time.Second,
	}.Run(context.Background())
	return d
}

// TestLeadRun: leadership gained starts the leader-only loops after
// registering; lost (or lost and regained) stops them and waits for them
// first, so two terms' loops never overlap (STYLE.md section 5); a failed
// barrier or a diverged replica starts none.
func TestLeadRun(t *testing.T) {
	d := runLead(nil, nil, true, false, true, true)
	if d.registered.Load() != 3 || d.started.Load() != 6 || d.stopped.Load() != 6 || d.handOffs.Load() != 0 {
		t.Errorf("three terms: registered %d, loops started %d, stopped %d, hand-offs %d; want 3, 6, 6, 0",
			d.registered.Load(), d.started.Load(), d.stopped.Load(), d.handOffs.Load())
	}
	if since := d.since.Load(); since == nil || since.Hour() != 12 {
		t.Errorf("loops started for a term since %v; want the clock's now", since)
	}
	d = runLead(errors.New("timeout"), nil, true)
	if d.registered.Load() != 0 || d.started.Load() != 0 {
		t.Errorf("barrier failed: registered %d, loops %d; want none", d.registered.Load(), d.started.Load())
	}
	d = runLead(nil, errors.New("diverged at 3"), true)
	if d.registered.Load() != 0 || d.started.Load() != 0 || d.handOffs.Load() != 1 {
		t.Errorf("diverged: registered %d, loops %d, hand-offs %d; want 0, 0, 1",
			d.registered.Load(), d.started.Load(), d.handOffs.Load())
	}
}
