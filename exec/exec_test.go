package exec

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/internal/exectest"
	"github.com/shoal-sched/shoal/exec/task"
)

// waitBound bounds every wait for a real process in these tests.
const waitBound = 20 * time.Second

// newTestExec opens an executor on dir and makes sure, also when the test
// fails, that every task it started is killed and reaped.
func newTestExec(t *testing.T, dir string, grace time.Duration) *Executor {
	t.Helper()
	return openExec(t, Config{DataDir: dir, NodeName: "n2", KillWait: grace, KillGrace: grace}, stopAndCheck)
}

// How openExec's executor is closed when the test ends, within waitBound.
type execEnd int

const (
	// closeOnly closes it, the error ignored: for tasks that end by
	// themselves (fenced by the watchdog).
	closeOnly execEnd = iota
	// stopThenClose stops its tasks first, the error ignored.
	stopThenClose
	// stopAndCheck stops its tasks first, and a task still running
	// when the bound passes fails the test.
	stopAndCheck
)

// openExec opens an executor with cfg, its Logger the test's, closed as
// end says when the test ends.
func openExec(t *testing.T, cfg Config, end execEnd) *Executor {
	t.Helper()
	cfg.Logger = exectest.Logger(t)
	e, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if end != closeOnly {
			e.StopAll(task.CauseCancelled)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		if err := e.Close(ctx); err != nil && end == stopAndCheck {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// shLaunch is job id's incarnation 1 on node n2 (index 1 of n1,n2), running
// script under /bin/sh with tpn ranks.
func shLaunch(t *testing.T, id cluster.JobID, tpn int, script string) Launch {
	return Launch{
		Job: id, Incarnation: 1,
		Spec: cluster.Spec{
			Name: "t", Command: []string{"/bin/sh", "-c", script}, WorkDir: t.TempDir(),
			User: "root", UID: os.Getuid(), GID: os.Getgid(),
			Request: cluster.Request{Nodes: 2, TasksPerNode: tpn},
		},
		Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{
			{Node: "n1", GPUs: []int{0}}, {Node: "n2", GPUs: []int{1}},
		}, MasterPort: 29500},
		NodeIndex: 1, MasterAddr: "127.0.0.1", NodeList: "n[1-2]", NodeName: "n2",
	}
}

// waitExit waits for the pending exit of job's own task, incarnation 1.
func waitExit(t *testing.T, e *Executor, job cluster.JobID) Exit {
	t.Helper()
	return waitKey(t, e, TaskKey{Job: job, Incarnation: 1, Step: NoStep})
}

// waitKey waits for the pending exit of key.
func waitKey(t *testing.T, e *Executor, key TaskKey) Exit {
	t.Helper()
	deadline := time.After(waitBound)
	for {
		for _, x := range e.PendingExits() {
			if x.key() == key {
				return x
			}
		}
		select {
		case <-e.ExitNotify():
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no exit of %v within %v; running %v", key, waitBound, e.Running())
		}
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(waitBound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear within %v", path, waitBound)
}

func readLog(t *testing.T, e *Executor, job cluster.JobID, rank int, stream string) string {
	t.Helper()
	files, err := e.LogFiles(job)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Rank == rank && f.Stream == stream {
			b, _, _, err := ReadLog(f, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatalf("no %s log of rank %d in %+v", stream, rank, files)
	return ""
}

// exported is files with only their exported fields, to compare with
// literals.
func exported(files []LogFile) []LogFile {
	out := make([]LogFile, len(files))
	for i, f := range files {
		out[i] = LogFile{Incarnation: f.Incarnation, Step: f.Step, Rank: f.Rank, Stream: f.Stream, Path: f.Path}
	}
	return out
}

func TestStartRunsRanks(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	l := shLaunch(t, 1, 2, `echo "rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE procid=$SLURM_PROCID gpus=$CUDA_VISIBLE_DEVICES pwd=$(pwd)"; echo oops >&2`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	x := waitExit(t, e, 1)
	if x.ExitCode != 0 || x.Cause != task.CauseExit {
		t.Errorf("exit = %+v; want code 0 cause exit", x)
	}
	if x.Start.IsZero() || x.End.Before(x.Start) {
		t.Errorf("exit times start %v end %v", x.Start, x.End)
	}
	for _, r := range []struct {
		rank  int
		local string
	}{{2, "0"}, {3, "1"}} {
		want := "rank=" + strconv.Itoa(r.rank) + " local=" + r.local + " world=4 procid=" + strconv.Itoa(r.rank) +
			" gpus=1 pwd=" + l.Spec.WorkDir + "\n"
		if got := readLog(t, e, 1, r.rank, "stdout"); got != want {
			t.Errorf("rank %d stdout = %q; want %q", r.rank, got, want)
		}
		if got := readLog(t, e, 1, r.rank, "stderr"); got != "oops\n" {
			t.Errorf("rank %d stderr = %q; want %q", r.rank, got, "oops\n")
		}
	}
	files, _ := e.LogFiles(1)
	var streams []string
	for _, f := range files {
		streams = append(streams, strconv.Itoa(f.Rank)+f.Stream)
	}
	if want := []string{"2stderr", "2stdout", "3stderr", "3stdout"}; !slices.Equal(streams, want) {
		t.Errorf("LogFiles order = %q; want %q", streams, want)
	}
	if r := e.Running(); len(r) != 0 {
		t.Errorf("Running() = %v after exit; want none", r)
	}
}

// TestStartIdempotent protects DESIGN invariant 3 (no two live
// incarnations): Start never runs an incarnation twice on a node, also
// after an agent restart.
func TestStartIdempotent(t *testing.T) {
	dir := t.TempDir()
	e := newTestExec(t, dir, time.Second)
	l := shLaunch(t, 2, 1, `echo started >> "$SHOAL_TEST_DIR/count"; exec sleep 30`)
	l.Spec.Env = []string{"SHOAL_TEST_DIR=" + l.Spec.WorkDir}
	for i := range 3 {
		if err := e.Start(t.Context(), l); err != nil {
			t.Fatalf("Start #%d: %v", i+1, err)
		}
	}
	waitFile(t, filepath.Join(l.Spec.WorkDir, "count"))
	if got, want := e.Running(), []TaskKey{{Job: 2, Incarnation: 1, Step: NoStep}}; !slices.Equal(got, want) {
		t.Fatalf("Running() = %v; want %v", got, want)
	}
	if !e.Stop(TaskKey{Job: 2, Incarnation: 1, Step: NoStep}, task.CauseCancelled) {
		t.Fatalf("Stop of a running task = false")
	}
	x := waitExit(t, e, 2)
	if x.Cause != task.CauseCancelled || x.ExitCode != 128+15 {
		t.Errorf("exit = %+v; want cause cancelled code 143", x)
	}
	if e.Stop(TaskKey{Job: 2, Incarnation: 1, Step: NoStep}, task.CauseCancelled) {
		t.Errorf("Stop after exit = true; want false")
	}
	if err := e.Start(t.Context(), l); err != nil || len(e.Running()) != 0 {
		t.Errorf("Start after exit = %v, running %v; want a no-op", err, e.Running())
	}
	e2 := newTestExec(t, dir, time.Second)
	if err := e2.Start(t.Context(), l); err != nil || len(e2.Running()) != 0 {
		t.Errorf("Start after restart = %v, running %v; want a no-op", err, e2.Running())
	}
	b, _ := os.ReadFile(filepath.Join(l.Spec.WorkDir, "count"))
	if got := strings.Count(string(b), "started"); got != 1 {
		t.Errorf("ranks started %d times; want 1", got)
	}
}

func TestRankFailureStopsSiblings(t *testing.T) {
	e := newTestExec(t, t.TempDir(), 5*time.Second)
	l := shLaunch(t, 3, 2, `if [ "$LOCAL_RANK" = 1 ]; then sleep 0.2; exit 3; fi; exec sleep 30`)
	begin := time.Now()
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	x := waitExit(t, e, 3)
	if x.ExitCode != 3 || x.Cause != task.CauseExit {
		t.Errorf("exit = %+v; want code 3 cause exit", x)
	}
	if d := time.Since(begin); d > 4*time.Second {
		t.Errorf("took %v; the sibling should have died on SIGTERM at once", d)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	const grace = 500 * time.Millisecond
	e := newTestExec(t, t.TempDir(), grace)
	l := shLaunch(t, 4, 2, `
if [ "$LOCAL_RANK" = 0 ]; then touch ready0; exec sleep 30; fi
trap 'echo got TERM' TERM
touch ready1
while :; do sleep 0.1; done`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitFile(t, filepath.Join(l.Spec.WorkDir, "ready0"))
	waitFile(t, filepath.Join(l.Spec.WorkDir, "ready1"))
	stopped := time.Now()
	if !e.Stop(TaskKey{Job: 4, Incarnation: 1, Step: NoStep}, task.CauseCancelled) {
		t.Fatal("Stop = false; want true")
	}
	x := waitExit(t, e, 4)
	if x.Cause != task.CauseCancelled || x.ExitCode != 128+15 {
		t.Errorf("exit = %+v; want cause cancelled, code 143 (the first rank to die)", x)
	}
	if d := x.End.Sub(stopped); d < grace {
		t.Errorf("ended %v after Stop; the TERM-trapping rank should have lived for the %v grace", d, grace)
	}
	if got := readLog(t, e, 4, 3, "stdout"); !strings.Contains(got, "got TERM") {
		t.Errorf("rank 3 stdout = %q; want it to have seen SIGTERM", got)
	}
}

func TestTimeLimit(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	l := shLaunch(t, 5, 1, `exec sleep 30`)
	l.Spec.Request.TimeLimit = 300 * time.Millisecond
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	x := waitExit(t, e, 5)
	if x.Cause != task.CauseTimeout || x.ExitCode != 128+15 {
		t.Errorf("exit = %+v; want cause timeout code 143", x)
	}
	if d := x.End.Sub(x.Start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("ran %v; want about the 300ms limit", d)
	}
}

func TestStartFailure(t *testing.T) {
	noexec := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		modify func(*Launch)
		code   int
	}{
		{"missing work dir", func(l *Launch) { l.Spec.WorkDir = "/nonexistent/shoal/dir" }, 127},
		{"command not found", func(l *Launch) { l.Spec.Command = []string{"shoal-no-such-command"} }, 127},
		{"not executable", func(l *Launch) { l.Spec.Command = []string{noexec} }, 126},
	}
	e := newTestExec(t, t.TempDir(), time.Second)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := cluster.JobID(100 + i)
			l := shLaunch(t, job, 2, "exit 0")
			tt.modify(&l)
			err := e.Start(t.Context(), l)
			if !errors.Is(err, ErrStartFailed) {
				t.Errorf("Start = %v; want ErrStartFailed", err)
			}
			x := waitExit(t, e, job)
			if x.Cause != task.CauseStartFail || x.ExitCode != tt.code {
				t.Errorf("exit = %+v; want cause start code %d", x, tt.code)
			}
			if err := e.Start(t.Context(), l); err != nil {
				t.Errorf("second Start = %v; want a no-op", err)
			}
		})
	}
}

func TestAckPersists(t *testing.T) {
	dir := t.TempDir()
	e := newTestExec(t, dir, time.Second)
	for _, job := range []cluster.JobID{6, 7} {
		if err := e.Start(t.Context(), shLaunch(t, job, 1, "exit 0")); err != nil {
			t.Fatal(err)
		}
		waitExit(t, e, job)
	}
	if err := e.Ack(TaskKey{Job: 6, Incarnation: 1, Step: NoStep}); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := e.Ack(TaskKey{Job: 6, Incarnation: 1, Step: NoStep}); err != nil {
		t.Errorf("second Ack = %v; want nil", err)
	}
	if err := e.Ack(TaskKey{Job: 99, Incarnation: 1, Step: NoStep}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Ack of an unknown task = %v; want fs.ErrNotExist", err)
	}
	e2 := newTestExec(t, dir, time.Second)
	got := e2.PendingExits()
	if len(got) != 1 || got[0].Job != 7 || got[0].Cause != task.CauseExit {
		t.Errorf("PendingExits after restart = %+v; want only job 7's", got)
	}
	select {
	case <-e2.ExitNotify():
	default:
		t.Errorf("ExitNotify not signalled for exits pending at New")
	}
}

// TestRunsAsUser checks that a root agent drops to the job's user.
func TestRunsAsUser(t *testing.T) {
	requireRoot(t)
	e := newTestExec(t, t.TempDir(), time.Second)
	l := shLaunch(t, 8, 1, `echo "$(id -u):$(id -g) $USER"`)
	l.Spec.WorkDir = "/"
	l.Spec.User, l.Spec.UID, l.Spec.GID = "nobody", 65534, 65534
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 8); x.ExitCode != 0 {
		t.Fatalf("exit = %+v", x)
	}
	if got := readLog(t, e, 8, 1, "stdout"); got != "65534:65534 nobody\n" {
		t.Errorf("stdout = %q; want %q", got, "65534:65534 nobody\n")
	}
}

// requireRoot skips a test that needs root to switch users, except in CI
// (CI=true), where a missing facility must fail the run, not hide it.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("needs root to switch users, and CI runs as root: run the suite as root")
	}
	t.Skip("needs root to switch users")
}

// DialStdin reaches a task's ranks that read srun's stdin on the socket
// asked for; a supervisor that serves the raw socket alone (an earlier
// agent's) answers a resumable dial with ErrNoResume, and a task not
// running here with ErrNoTerminal.
func TestDialStdin(t *testing.T) {
	dir := t.TempDir()
	e := newTestExec(t, dir, time.Second)
	l := shLaunch(t, 1, 1, `cat`)
	l.Spec.Stdin = cluster.StdinAll
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	key := l.Key()
	c, err := e.DialStdin(key, true)
	if err != nil {
		t.Fatalf("DialStdin resumable: %v", err)
	}
	if from, err := task.ReadStdinCount(c); err != nil || from != 0 {
		t.Errorf("first count %d, %v; want 0", from, err)
	}
	c.Close()
	// The supervisor of an earlier agent: stdin.sock alone.
	if err := os.Remove(filepath.Join(dir, "jobs", key.DirName(), task.StdinResumeSock)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DialStdin(key, true); !errors.Is(err, ErrNoResume) {
		t.Errorf("DialStdin resumable of a raw-only supervisor: %v; want ErrNoResume", err)
	}
	c, err = e.DialStdin(key, false)
	if err != nil {
		t.Fatalf("DialStdin raw: %v", err)
	}
	c.Close() // the end of the ranks' input: cat ends
	if x := waitExit(t, e, 1); x.ExitCode != 0 {
		t.Errorf("exit = %+v; want code 0 once its input ended", x)
	}
	other := key
	other.Job = 2
	if _, err := e.DialStdin(other, true); !errors.Is(err, ErrNoTerminal) {
		t.Errorf("DialStdin of a task not here: %v; want ErrNoTerminal", err)
	}
}
