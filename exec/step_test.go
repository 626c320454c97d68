package exec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/internal/exectest"
	"github.com/shoal-sched/shoal/exec/task"
)

// batchLaunch is job id's batch script on node n2, the first of n2,n3.
func batchLaunch(t *testing.T, id cluster.JobID, script string, args ...string) Launch {
	return Launch{
		Job: id, Incarnation: 1,
		Spec: cluster.Spec{
			Name: "b", WorkDir: t.TempDir(),
			User: "root", UID: os.Getuid(), GID: os.Getgid(),
			Request: cluster.Request{Nodes: 2, TasksPerNode: 2},
			Batch:   &cluster.Batch{Script: script, Args: args},
		},
		Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{
			{Node: "n2", GPUs: []int{3}}, {Node: "n3", GPUs: []int{0}},
		}, MasterPort: 29500},
		NodeIndex: 0, MasterAddr: "127.0.0.1", NodeList: "n[2-3]", NodeName: "n2",
	}
}

// withStep makes l launch step id of its job on n2, two tasks from rank
// first, running script under /bin/sh.
func withStep(l Launch, id, first int, script string) Launch {
	l.Step = &cluster.Step{ID: id, Incarnation: l.Incarnation,
		Spec: cluster.StepSpec{Command: []string{"/bin/sh", "-c", script}},
		Nodes: []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: first},
			{Node: "n2", FirstRank: first, Tasks: 2}}}
	if first == 0 {
		l.Step.Nodes = l.Step.Nodes[1:]
	}
	l.StepNodeList = "n[1-2]"
	return l
}

func TestBatchScript(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	out := filepath.Join(t.TempDir(), "slurm-20.out")
	l := batchLaunch(t, 20, "#!/bin/sh\necho \"out $# $1 $2 $SLURM_PROCID $ENVIRONMENT $(pwd)\"\necho err >&2\nexit 3\n", "a b", "c")
	l.Stdout, l.Stderr = out, out

	bad := l
	bad.Alloc.Nodes = []cluster.NodeAlloc{{Node: "n1"}, {Node: "n2"}}
	bad.NodeIndex = 1
	if err := e.Start(t.Context(), bad); err == nil || errors.Is(err, ErrStartFailed) {
		t.Errorf("Start of a batch script on node index 1 = %v; want a refusal", err)
	}
	if r, p := e.Running(), e.PendingExits(); len(r)+len(p) != 0 {
		t.Fatalf("refused Start left running %v, pending %v", r, p)
	}

	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	x := waitExit(t, e, 20)
	if x.ExitCode != 3 || x.Cause != task.CauseExit || x.Step != NoStep {
		t.Errorf("exit = %+v; want code 3 cause exit step NoStep", x)
	}
	want := "out 2 a b c 0 BATCH " + l.Spec.WorkDir + "\nerr\n"
	if got := exectest.ReadFile(t, out); got != want {
		t.Errorf("output = %q; want %q", got, want)
	}
	files, err := e.LogFiles(20)
	if err != nil {
		t.Fatal(err)
	}
	if want := []LogFile{{Incarnation: 1, Step: NoStep, Rank: 0, Stream: "stdout", Path: out}}; !slices.Equal(exported(files), want) {
		t.Errorf("LogFiles = %+v; want %+v", files, want)
	}
	if len(files) == 1 && (files[0].output == nil || files[0].unreadable != "") {
		t.Errorf("output file %s: opened %+v, unreadable %q; want the record of its open", out, files[0].output, files[0].unreadable)
	}
	fi, err := os.Stat(filepath.Join(e.jobs, "20.1", task.ScriptFile))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("script file: %v, %v; want mode 0700", fi, err)
	}
}

