package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
// default: srun's stdin goes to every task) or for a file srun reads
// itself (localInput), a task's number for -i N, and "" for a file each
// task opens or none (the tasks read nothing srun relays).
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
	if localInput(opts) != "" {
		return cluster.StdinAll
	}
	return ""
}

// localInput is srun's --input file pattern when srun reads the file
// itself and relays its bytes to every task, as Slurm's srun does for a
// name without %t, %n or %N (the job's and step's sequences it expands
// itself): "" for anything else, a per-task pattern included (each task
// opens its own file on its node, as slurmstepd does).
func localInput(opts slurm.Options) string {
	if !opts.Set["input"] {
		return ""
	}
	in := parseInput(opts)
	if in.Kind != slurm.InputFile || slurm.PerTaskPattern(in.Pattern) {
		return ""
	}
	return in.Pattern
}

// relayedStdin is what a step's tasks read of srun's relay: relay, but
// nothing where srun's own stdin, which relay sends, is /dev/null
// (withoutNullStdin); a file srun reads itself is relayed whatever its
// stdin is.
func relayedStdin(opts slurm.Options, relay string) string {
	if localInput(opts) != "" {
		return relay
	}
	return withoutNullStdin(relay)
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
// reading /dev/null as before, or each opening the --input file srun
// would have read (local, localInput) on its node, and says so.
func startStep(ctx context.Context, c *api.Client, job uint64, req api.StepRequest, local string, stderr io.Writer) (api.StepResponse, api.StepRequest, error) {
	step, err := c.StartStep(ctx, job, req)
	if err != nil && req.Spec.Stdin != "" && olderCluster(err) {
		if local != "" {
			fmt.Fprintf(stderr, "srun: warning: the cluster's older agents cannot relay srun's stdin: each task opens %s on its node\n", local)
			req.Spec.Input = local
		} else {
			fmt.Fprintln(stderr, "srun: warning: the cluster's older agents cannot relay srun's stdin: the tasks read /dev/null")
		}
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

// stepStdin is what srun relays to a step's tasks that read it (relay):
// its own stdin, or the --input file it reads itself (file, localInput's
// pattern, relative to workDir).
type stepStdin struct {
	relay         bool
	file, workDir string
}

// stepStdinOf is the stdin srun relays for a step started as req asked.
func stepStdinOf(opts slurm.Options, req api.StepRequest) stepStdin {
	in := stepStdin{relay: req.Spec.Stdin != "", workDir: req.Spec.WorkDir}
	if in.relay {
		in.file = localInput(opts)
	}
	return in
}

// followStepInput is followStep with srun's stdin, or its --input file,
// relayed to the step's tasks that read it: the relay stops when the
// step ends. A file that srun cannot open cancels the step, as Slurm's
// srun refuses it.
func followStepInput(ctx context.Context, c *api.Client, job uint64, step api.StepResponse, in stepStdin, fo followOpts, stdout, stderr io.Writer) (int, error) {
	if !in.relay {
		return followStep(ctx, c, job, step, fo, stdout, stderr)
	}
	if in.file != "" {
		f, err := openLocalInput(ctx, c, job, step.Step, in)
		if err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.CancelStep(cctx, job, step.Step)
			cancel()
			return 1, err
		}
		defer f.Close()
		stop := startRelay(ctx, c, job, step.Step, f, func() {}, stderr)
		defer stop()
		return followStep(ctx, c, job, step, fo, stdout, stderr)
	}
	stop := startStdinRelay(ctx, c, job, step.Step, stderr)
	defer stop()
	return followStep(ctx, c, job, step, fo, stdout, stderr)
}

// openLocalInput opens the --input file srun reads itself: its pattern
// expanded as Slurm's srun expands it (the job's and the step's
// sequences; localInput has none of a task's), relative to the step's
// working directory.
func openLocalInput(ctx context.Context, c *api.Client, job uint64, step int, in stepStdin) (*os.File, error) {
	f := slurm.PatternFields{JobID: job, StepID: strconv.Itoa(step), ArrayTaskID: -1}
	if strings.Contains(in.file, "%") {
		j, err := readJob(ctx, c, job)
		if err != nil {
			return nil, fmt.Errorf("--input %s: job %d: %w", in.file, job, err)
		}
		f.User, f.JobName = j.User, j.Name
		if j.ArrayJobID != 0 {
			f.IsArray, f.ArrayJobID, f.ArrayTaskID = true, j.ArrayJobID, j.ArrayTaskID
		}
	}
	name := slurm.ExpandOutputPattern(in.file, f)
	if !filepath.IsAbs(name) {
		name = filepath.Join(in.workDir, name)
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, stdinFileError(err)
	}
	return file, nil
}

// startStdinRelay relays srun's stdin to the tasks of job's step (or of
// its own task, task.NoStep) that read it, in the background, until
// stdin ends or stop is called; stop waits for it.
func startStdinRelay(ctx context.Context, c *api.Client, job uint64, step int, stderr io.Writer) (stop func()) {
	in, restore := pollableStdin()
	return startRelay(ctx, c, job, step, in, restore, stderr)
}

// startRelay relays in (a file, or a pollable stdin: a read under way
// ends at stop with a deadline) in the background; stop ends it, waits,
// then calls restore.
func startRelay(ctx context.Context, c *api.Client, job uint64, step int, in *os.File, restore func(), stderr io.Writer) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
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
		j, err := readJob(ctx, c, job)
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
