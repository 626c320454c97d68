package prolog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

func TestEnv(t *testing.T) {
	j := &cluster.Job{ID: 42, Spec: cluster.Spec{Name: "train", User: "alice", UID: 1000, GID: 100, Account: "ml",
		Request: cluster.Request{Partition: "gpu", Constraint: "a100"}},
		Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1", GPUs: []int{0, 1}}, {Node: "n2", GPUs: []int{3}}}}}
	got := Env(Prolog, j, "n2")
	for _, want := range []string{"SLURM_SCRIPT_CONTEXT=prolog_slurmd", "SLURM_JOB_ID=42", "SLURM_JOBID=42", "SLURM_JOB_USER=alice",
		"SLURM_JOB_UID=1000", "SLURM_JOB_GID=100", "SLURMD_NODENAME=n2", "SLURM_JOB_NAME=train", "SLURM_JOB_NODELIST=n[1-2]",
		"SLURM_JOB_PARTITION=gpu", "SLURM_JOB_ACCOUNT=ml", "SLURM_JOB_CONSTRAINTS=a100", "SLURM_JOB_GPUS=3", "CUDA_VISIBLE_DEVICES=3"} {
		if !slices.Contains(got, want) {
			t.Errorf("Env lacks %s:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if e := Env(Epilog, j, "n1"); !slices.Contains(e, "SLURM_SCRIPT_CONTEXT=epilog_slurmd") || !slices.Contains(e, "SLURM_JOB_GPUS=0,1") {
		t.Errorf("epilog env on n1:\n%s", strings.Join(e, "\n"))
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		kind string
		r    Result
		want Decision
	}{
		{Prolog, Result{}, Decision{Start: true}},
		{Prolog, Result{Code: 1}, Decision{Drain: PrologError, Requeue: true}},
		{Prolog, Result{Code: -1, TimedOut: true}, Decision{Drain: PrologError, Requeue: true}},
		{Epilog, Result{}, Decision{}},
		{Epilog, Result{Code: 2}, Decision{Drain: EpilogError}},
		{Epilog, Result{Code: -1, TimedOut: true}, Decision{Drain: EpilogError}},
	} {
		if got := Verdict(tc.kind, tc.r); got != tc.want {
			t.Errorf("Verdict(%s, %+v) = %+v; want %+v", tc.kind, tc.r, got, tc.want)
		}
	}
}

// Run: the exit code, the output's end, and a script killed (with what
// it started) at the timeout.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := Run(t.Context(), script("ok", `echo "job $SLURM_JOB_ID"`), []string{"SLURM_JOB_ID=7"}, time.Minute)
	if !r.OK() || r.Output != "job 7\n" {
		t.Errorf("ok: %+v", r)
	}
	if r := Run(t.Context(), script("fail", "echo bad >&2; exit 3"), nil, time.Minute); r.OK() || r.Code != 3 || r.Output != "bad\n" {
		t.Errorf("fail: %+v", r)
	}
	if r := Run(t.Context(), script("hang", "sleep 600 & sleep 600"), nil, 200*time.Millisecond); r.OK() || !r.TimedOut {
		t.Errorf("hang: %+v", r)
	}
	if r := Run(t.Context(), filepath.Join(dir, "missing"), nil, time.Minute); r.OK() || r.Err == nil {
		t.Errorf("missing: %+v", r)
	}
}