// TestBatchOutputModes checks truncate and append, and separate files for
// the two streams.
func TestBatchOutputModes(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	dir := t.TempDir()
	for i, mode := range []string{"", "truncate", "append"} {
		job := cluster.JobID(21 + i)
		out, errf := filepath.Join(dir, mode+"out"), filepath.Join(dir, mode+"err")
		for _, p := range []string{out, errf} {
			if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		l := batchLaunch(t, job, "#!/bin/sh\necho new\necho bad >&2\n")
		l.Spec.Batch.OpenMode = mode
		l.Stdout, l.Stderr = out, errf
		if err := e.Start(t.Context(), l); err != nil {
			t.Fatal(err)
		}
		if x := waitExit(t, e, job); x.ExitCode != 0 {
			t.Errorf("mode %q: exit %+v", mode, x)
		}
		wantOut, wantErr := "new\n", "bad\n"
		if mode == "append" {
			wantOut, wantErr = "old\nnew\n", "old\nbad\n"
		}
		if got := exectest.ReadFile(t, out); got != wantOut {
			t.Errorf("mode %q: stdout = %q; want %q", mode, got, wantOut)
		}
		if got := exectest.ReadFile(t, errf); got != wantErr {
			t.Errorf("mode %q: stderr = %q; want %q", mode, got, wantErr)
		}
		files, _ := e.LogFiles(job)
		if len(files) != 2 || files[0].Path != errf || files[1].Path != out {
			t.Errorf("mode %q: LogFiles = %+v; want stderr %s and stdout %s", mode, files, errf, out)
		}
	}
}

// startOwnTask starts job's own task, one rank that sleeps, and waits
// until it runs: the task steps are started beside.
func startOwnTask(t *testing.T, e *Executor, job cluster.JobID) Launch {
	t.Helper()
	own := shLaunch(t, job, 1, `touch own.ready; exec sleep 30`)
	if err := e.Start(t.Context(), own); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(own.Spec.WorkDir, "own.ready"))
	return own
}

// TestStep runs a 2-task step beside the job's own task, and stops a
// second step without touching either.
func TestStep(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	own := startOwnTask(t, e, 30)

	step := withStep(own, 0, 2, `echo "rank=$RANK procid=$SLURM_PROCID step=$SLURM_STEP_ID world=$WORLD_SIZE pwd=$(pwd)"`)
	step.Step.Spec.WorkDir = t.TempDir()
	if err := e.Start(t.Context(), step); err != nil {
		t.Fatalf("Start step: %v", err)
	}
	x := waitKey(t, e, TaskKey{Job: 30, Incarnation: 1, Step: 0})
	if x.ExitCode != 0 || x.Cause != task.CauseExit || x.Step != 0 || x.Job != 30 {
		t.Errorf("step exit = %+v; want job 30 step 0 code 0", x)
	}
	files, err := e.LogFiles(30)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		if f.Step == 0 && f.Stream == "stdout" {
			got = append(got, exectest.ReadFile(t, f.Path))
		}
	}
	var want []string
	for _, r := range []string{"2", "3"} {
		want = append(want, "rank="+r+" procid="+r+" step=0 world=4 pwd="+step.Step.Spec.WorkDir+"\n")
	}
	if !slices.Equal(got, want) {
		t.Errorf("step stdout = %q; want %q", got, want)
	}
	if err := e.Start(t.Context(), step); err != nil || len(e.Running()) != 1 {
		t.Errorf("second Start of the step = %v, running %v; want a no-op", err, e.Running())
	}

	long := withStep(own, 1, 0, `exec sleep 30`)
	if err := e.Start(t.Context(), long); err != nil {
		t.Fatal(err)
	}
	if got, want := e.Running(), []TaskKey{{Job: 30, Incarnation: 1, Step: NoStep}, {Job: 30, Incarnation: 1, Step: 1}}; !slices.Equal(got, want) {
		t.Fatalf("Running() = %v; want %v", got, want)
	}
	if !e.Stop(TaskKey{Job: 30, Incarnation: 1, Step: 1}, task.CauseCancelled) {
		t.Fatal("Stop of the step = false")
	}
	if x := waitKey(t, e, TaskKey{Job: 30, Incarnation: 1, Step: 1}); x.Cause != task.CauseCancelled || x.ExitCode != 128+15 {
		t.Errorf("stopped step exit = %+v; want cancelled 143", x)
	}
	if got, want := e.Running(), []TaskKey{{Job: 30, Incarnation: 1, Step: NoStep}}; !slices.Equal(got, want) {
		t.Errorf("Running() after stopping the step = %v; want the job's own task", got)
	}

	if err := e.Ack(TaskKey{Job: 30, Incarnation: 1, Step: 0}); err != nil {
		t.Errorf("Ack of step 0: %v", err)
	}
	if err := e.Ack(TaskKey{Job: 30, Incarnation: 1, Step: NoStep}); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Ack of the running own task = %v; want still running", err)
	}
	if err := e.Ack(TaskKey{Job: 30, Incarnation: 1, Step: 7}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Ack of an unknown step = %v; want fs.ErrNotExist", err)
	}
	var pending []TaskKey
	for _, x := range e.PendingExits() {
		pending = append(pending, x.key())
	}
	if want := []TaskKey{{Job: 30, Incarnation: 1, Step: 1}}; !slices.Equal(pending, want) {
		t.Errorf("PendingExits = %v; want %v", pending, want)
	}
}

