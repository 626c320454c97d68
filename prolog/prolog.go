// Package prolog runs the node's Prolog and Epilog, as Slurm's slurmd
// runs slurm.conf's Prolog= and Epilog=: as root, on each node of a job,
// the prolog before the job's first task there and the epilog once the
// job has ended there (completed, failed or cancelled), each with the
// job's description in its environment and bounded by a timeout
// (PrologEpilogTimeout). What follows from a script's end is decided
// here, purely (Verdict); the agent gathers, runs (Run) and acts.
package prolog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Which script runs.
const (
	Prolog = "prolog"
	Epilog = "epilog"
)

// Drain reasons, Slurm's words.
const (
	PrologError = "Prolog error"
	EpilogError = "Epilog error"
)

// Env is the environment of job j's prolog or epilog (kind) on node, as
// slurmd gives its scripts: only the job's description, no user
// environment.
func Env(kind string, j *cluster.Job, node string) []string {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"SLURM_SCRIPT_CONTEXT=" + kind + "_slurmd",
		"SLURM_JOB_ID=" + strconv.FormatUint(uint64(j.ID), 10),
		"SLURM_JOBID=" + strconv.FormatUint(uint64(j.ID), 10),
		"SLURM_JOB_USER=" + j.Spec.User,
		"SLURM_JOB_UID=" + strconv.Itoa(j.Spec.UID),
		"SLURM_JOB_GID=" + strconv.Itoa(j.Spec.GID),
		"SLURMD_NODENAME=" + node,
	}
	if j.Spec.Name != "" {
		env = append(env, "SLURM_JOB_NAME="+j.Spec.Name)
	}
	if j.Alloc != nil {
		names := make([]string, len(j.Alloc.Nodes))
		for i, n := range j.Alloc.Nodes {
			names[i] = n.Node
			if n.Node == node && len(n.GPUs) > 0 {
				ids := make([]string, len(n.GPUs))
				for k, g := range n.GPUs {
					ids[k] = strconv.Itoa(g)
				}
				env = append(env, "SLURM_JOB_GPUS="+strings.Join(ids, ","), "CUDA_VISIBLE_DEVICES="+strings.Join(ids, ","))
			}
		}
		env = append(env, "SLURM_JOB_NODELIST="+slurm.CompressHostlist(names))
	}
	if p := j.Spec.Request.Partition; p != "" {
		env = append(env, "SLURM_JOB_PARTITION="+p)
	}
	if j.Spec.Account != "" {
		env = append(env, "SLURM_JOB_ACCOUNT="+j.Spec.Account)
	}
	if c := j.Spec.Request.Constraint; c != "" {
		env = append(env, "SLURM_JOB_CONSTRAINTS="+c)
	}
	return env
}

// Result is how a script ended.
type Result struct {
	// Code is its exit code (128+signal for a signal death), -1 when it
	// did not start.
	Code     int
	TimedOut bool
	// Output is the end of what it wrote, for the log.
	Output string
	Err    error
}

// OK reports whether the script succeeded.
func (r Result) OK() bool { return r.Code == 0 && !r.TimedOut && r.Err == nil }

// Decision is what follows from a script's end.
type Decision struct {
	// Drain, when set, is the reason to drain the node with.
	Drain string
	// Requeue (a prolog's failure): the job goes back to the queue held
	// (Slurm's requeue in a held state); a job that may not be requeued
	// (--no-requeue) is cancelled instead.
	Requeue bool
	// Start says whether the job's tasks may start here (a prolog's
	// success).
	Start bool
}

// Verdict decides what follows from kind's result r: a prolog's failure
// or timeout drains the node and requeues the job held; an epilog's
// drains the node; success lets the tasks start (prolog) or changes
// nothing (epilog).
func Verdict(kind string, r Result) Decision {
	switch {
	case r.OK() && kind == Prolog:
		return Decision{Start: true}
	case r.OK():
		return Decision{}
	case kind == Prolog:
		return Decision{Drain: PrologError, Requeue: true}
	default:
		return Decision{Drain: EpilogError}
	}
}

// maxOutput bounds what Run keeps of a script's output.
const maxOutput = 4 << 10

// Run runs the script at path with env, as this process's user (root),
// in a process group of its own that is killed when timeout (0: none)
// passes or ctx ends.
func Run(ctx context.Context, path string, env []string, timeout time.Duration) Result {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, path)
	cmd.Env, cmd.Dir = env, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a child holding the output does not hold Run
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	r := Result{Output: string(out.b)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil && timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.Code, r.TimedOut = -1, true
		r.Err = fmt.Errorf("%s: timed out after %s", path, timeout)
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Code = 128 + int(ws.Signal())
		}
	case err != nil:
		r.Code, r.Err = -1, fmt.Errorf("%s: %w", path, err)
	}
	return r
}

// tail keeps the last maxOutput bytes written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > maxOutput {
		t.b = bytes.Clone(t.b[len(t.b)-maxOutput:])
	}
	return len(p), nil
}
