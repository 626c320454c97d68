package slurmcli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

// TestStepInput: srun's --input as a step takes it: a file pattern of a
// task's own (%t, %n, %N) each task opens, or none, or what srun relays
// to every task (the default, "all": its own stdin; a file without a
// task's sequence, which srun reads itself) or to one (a task number).
func TestStepInput(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"5", "in.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args      []string
		want      string
		wantStdin string
		wantErr   string
	}{
		{nil, "", "all", ""},
		{[]string{"--input=none"}, "none", "", ""},
		{[]string{"-i", "in-%t.txt"}, "in-%t.txt", "", ""},
		{[]string{"-i", "in-%4n.%N", "-D", dir}, "in-%4n.%N", "", ""},
		{[]string{"-n2", "-i", "5", "-D", dir}, "", "all", ""}, // not a task of 2: a file, as Slurm
		{[]string{"-i", "in.txt", "-D", dir}, "", "all", ""},
		{[]string{"-i", "in-%j.%s.txt", "-D", dir}, "", "all", ""}, // srun expands it once the step is there
		{[]string{"-i", "missing.txt", "-D", dir}, "", "", "Could not open stdin file: No such file or directory"},
		{[]string{"-n2", "-i", "1"}, "", "1", ""},
		{[]string{"-i0"}, "", "0", ""},
		{[]string{"--input=all"}, "", "all", ""},
	} {
		opts, rest, err := slurm.ParseArgs(slurm.Srun, append(tc.args, "cat"))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		spec, err := stepSpec(opts, rest)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err %v; want %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr == "" && (spec.Input != tc.want || spec.Stdin != tc.wantStdin):
			t.Errorf("%v: Input %q, Stdin %q; want %q, %q", tc.args, spec.Input, spec.Stdin, tc.want, tc.wantStdin)
		}
	}
}

// TestSrunInputRefused: --input with --pty is Slurm's error, before any
// connection.
// outsideJob clears srun's job environment for the test and returns a
// Connect that fails the test: what it checks is refused before srun
// reaches an agent.
func outsideJob(t *testing.T) Connect {
	for _, env := range []string{"SLURM_JOB_ID", "SHOAL_JOB_ID"} {
		t.Setenv(env, "")
	}
	return func() (*api.Client, error) {
		t.Fatal("connected")
		return nil, nil
	}
}

func TestSrunInputRefused(t *testing.T) {
	connect := outsideJob(t)
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--pty", "-i", "in.txt", "bash"}, "--error/--input/--output are incompatible with --pty"},
	} {
		code, err := Srun(t.Context(), connect, tc.args, io.Discard, io.Discard)
		if code != 1 || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: %d, %v; want 1 and %q", tc.args, code, err, tc.wantErr)
		}
	}
}