// TestStepStartChecks covers Launches a step cannot run from.
func TestStepStartChecks(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	base := withStep(shLaunch(t, 31, 1, "exit 0"), 0, 2, "exit 0")
	for name, modify := range map[string]func(*Launch){
		"no share here":     func(l *Launch) { l.Step.Nodes = l.Step.Nodes[:1] },
		"no command":        func(l *Launch) { l.Step.Spec.Command = nil },
		"other incarnation": func(l *Launch) { l.Step.Incarnation = 2 },
		"too few GPUs":      func(l *Launch) { l.Step.Spec.GPUsPerTask = 1 }, // 2 tasks, 1 GPU
		"output file":       func(l *Launch) { l.Stdout = "/tmp/x" },
	} {
		l := base
		st := *base.Step
		st.Nodes = slices.Clone(st.Nodes)
		l.Step = &st
		modify(&l)
		if err := e.Start(t.Context(), l); err == nil || errors.Is(err, ErrStartFailed) {
			t.Errorf("%s: Start = %v; want a refusal", name, err)
		}
	}
	if r, p := e.Running(), e.PendingExits(); len(r)+len(p) != 0 {
		t.Errorf("refused Starts left running %v, pending %v", r, p)
	}
}

// TestBatchEndStopsSteps checks that the time limit applies to the script
// and that its steps end with it.
func TestBatchEndStopsSteps(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	l := batchLaunch(t, 32, "#!/bin/sh\nexec sleep 30\n")
	l.Spec.Request.TimeLimit = 500 * time.Millisecond
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	step := withStep(l, 0, 0, `touch "step$SLURM_LOCALID.ready"; exec sleep 30`)
	if err := e.Start(t.Context(), step); err != nil {
		t.Fatal(err)
	}
	x := waitExit(t, e, 32)
	if x.Cause != task.CauseTimeout {
		t.Errorf("script exit = %+v; want cause timeout", x)
	}
	sx := waitKey(t, e, TaskKey{Job: 32, Incarnation: 1, Step: 0})
	if sx.Cause != task.CauseTimeout || sx.ExitCode != 128+15 {
		t.Errorf("step exit = %+v; want it stopped with the script, cause timeout, code 143", sx)
	}
	if d := sx.End.Sub(sx.Start); d > 5*time.Second {
		t.Errorf("step ran %v; it has no limit of its own but should end with the script", d)
	}
}

// TestBatchScriptAsUser checks that a root agent runs the script and
// opens its output as the job's user.
func TestBatchScriptAsUser(t *testing.T) {
	requireRoot(t)
	e := newTestExec(t, t.TempDir(), time.Second)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outDir := filepath.Join(dir, "out")
	if err := os.Mkdir(outDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outDir, 0o777); err != nil {
		t.Fatal(err)
	}
	l := batchLaunch(t, 33, "#!/bin/sh\necho \"$(id -u):$(id -g) $USER\"\n")
	l.Spec.WorkDir = "/"
	l.Spec.User, l.Spec.UID, l.Spec.GID = "nobody", 65534, 65534
	l.Stdout = filepath.Join(outDir, "slurm-33.out")
	l.Stderr = l.Stdout
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 33); x.ExitCode != 0 {
		t.Fatalf("exit = %+v", x)
	}
	if got := exectest.ReadFile(t, l.Stdout); got != "65534:65534 nobody\n" {
		t.Errorf("output = %q; want %q", got, "65534:65534 nobody\n")
	}
	if fi, err := os.Stat(l.Stdout); err != nil || fileUID(fi) != 65534 {
		t.Errorf("output file owner: %v, %v; want 65534", fi, err)
	}

	// A file the user may not write is neither truncated nor written.
	rootFile := filepath.Join(dir, "root-only")
	if err := os.WriteFile(rootFile, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = batchLaunch(t, 34, "#!/bin/sh\necho overwritten\n")
	l.Spec.WorkDir = "/"
	l.Spec.User, l.Spec.UID, l.Spec.GID = "nobody", 65534, 65534
	l.Stdout, l.Stderr = rootFile, rootFile
	if err := e.Start(t.Context(), l); !errors.Is(err, ErrStartFailed) {
		t.Errorf("Start writing a root-only file = %v; want ErrStartFailed", err)
	}
	if x := waitExit(t, e, 34); x.Cause != task.CauseStartFail {
		t.Errorf("exit = %+v; want cause start", x)
	}
	if got := exectest.ReadFile(t, rootFile); got != "keep\n" {
		t.Errorf("root-only file = %q; want it untouched", got)
	}
}

func fileUID(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
