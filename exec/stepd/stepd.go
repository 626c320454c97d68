package stepd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/exec/pmi2"
	"github.com/shoal-sched/shoal/exec/pmix"
	"github.com/shoal-sched/shoal/exec/task"
)

// watchdogPoll is how often a supervisor reads the lease and the stop
// record: the delay between the lease's end and the fence, well inside
// the leader's margin (node's leaseMargin).
const watchdogPoll = 100 * time.Millisecond

var (
	// errStartFailed: the ranks could not be started (the launch result's
	// StartFailed). Its text is the agent's ErrStartFailed's.
	errStartFailed = errors.New("ranks could not be started")
	// errNotRunning: a signal found no rank to signal (the control
	// reply's NotRunning).
	errNotRunning = errors.New("task not running")
)

// Main runs a task supervisor, the process that owns one task's
// ranks from fork to exit record, apart from the agent, so that the ranks
// survive an agent's crash or restart and are fenced even when the agent
// hangs. args are what follows task.StepdArg.
//
// With --detach it starts the supervisor proper in a session of its own
// and returns at once: how earlier agents started supervisors (today's
// start it directly, in a session of their own, saving that process).
//
// The supervisor reads DIR/stepd.json, listens on DIR/stepd.sock, runs
// the task (its ranks, time limit, --signal warning, kill-wait, cgroup,
// exit record), reports the launch on descriptor 3
// when it is open, serves stop, signal and wait requests, fences the task
// when the lease file ends, and exits once the exit record is written.
// ctx ending (SIGTERM to the supervisor) fences the task too.
func Main(ctx context.Context, args []string) int {
	if len(args) == 2 && args[0] == "--detach" {
		return detachStepd(args[1])
	}
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		fmt.Fprintf(os.Stderr, "shoal %s: want [--detach] TASKDIR (absolute), got %q\n", task.StepdArg, args)
		return 2
	}
	if err := runStepd(ctx, args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "shoal %s %s: %v\n", task.StepdArg, args[0], err)
		return 1
	}
	return 0
}

// detachStepd re-executes this binary as the supervisor of dir, in a new
// session, handing on descriptor 3 and stdout/stderr, and returns without
// waiting for it.
func detachStepd(dir string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "shoal %s: %v\n", task.StepdArg, err)
		return 1
	}
	args := slices.DeleteFunc(slices.Clone(os.Args[1:]), func(a string) bool { return a == "--detach" })
	cmd := osexec.Command(exe, args...)
	cmd.Env = os.Environ()
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if f := launchFile(); f != nil {
		cmd.ExtraFiles = []*os.File{f}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "shoal %s: start supervisor: %v\n", task.StepdArg, err)
		return 1
	}
	_ = cmd.Process.Release()
	return 0
}

// supervisor runs one task: it forks the ranks, holds their process
// groups, output files and cgroup, supervises them to the end and records
// the exit. It lives in the `shoal stepd` process of the task, never in
// the agent.
type supervisor struct {
	cfg  task.StepdConfig // stepd.json: the Launch and the agent's settings
	log  *slog.Logger
	key  task.Key
	plan task.Plan
	dir  string      // the task directory
	stop chan string // buffered 1: the first stop cause wins
	// limit carries a new time limit's deadline (zero: none), buffered
	// 1: the latest wins.
	limit chan time.Time
	done  chan struct{}  // closed once the exit is recorded
	wg    sync.WaitGroup // the task's run and its ranks' goroutines

	mu sync.Mutex
	// pgids are the process groups of the ranks started, set once they
	// are (under mu): what signal signals.
	pgids []int
	// pty is rank 0's terminal for a --pty task (set by startRanks,
	// closed by run once the ranks are gone); nil otherwise.
	pty *ptyServer
	// stdin relays srun's stdin to the ranks that read it (set by
	// startRanks, closed by run once the ranks are gone); nil when none
	// does.
	stdin *stdinServer
	// containers are the OCI runtime's ids of the ranks' containers
	// (--container), and runtime the runtime; set by startRanks, read
	// by run once it returned.
	containers []string
	runtime    ociRuntime
	// pmix is the ranks' PMIx server for srun --mpi=pmix (set by
	// startRanks, closed by run once the ranks are gone); nil otherwise.
	pmix *pmix.Server
	// pmi2 is the ranks' PMI-2 server for srun --mpi=pmi2, as pmix.
	pmi2 *pmi2.Server
	// pmixKill is set (under mu) once the PMIx or PMI-2 server failed: the ranks
	// are killed, also those run records after it (see pmixFailed).
	pmixKill bool

	// outputs are the files at paths the job chose that openOutput opened
	// so far (recorded in OutputsFile), and truncated the paths a step's
	// ranks write to that it already truncated: the next rank with the
	// same file appends, so it does not wipe what an earlier one wrote.
	// Used by startRanks's goroutine only.
	outputs   task.OutputRecord
	truncated map[string]bool
}

