package slurmcli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

// sallocHolder is the batch script of an salloc job: it holds the
// allocation on the first node until salloc ends it with SIGTERM (the job
// then COMPLETES, as Slurm's salloc job does) or the time limit does.
const sallocHolder = `#!/bin/sh
# shoal salloc: holds this allocation until salloc releases it
trap 'exit 0' TERM
while :; do sleep 3600 & wait $!; done
`

// submitAllocation submits req as an allocation with no command of its
// own (sallocHolder holds it until it is cancelled), for cmd (salloc, or
// srun allocating for its own step), and prints the warnings.
func submitAllocation(ctx context.Context, connect Connect, req api.SubmitRequest, cmd string) (*api.Client, api.SubmitResponse, error) {
	req.Batch = &cluster.Batch{Script: sallocHolder, Output: "none"}
	c, err := connect()
	if err != nil {
		return nil, api.SubmitResponse{}, err
	}
	res, err := c.Submit(ctx, req, request.SubmitRetry)
	if err != nil {
		return nil, api.SubmitResponse{}, err
	}
	request.PrintWarnings(cmd, res.Warnings)
	return c, res, nil
}

// Salloc is salloc: allocate nodes, run COMMAND (default: the user's
// shell) here with the allocation's environment, so that srun inside it
// starts steps on the allocation, then release the allocation and return
// the command's exit code. With --no-shell it returns 0 once the
// allocation is granted and leaves it held (until its time limit or
// scancel), running nothing, as Slurm's does.
func Salloc(ctx context.Context, connect Connect, args []string, stderr io.Writer) (int, error) {
	opts, rest, err := slurm.ParseArgs(slurm.Salloc, args)
	if err != nil {
		return 1, err
	}
	// --uid/--gid: the allocation is that user's; the command run here
	// stays the caller's (root's), who may start steps in it.
	if connect, err = AsCaller(connect, opts); err != nil {
		return 1, err
	}
	if opts, _, err = request.LimitNodeList(slurm.Salloc, opts); err != nil {
		return 1, err
	}
	req, warnings, err := request.FromOptions(opts)
	if err != nil {
		return 1, err
	}
	request.PrintWarnings("salloc", warnings)
	command := rest
	if len(command) == 0 {
		command = []string{cmp.Or(os.Getenv("SHELL"), "/bin/sh")}
	}
	if req.Name == "" {
		req.Name = "interactive"
		if opts.NoShell {
			req.Name = "no-shell" // Slurm's name for it
		}
	}
	req.Env = nil // the command runs here, with this environment
	c, res, err := submitAllocation(ctx, connect, req, "salloc")
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "salloc: Pending job allocation %d\n", res.ID)
	submitted := time.Now()

	// Wait for the allocation; an interrupt while waiting cancels it.
	var j api.Job
	announced := false
	for {
		if ctx.Err() != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = c.CancelRef(cctx, strconv.FormatUint(res.ID, 10))
			cancel()
			fmt.Fprintf(stderr, "salloc: Job allocation %d has been revoked.\n", res.ID)
			return 1, nil
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		j, err = c.Job(rctx, res.ID)
		cancel()
		if err == nil {
			switch {
			case j.State == "RUNNING":
			case cluster.JobState(j.State).Terminal():
				return 1, fmt.Errorf("job %d ended %s (%s) before it was allocated", res.ID, j.State, orNone(j.Reason))
			default:
				if immediateExpired(opts.Immediate, submitted, time.Now(), j.State) {
					return giveUpImmediate(c, "salloc", res.ID, stderr), nil
				}
				if !announced && j.Reason != "" {
					fmt.Fprintf(stderr, "salloc: job %d queued and waiting for resources\n", res.ID)
					announced = true
				}
				time.Sleep(srunPoll)
				continue
			}
			break
		}
		time.Sleep(srunPoll)
	}
	fmt.Fprintf(stderr, "salloc: Granted job allocation %d\n", res.ID)
	if opts.NoShell {
		return 0, nil
	}

	// Revoked, the command gets -K's signal, or SIGHUP.
	revokeSig := syscall.SIGHUP
	if opts.KillCommand != 0 {
		revokeSig = syscall.Signal(opts.KillCommand)
	}
	code, runErr := runAllocated(ctx, c, j, command, revokeSig, stderr)

	fmt.Fprintf(stderr, "salloc: Relinquishing job allocation %d\n", res.ID)
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Signal(rctx, res.ID, api.SignalRequest{Signal: int(syscall.SIGTERM), BatchOnly: true, RequestID: request.NewID()}); err != nil && !api.IsConflict(err) {
		// The holder could not be told to end: cancel it instead.
		if _, cerr := c.CancelRef(rctx, strconv.FormatUint(res.ID, 10)); cerr != nil {
			fmt.Fprintf(stderr, "salloc: error: release job %d: %v\n", res.ID, errors.Join(err, cerr))
		}
	}
	return code, runErr
}

