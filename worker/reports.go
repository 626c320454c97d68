package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// MaxReportsPerRound bounds one round of exit reports.
const MaxReportsPerRound = 256

// Exit is one exit the executor recorded and the leader has not yet
// acknowledged.
type Exit struct {
	Key task.Key
	// ExitCode is the first failing rank's code, -1 when lost.
	ExitCode int
	// Cause is one of fsm's Cause* values (task.Cause*).
	Cause string
	// Usage is what the task used, nil when not counted.
	Usage *cluster.Usage
}

// ExitLog is the executor as the report loop sees it.
type ExitLog interface {
	// Running are the tasks running here.
	Running() []task.Key
	// Recorded are the exits recorded and not yet acknowledged, in the
	// executor's order.
	Recorded() []Exit
	// Notify delivers when a new exit is recorded.
	Notify() <-chan struct{}
	// Ack forgets an exit the leader has recorded.
	Ack(k task.Key) error
}

// ExitReporter tells the leader, local or remote, about one exit.
type ExitReporter interface {
	ReportExit(ctx context.Context, e Exit) error
}

// Reporter is the worker's exit-report loop: whenever an exit is recorded,
// and at least every Interval, it reports the exits Exits allows, at most
// MaxReportsPerRound a round, and acknowledges each the leader took.
type Reporter struct {
	Exits    ExitLog
	Leader   ExitReporter
	Clock    Clock
	Log      *slog.Logger
	Interval time.Duration
}

// Run reports until ctx ends.
func (r Reporter) Run(ctx context.Context) {
	tick, stop := r.Clock.NewTicker(r.Interval)
	defer stop()
	for {
		r.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-r.Exits.Notify():
		case <-tick:
		}
	}
}

// Round reports what it may of the recorded exits; one failed report ends
// it (the leader is unreachable: the next round tries again).
func (r Reporter) Round(ctx context.Context) {
	recorded := r.Exits.Recorded()
	byKey := make(map[task.Key]Exit, len(recorded))
	keys := make([]task.Key, len(recorded))
	for i, ex := range recorded {
		byKey[ex.Key], keys[i] = ex, ex.Key
	}
	for _, k := range Exits(r.Exits.Running(), keys, MaxReportsPerRound) {
		if ctx.Err() != nil {
			return
		}
		ex := byKey[k]
		if err := r.Leader.ReportExit(ctx, ex); err != nil {
			r.Log.Debug("report exit", "job", uint64(k.Job), "err", err)
			return // the leader is unreachable; try again next round
		}
		if err := r.Exits.Ack(k); err != nil {
			r.Log.Warn("acknowledge exit", "job", uint64(k.Job), "err", err)
		}
		r.Log.Info("exit reported", "job", uint64(k.Job), "incarnation", k.Incarnation, "exit_code", ex.ExitCode, "cause", ex.Cause)
	}
}
