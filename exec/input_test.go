package exec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/internal/exectest"
	"github.com/shoal-sched/shoal/exec/task"
)

// TestBatchInput: sbatch --input's file is the batch script's stdin;
// without one the script reads /dev/null.
func TestBatchInput(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, stdin := range []string{in, os.DevNull} {
		job := cluster.JobID(70 + i)
		out := filepath.Join(dir, "out"+job.String())
		l := batchLaunch(t, job, "#!/bin/sh\nwhile read -r l; do echo \"got $l\"; done\necho end\n")
		l.Stdout, l.Stderr, l.Stdin = out, out, stdin
		if err := e.Start(t.Context(), l); err != nil {
			t.Fatal(err)
		}
		if x := waitExit(t, e, job); x.ExitCode != 0 {
			t.Errorf("stdin %s: exit %+v", stdin, x)
		}
		want := "end\n"
		if stdin == in {
			want = "got line one\ngot line two\nend\n"
		}
		if got := exectest.ReadFile(t, out); got != want {
			t.Errorf("stdin %s: output %q; want %q", stdin, got, want)
		}
	}
}

// TestBatchInputRootFile: a job of an unprivileged user asking for a
// root file as its stdin fails to start without reading it.
func TestBatchInputRootFile(t *testing.T) {
	exectest.MustBeRoot(t)
	e := newTestExec(t, t.TempDir(), time.Second)
	l := userBatch(t, 72, "#!/bin/sh\ncat\n")
	sec := exectest.Secret(t, l.Spec.WorkDir, exectest.SecretText)
	out := filepath.Join(l.Spec.WorkDir, "out")
	l.Stdout, l.Stderr, l.Stdin = out, out, sec
	if err := e.Start(t.Context(), l); !errors.Is(err, ErrStartFailed) {
		t.Errorf("Start = %v; want a start failure", err)
	}
	if x := waitExit(t, e, 72); x.Cause != task.CauseStartFail {
		t.Errorf("exit %+v; want cause start", x)
	}
	if data, _ := os.ReadFile(out); strings.Contains(string(data), "secret") {
		t.Errorf("output %q holds the root file", data)
	}
}

// TestStepInput: srun --input=PATTERN opens the expanded file for each
// rank of the step (%t its rank), relative to the step's directory;
// "none" is /dev/null.
func TestStepInput(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	own := startOwnTask(t, e, 75)
	for id, input := range []string{"in-%t.txt", "none"} {
		step := withStep(own, id, 2, `echo "rank=$SLURM_PROCID read=$(cat)"`)
		step.Step.Spec.WorkDir = t.TempDir()
		step.Step.Spec.Input = input
		for _, r := range []string{"2", "3"} {
			if err := os.WriteFile(filepath.Join(step.Step.Spec.WorkDir, "in-"+r+".txt"), []byte("data"+r+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Start(t.Context(), step); err != nil {
			t.Fatalf("%s: Start step: %v", input, err)
		}
		if x := waitKey(t, e, TaskKey{Job: 75, Incarnation: 1, Step: id}); x.ExitCode != 0 {
			t.Errorf("%s: step exit = %+v", input, x)
		}
		files, err := e.LogFiles(75)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			if f.Step == id && f.Stream == "stdout" {
				got = append(got, exectest.ReadFile(t, f.Path))
			}
		}
		want := []string{"rank=2 read=data2\n", "rank=3 read=data3\n"}
		if input == "none" {
			want = []string{"rank=2 read=\n", "rank=3 read=\n"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: step stdout = %q; want %q", input, got, want)
		}
	}
	e.Stop(TaskKey{Job: 75, Incarnation: 1, Step: NoStep}, task.CauseCancelled)
	waitExit(t, e, 75)
}