func runStepd(ctx context.Context, dir string) error {
	var cfg task.StepdConfig
	if err := task.ReadJSON(dir, task.StepdFile, &cfg); err != nil {
		return err
	}
	launchOut := launchFile()
	report := func(r task.LaunchResult) {
		if launchOut != nil {
			_ = json.NewEncoder(launchOut).Encode(r)
			launchOut.Close()
			launchOut = nil
		}
	}
	defer report(task.LaunchResult{Error: "supervisor ended before the ranks started"})

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	key := cfg.Launch.Key()
	if filepath.Base(dir) != key.DirName() {
		return fmt.Errorf("%s names task %s, not the one of its directory", task.StepdFile, key)
	}
	p, err := cfg.Launch.Plan(cfg.NodeName)
	if err != nil {
		return fmt.Errorf("task %s: %w", key, err)
	}
	s := &supervisor{cfg: cfg, log: log.With("component", "stepd", "pid", os.Getpid()), key: key, plan: p,
		dir: dir, stop: make(chan string, 1), limit: make(chan time.Time, 1), done: make(chan struct{})}
	// The socket is bound relative to the task directory: its absolute
	// path may be longer than a socket address can be.
	if err := os.Chdir(dir); err != nil {
		return err
	}
	_ = os.Remove(task.SockFile)
	ln, err := net.Listen("unix", task.SockFile)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()

	launched := make(chan error, 1)
	s.wg.Go(func() { s.run(launched) })
	if err := <-launched; err != nil {
		report(task.LaunchResult{Error: err.Error(), StartFailed: errors.Is(err, errStartFailed)})
	} else {
		report(task.LaunchResult{})
	}

	var wg sync.WaitGroup // the watchdog, the acceptor and each connection
	if cfg.Lease != "" {
		wg.Go(func() { s.watchdog(cfg.Lease) })
	}
	wg.Go(s.watchStopRecord)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed once the task is done
			}
			wg.Go(func() { s.serveCtl(c) })
		}
	})
	select {
	case <-s.done:
	case <-ctx.Done():
		s.log.Warn("supervisor told to stop: fencing the task", "task", key)
		s.requestStop(task.CauseFenced)
		<-s.done
	}
	ln.Close()
	_ = os.Remove(task.SockFile)
	wg.Wait()
	s.wg.Wait()
	return nil
}

// requestStop asks the task to end with cause: the first cause queued
// wins, and one after the task ended is dropped.
// setLimit replaces the task's time limit (measured from its start), the
// latest request winning over one not yet taken.
func (s *supervisor) setLimit(limit time.Duration) {
	var deadline time.Time
	if limit > 0 {
		deadline = s.cfg.Start.Add(limit)
	}
	for {
		select {
		case s.limit <- deadline:
			return
		default:
		}
		select {
		case <-s.limit: // drop the older one
		default:
		}
	}
}

func (s *supervisor) requestStop(cause string) {
	select {
	case s.stop <- cause:
	default: // a cause is already queued; the first one wins
	}
}

