package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/slurm"
)

// stdinRelay is the Stdin of a step's or job's spec for srun's
// -i/--input: cluster.StdinAll when not given or "all" (Slurm's
// default: srun's stdin goes to every task), a task's number for -i N,
// and "" for a file or none (the tasks read no stdin of srun's).
func stdinRelay(opts slurm.Options) string {
	if !opts.Set["input"] {
		return cluster.StdinAll
	}
	in := parseInput(opts)
	switch in.Kind {
	case slurm.InputAll:
		return cluster.StdinAll
	case slurm.InputTask:
		return strconv.Itoa(in.Task)
	}
	return ""
}

// withoutNullStdin is relay unless srun's stdin is /dev/null (a batch
// script's, a program's started without input): its tasks then read
// /dev/null of their own, as they would read it relayed, and the step
// needs nothing an older agent lacks.
func withoutNullStdin(relay string) string {
	fi, err := os.Stdin.Stat()
	if err != nil {
		return relay
	}
	null, err := os.Stat(os.DevNull)
	if err == nil && os.SameFile(fi, null) {
		return ""
	}
	return relay
}

// olderCluster reports whether err is the leader's refusal of a field
// some server of the cluster does not speak yet (a rolling upgrade under
// way): fsm.ErrUnsupportedByCluster, answered 409.
func olderCluster(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Code == http.StatusConflict && strings.Contains(se.Message, "not supported by every server of the cluster")
}

// startStep starts a step; where the cluster cannot relay srun's stdin
// yet (servers older than protocol 4), it starts it without, its tasks
// reading /dev/null as before, and says so.
func startStep(ctx context.Context, c *api.Client, job uint64, req api.StepRequest, stderr io.Writer) (api.StepResponse, api.StepRequest, error) {
	step, err := c.StartStep(ctx, job, req)
	if err != nil && req.Spec.Stdin != "" && olderCluster(err) {
		fmt.Fprintln(stderr, "srun: warning: the cluster's older agents cannot relay srun's stdin: the tasks read /dev/null")
		req.Spec.Stdin = ""
		step, err = c.StartStep(ctx, job, req)
	}
	return step, req, err
}

// parseInput is srun's -i/--input given its -n: a number not below the
// task count names a file, as Slurm's.
func parseInput(opts slurm.Options) slurm.Input {
	ntasks := 0
	if opts.Set["ntasks"] {
		ntasks = opts.NTasks
	}
	return slurm.ParseInput(opts.Input, ntasks)
}

// followStepInput is followStep with srun's stdin relayed to the step's
// tasks that read it, when relay: the relay stops when the step ends.
func followStepInput(ctx context.Context, c *api.Client, job uint64, step api.StepResponse, relay bool, fo followOpts, stdout, stderr io.Writer) (int, error) {
	if !relay {
		return followStep(ctx, c, job, step, fo, stdout, stderr)
	}
	stop := startStdinRelay(ctx, c, job, step.Step, stderr)
	defer stop()
	return followStep(ctx, c, job, step, fo, stdout, stderr)
}

// startStdinRelay relays srun's stdin to the tasks of job's step (or of
// its own task, task.NoStep) that read it, in the background, until
// stdin ends or stop is called; stop waits for it.
func startStdinRelay(ctx context.Context, c *api.Client, job uint64, step int, stderr io.Writer) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	in, restore := pollableStdin()
	var wg sync.WaitGroup
	wg.Go(func() { relayStdin(rctx, c, job, step, in, stderr) })
	wg.Go(func() {
		<-rctx.Done()
		_ = in.SetReadDeadline(time.Now()) // ends a read under way
	})
	return func() {
		cancel()
		wg.Wait()
		restore()
	}
}

// pollableStdin is srun's stdin read through a non-blocking descriptor,
// so that a read can be ended by a deadline; restore makes it blocking
// again. A regular file or /dev/null stays as it is: its reads never
// wait. The *os.File is made once and kept for the process's life: its
// finalizer would close descriptor 0.
func pollableStdin() (in *os.File, restore func()) {
	fd := int(os.Stdin.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return os.Stdin, func() {}
	}
	pollStdinOnce.Do(func() { pollStdin = os.NewFile(uintptr(fd), "stdin") })
	return pollStdin, func() { _ = syscall.SetNonblock(fd, false) }
}

var (
	pollStdinOnce sync.Once
	pollStdin     *os.File
)

// relayStdin relays in to every node whose tasks of job's step (or own
// task) read srun's stdin, once they are known, until in ends and every
// node has its end, no task reads any more, or ctx ends (stdinStream).
func relayStdin(ctx context.Context, c *api.Client, job uint64, step int, in io.Reader, stderr io.Writer) {
	nodes, err := awaitStdinNodes(ctx, c, job, step)
	if err != nil || len(nodes) == 0 {
		return
	}
	dial := func(ctx context.Context, node string, resume bool) (io.ReadWriteCloser, error) {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if resume {
			return c.AttachStdinResume(actx, job, step, node)
		}
		return c.AttachStdin(actx, job, step, node)
	}
	newStdinStream(nodes, srunStdinWindow).run(ctx, in, dial, stderr)
}

// errStepOver: the step (or job) ended before its stdin was attached.
var errStepOver = errors.New("the tasks ended")

// awaitStdinNodes waits until the job's step (or own task) is recorded
// with its nodes, and returns those whose tasks read srun's stdin; none
// once it has ended.
func awaitStdinNodes(ctx context.Context, c *api.Client, job uint64, step int) ([]string, error) {
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		j, err := c.Job(rctx, job)
		cancel()
		if err == nil {
			if step == task.NoStep {
				if len(j.StdinNodes) > 0 {
					return j.StdinNodes, nil
				}
				if cluster.JobState(j.State).Terminal() {
					return nil, errStepOver
				}
			} else if st, ok := findStep(j, step); ok {
				return st.StdinNodes, nil
			} else if j.State != "RUNNING" {
				return nil, errStepOver
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(srunPoll):
		}
	}
}
