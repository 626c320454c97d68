package stepd

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// fakeRanks stands in for rank processes inside a synctest bubble: it
// records each signal with the fake time it arrived, and ranks that
// "honour" SIGTERM exit 143 on it; all exit 137 on SIGKILL.
type fakeRanks struct {
	mu      sync.Mutex
	start   time.Time
	signals []string
	exits   chan rankExit
	live    map[int]bool
	honour  bool
}

func (f *fakeRanks) signal(sig syscall.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signals = append(f.signals, fmt.Sprintf("%v@%v", sig, time.Since(f.start)))
	for _, i := range slices.Sorted(maps.Keys(f.live)) {
		if sig == syscall.SIGKILL || f.honour {
			delete(f.live, i)
			f.exits <- rankExit{local: i, code: 128 + int(sig)}
		}
	}
}

// newFakeRanks is two live ranks whose fake clock starts now.
func newFakeRanks(honour bool) *fakeRanks {
	return &fakeRanks{start: time.Now(), exits: make(chan rankExit, 2),
		live: map[int]bool{0: true, 1: true}, honour: honour}
}

// checkSupervise runs supervise(s) over f's two ranks (s's ranks, exits
// and signal are f's) inside a synctest bubble, calls act while it runs,
// and checks the outcome and the signals the ranks got, in order.
func checkSupervise(t *testing.T, f *fakeRanks, s supervision, act func(), want outcome, signals []string) {
	t.Helper()
	s.ranks, s.exits, s.signal = 2, f.exits, f.signal
	done := make(chan outcome, 1)
	go func() { done <- supervise(s) }()
	act()
	var got outcome
	select {
	case got = <-done:
	case <-time.After(time.Hour):
		t.Fatalf("supervise did not return within an hour of fake time; signals %q", f.signals)
	}
	if got != want {
		t.Errorf("supervise(...) = %+v; want %+v", got, want)
	}
	if !slices.Equal(f.signals, signals) {
		t.Errorf("signals = %q; want %q", f.signals, signals)
	}
}

func (f *fakeRanks) exit(i, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, i)
	f.exits <- rankExit{local: i, code: code}
}

// TestSupervise drives the end-of-task logic on fake time: time limits,
// kill grace and first-cause-wins (DESIGN invariant 1 relies on every
// rank being dead before the exit is reported).
func TestSupervise(t *testing.T) {
	tests := []struct {
		name    string
		limit   time.Duration
		honour  bool
		initial string
		act     func(f *fakeRanks, stop chan string)
		want    outcome
		signals []string
	}{
		{"all succeed", 0, true, "", func(f *fakeRanks, _ chan string) {
			time.Sleep(time.Second)
			f.exit(0, 0)
			f.exit(1, 0)
		}, outcome{code: 0, cause: task.CauseExit}, nil},
		{"one fails, sibling stopped", 0, true, "", func(f *fakeRanks, _ chan string) {
			time.Sleep(time.Second)
			f.exit(1, 3)
		}, outcome{code: 3, cause: task.CauseExit}, []string{"terminated@1s"}},
		{"time limit, TERM honoured", time.Minute, true, "", func(*fakeRanks, chan string) {},
			outcome{code: 143, cause: task.CauseTimeout}, []string{"terminated@1m0s"}},
		{"time limit, TERM ignored", time.Minute, false, "", func(*fakeRanks, chan string) {},
			outcome{code: 137, cause: task.CauseTimeout}, []string{"terminated@1m0s", "killed@1m10s"}},
		{"stop then limit: first cause wins", time.Minute, false, "", func(_ *fakeRanks, stop chan string) {
			time.Sleep(55 * time.Second)
			stop <- task.CauseCancelled
		}, outcome{code: 137, cause: task.CauseCancelled}, []string{"terminated@55s", "killed@1m5s"}},
		{"failure then stop", 0, false, "", func(f *fakeRanks, stop chan string) {
			f.exit(0, 1)
			time.Sleep(time.Second)
			stop <- task.CauseFenced
		}, outcome{code: 1, cause: task.CauseExit}, []string{"terminated@0s", "killed@10s"}},
		{"start failure", 0, true, task.CauseStartFail, func(*fakeRanks, chan string) {},
			outcome{code: 143, cause: task.CauseStartFail}, []string{"terminated@0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeRanks(tt.honour)
				stop := make(chan string, 1)
				s := supervision{stop: stop, timeLimit: tt.limit, grace: 10 * time.Second, initial: tt.initial}
				checkSupervise(t, f, s, func() { tt.act(f, stop) }, tt.want, tt.signals)
			})
		})
	}
}

// TestSuperviseNewTimeLimit: scontrol update TimeLimit= of a running task
// moves its deadline: raised, the old one passes quietly; lowered below
// the time already run, it ends the task at once; removed, none applies.
func TestSuperviseNewTimeLimit(t *testing.T) {
	tests := []struct {
		name    string
		after   time.Duration // when the new limit arrives
		limit   time.Duration // from the start; 0: none
		exitAt  time.Duration // when the ranks exit by themselves (0: never)
		want    outcome
		signals []string
	}{
		{"raised", 30 * time.Second, 2 * time.Minute, 0,
			outcome{code: 143, cause: task.CauseTimeout}, []string{"terminated@2m0s"}},
		{"lowered", 10 * time.Second, 20 * time.Second, 0,
			outcome{code: 143, cause: task.CauseTimeout}, []string{"terminated@20s"}},
		{"lowered below the time run", 30 * time.Second, 20 * time.Second, 0,
			outcome{code: 143, cause: task.CauseTimeout}, []string{"terminated@30s"}},
		{"removed", 30 * time.Second, 0, 5 * time.Minute,
			outcome{code: 0, cause: task.CauseExit}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeRanks(true)
				limits := make(chan time.Time, 1)
				s := supervision{stop: make(chan string), limit: limits, timeLimit: time.Minute, grace: 10 * time.Second}
				checkSupervise(t, f, s, func() {
					time.Sleep(tt.after)
					var deadline time.Time
					if tt.limit > 0 {
						deadline = f.start.Add(tt.limit)
					}
					limits <- deadline
					if tt.exitAt > 0 {
						time.Sleep(tt.exitAt - tt.after)
						f.exit(0, 0)
						f.exit(1, 0)
					}
				}, tt.want, tt.signals)
			})
		})
	}
}