// signal sends sig to the ranks: to every rank's process group, or with
// shellOnly to the first rank's leader alone. Ranks not started yet, or
// already ended, get nothing; the error wraps errNotRunning.
func (s *supervisor) signal(sig syscall.Signal, shellOnly bool) error {
	s.mu.Lock()
	pgids := s.pgids
	s.mu.Unlock()
	select {
	case <-s.done:
		pgids = nil
	default:
	}
	if len(pgids) == 0 {
		return fmt.Errorf("signal %s: job %s: %w", sig, s.key, errNotRunning)
	}
	s.log.Info("signalling ranks", "task", s.key, "signal", sig.String(), "shell_only", shellOnly)
	return signalGroups(pgids, sig, shellOnly)
}

// watchdog fences t once the lease in path ends without renewal: the
// agent may be dead, stopped or hung, and the leader will soon take the
// node's GPUs back (DESIGN: an agent that cannot renew kills its own tasks
// before that moment).
func (s *supervisor) watchdog(path string) {
	tick := time.NewTicker(watchdogPoll)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		if !task.LeaseExpired(path) {
			continue
		}
		select {
		case s.stop <- task.CauseFenced:
			s.log.Warn("lease ended without renewal: fencing the task", "task", s.key)
			return
		default: // another cause is queued; try again once it is taken
		}
	}
}

// watchStopRecord delivers the cause of the task's stop record, written
// by the agent's Stop before its request, when it appears or changes: a
// request lost on the way still stops the task, within watchdogPoll.
func (s *supervisor) watchStopRecord() {
	tick := time.NewTicker(watchdogPoll)
	defer tick.Stop()
	delivered := ""
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		var rec task.StopRecord
		if err := task.ReadJSON(s.dir, task.StopFile, &rec); err != nil || rec.Cause == delivered || !validStopCause(rec.Cause) {
			continue
		}
		select {
		case s.stop <- rec.Cause:
			delivered = rec.Cause
		default: // another cause is queued; try again once it is taken
		}
	}
}

// serveCtl answers one request on c.
func (s *supervisor) serveCtl(c net.Conn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(task.CtlTimeout))
	var req task.Request
	line, err := bufio.NewReaderSize(io.LimitReader(c, task.MaxCtlLine), task.MaxCtlLine).ReadBytes('\n')
	if err != nil {
		return
	}
	var reply task.Reply
	if err := json.Unmarshal(line, &req); err != nil {
		reply.Error = fmt.Sprintf("malformed request: %v", err)
	} else {
		switch req.Op {
		case "stop":
			if !validStopCause(req.Cause) {
				reply.Error = fmt.Sprintf("stop cause %q: want cancelled, fenced or timeout", req.Cause)
			} else {
				s.requestStop(req.Cause)
			}
		case "signal":
			if req.Signal < 1 || req.Signal > 64 {
				reply.Error = fmt.Sprintf("signal %d: want 1 to 64", req.Signal)
			} else if err := s.signal(syscall.Signal(req.Signal), req.ShellOnly); err != nil {
				reply.Error, reply.NotRunning = err.Error(), errors.Is(err, errNotRunning)
			}
		case "timelimit":
			if req.TimeLimit < 0 {
				reply.Error = fmt.Sprintf("time limit %s: want 0 (none) or more", req.TimeLimit)
			} else {
				s.setLimit(req.TimeLimit)
			}
		case "wait":
			_ = c.SetReadDeadline(time.Time{})
			<-s.done
		default:
			reply.Error = fmt.Sprintf("op %q: want stop, signal, timelimit or wait", req.Op)
		}
	}
	_ = c.SetWriteDeadline(time.Now().Add(task.CtlTimeout))
	_ = json.NewEncoder(c).Encode(reply)
}

func validStopCause(c string) bool {
	return c == task.CauseCancelled || c == task.CauseFenced || c == task.CauseTimeout
}

// launchFile is descriptor 3, which carries the launch result to the
// agent, when the agent said it passed one (task.LaunchEnv): an unmarked
// descriptor 3 may be anything.
func launchFile() *os.File {
	if os.Getenv(task.LaunchEnv) != "3" {
		return nil
	}
	// Not inherited by the ranks: the agent reads until the supervisor's
	// answer, or its death, and a rank must not hold the pipe open.
	syscall.CloseOnExec(3)
	return os.NewFile(3, "launch")
}
