package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// TestSignalReachesRanksAndKeepsThemRunning: Signal (shoal cancel
// --signal) reaches every rank's trap, and the task runs on until stopped.
func TestSignalReachesRanksAndKeepsThemRunning(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	l := shLaunch(t, 21, 2, `trap 'touch usr1-$LOCAL_RANK' USR1; touch ready-$LOCAL_RANK; while :; do sleep 0.1; done`)
	key := TaskKey{Job: 21, Incarnation: 1, Step: NoStep}
	if err := e.Signal(key, syscall.SIGUSR1, false); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Signal before Start = %v; want ErrNotRunning", err)
	}
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	for r := range 2 {
		waitFile(t, filepath.Join(l.Spec.WorkDir, fmt.Sprintf("ready-%d", r)))
	}
	if err := e.Signal(key, syscall.SIGUSR1, false); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	for r := range 2 {
		waitFile(t, filepath.Join(l.Spec.WorkDir, fmt.Sprintf("usr1-%d", r)))
	}
	if got := e.Running(); !slices.Contains(got, key) {
		t.Errorf("Running() = %v after the signal; want %v still running", got, key)
	}
}

// TestEarlySignalBeforeTimeLimit: with --signal=USR1@1 and a 2 s limit the
// ranks' trap runs about a second before they end TIMEOUT.
func TestEarlySignalBeforeTimeLimit(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	l := shLaunch(t, 22, 1, `trap 'date +%s.%N > usr1' USR1; while :; do sleep 0.05; done`)
	l.Spec.Request.TimeLimit = 2 * time.Second
	l.Spec.Signal = &cluster.JobSignal{Number: int(syscall.SIGUSR1), Before: time.Second}
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	x := waitExit(t, e, 22)
	if x.Cause != task.CauseTimeout {
		t.Errorf("exit = %+v; want cause timeout", x)
	}
	b, err := os.ReadFile(filepath.Join(l.Spec.WorkDir, "usr1"))
	if err != nil {
		t.Fatalf("the USR1 trap did not run before the time limit: %v", err)
	}
	var sec, nsec int64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d.%d", &sec, &nsec); err != nil {
		t.Fatalf("usr1 = %q: %v", b, err)
	}
	if at := time.Unix(sec, nsec); !at.Before(x.End) {
		t.Errorf("USR1 trapped at %v, not before the end %v", at, x.End)
	}
}