// runAllocated runs command here with the allocation's environment until
// it exits, or until the job ends under it (time limit, cancel): then the
// command gets revokeSig (SIGHUP, or -K's signal), as salloc does when its
// allocation is revoked.
// Interactive (stdin a terminal salloc holds), the command runs in the
// terminal's foreground process group of its own (see terminal). Like
// Slurm's salloc once granted, salloc ignores SIGINT, SIGQUIT, SIGTERM,
// SIGUSR1, SIGUSR2 and SIGPIPE while the command runs, and on SIGHUP
// passes it on to the command and stops waiting for it.
func runAllocated(ctx context.Context, c *api.Client, j api.Job, command []string, revokeSig syscall.Signal, stderr io.Writer) (int, error) {
	// Caught, not ignored: the command starts with their default actions.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	// SIGINT and SIGTERM end ctx: the polls below outlive it.
	ctx = context.WithoutCancel(ctx)

	cmd := osexec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), sallocEnv(j)...)
	tty, interactive := foregroundTerminal()
	if interactive {
		cmd.SysProcAttr = tty.procAttr()
	}
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("run %s: %w", command[0], err)
	}
	pid := cmd.Process.Pid
	if interactive {
		if err := tty.give(pid); err != nil {
			fmt.Fprintf(stderr, "salloc: error: give the terminal to %s: %v\n", command[0], err)
		}
		defer tty.takeBack()
	}
	// send sends sig to the command: its process group when it has one.
	send := func(sig syscall.Signal) {
		if interactive {
			_ = syscall.Kill(-pid, sig)
			return
		}
		_ = cmd.Process.Signal(sig)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	revoked := false
	for {
		select {
		case err := <-done:
			var ee *osexec.ExitError
			switch {
			case err == nil:
				return 0, nil
			case errors.As(err, &ee):
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), nil
				}
				return ee.ExitCode(), nil
			}
			return 1, err
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				send(syscall.SIGHUP)
				return 1, nil
			}
		case <-t.C:
			if revoked {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			cur, err := c.Job(rctx, j.ID)
			cancel()
			if err == nil && cur.State != "RUNNING" {
				revoked = true
				fmt.Fprintf(stderr, "salloc: Job allocation %d has been revoked (%s).\n", j.ID, cur.State)
				send(revokeSig)
			}
		}
	}
}

// sallocEnv is what salloc exports to its command: the allocation, as
// Slurm names it, and the incarnation srun needs to start steps.
func sallocEnv(j api.Job) []string {
	nodes := slurm.CompressHostlist(j.Nodes)
	id := strconv.FormatUint(j.ID, 10)
	// mpirun finds its slots in SLURM_TASKS_PER_NODE (Open MPI's ras/slurm
	// refuses an allocation without it).
	req := cluster.Request{TasksPerNode: j.TasksPerNode, NTasks: j.NTasks, Distribution: j.Distribution, Pack: j.Pack}
	tasks, cpus := req.TaskCountsIn(recordedLayout(j, len(j.Nodes))), make([]int, len(j.Nodes))
	for i := range j.Nodes {
		cpus[i] = tasks[i] * max(1, j.CPUsPerTask)
	}
	ntasks := strconv.Itoa(req.Ranks(len(j.Nodes)))
	env := []string{
		"SLURM_TASKS_PER_NODE=" + slurm.TasksPerNode(tasks), "SLURM_JOB_CPUS_PER_NODE=" + slurm.TasksPerNode(cpus),
		"SLURM_JOB_ID=" + id, "SLURM_JOBID=" + id, "SLURM_JOB_NAME=" + j.Name,
		"SLURM_JOB_NODELIST=" + nodes, "SLURM_NODELIST=" + nodes,
		"SLURM_JOB_NUM_NODES=" + strconv.Itoa(len(j.Nodes)), "SLURM_NNODES=" + strconv.Itoa(len(j.Nodes)),
		"SLURM_NTASKS=" + ntasks, "SLURM_NPROCS=" + ntasks,
		"SLURM_CPUS_PER_TASK=" + strconv.Itoa(max(1, j.CPUsPerTask)),
		"SLURM_SUBMIT_DIR=" + j.WorkDir,
		"SHOAL_JOB_ID=" + id, "SHOAL_INCARNATION=" + strconv.FormatUint(j.Incarnation, 10),
		"SHOAL_NODELIST=" + nodes,
	}
	if j.NTasks == 0 { // Slurm sets it only for --ntasks-per-node
		env = append(env, "SLURM_NTASKS_PER_NODE="+strconv.Itoa(j.TasksPerNode))
	}
	if j.GPUsPerNode > 0 {
		env = append(env, "SLURM_GPUS_PER_NODE="+strconv.Itoa(j.GPUsPerNode))
	}
	return env
}
