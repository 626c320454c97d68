package exec

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
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/cgroup"
)

// StepdArg is the argument that makes a binary run a task supervisor:
// `shoal stepd [--detach] TASKDIR` (see StepdMain). A binary whose
// Config.StepdCommand does not name cmd/shoal (a test binary) must call
// StepdMain itself when its os.Args[1] is StepdArg.
const StepdArg = "stepd"

// Files of the supervisor in a task directory.
const (
	stepdFile = "stepd.json" // its input, written before it starts
	sockFile  = "stepd.sock" // its control socket, while it runs
	stepdLog  = "stepd.log"  // its log
)

const (
	// watchdogPoll is how often a supervisor reads the lease: the delay
	// between the lease's end and the fence, well inside the leader's
	// margin (node's leaseMargin).
	watchdogPoll = 100 * time.Millisecond
	// ctlTimeout bounds one control request to a supervisor.
	ctlTimeout = 2 * time.Second
	// maxCtlLine bounds a control message.
	maxCtlLine = 4096
	// maxUnixPath is the longest socket path bind and connect accept
	// (sun_path is 108 bytes with its terminating NUL).
	maxUnixPath = 107
)

// stepdConfig is a supervisor's input: the task and the executor's
// settings that govern it.
type stepdConfig struct {
	Launch    Launch        `json:"launch"`
	Start     time.Time     `json:"start"`
	NodeName  string        `json:"node"`
	KillWait  time.Duration `json:"kill_wait"`
	KillGrace time.Duration `json:"kill_grace"`
	// Lease is the lease file the fencing watchdog reads; empty: none.
	Lease string `json:"lease,omitempty"`
	// TaskNamespace is Config.TaskNamespace.
	TaskNamespace []string `json:"task_namespace,omitempty"`
	// Cgroup, HostCPUs and TaskPidsMax are Config's; recovery reads
	// Cgroup back to kill a lost task's cgroup.
	Cgroup      *cgroup.Root `json:"cgroup,omitempty"`
	HostCPUs    []int        `json:"host_cpus,omitempty"`
	TaskPidsMax int64        `json:"task_pids_max,omitempty"`
}

// launchResult is what a supervisor tells the agent that started it,
// once the ranks are forked (on the inherited descriptor 3).
type launchResult struct {
	Error       string `json:"error,omitempty"`
	StartFailed bool   `json:"start_failed,omitempty"`
}

// ctlRequest is one request on a supervisor's socket, one JSON line.
type ctlRequest struct {
	Op        string `json:"op"` // "stop", "signal" or "wait"
	Cause     string `json:"cause,omitempty"`
	Signal    int    `json:"signal,omitempty"`
	ShellOnly bool   `json:"shell_only,omitempty"`
}

// ctlReply answers a ctlRequest; "wait" is answered once the task's exit
// is recorded.
type ctlReply struct {
	Error      string `json:"error,omitempty"`
	NotRunning bool   `json:"not_running,omitempty"`
}

// StepdMain runs a task supervisor, the process that owns one task's
// ranks from fork to exit record, apart from the agent, so that the ranks
// survive an agent's crash or restart and are fenced even when the agent
// hangs. args are what follows StepdArg.
//
// With --detach it starts the supervisor proper in a session of its own
// and returns at once, so the supervisor is never the agent's child (the
// agent may die or restart; nothing of it has to reap the supervisor).
//
// The supervisor reads DIR/stepd.json, listens on DIR/stepd.sock, runs
// the task with the executor's own code (Start's ranks, time limit,
// --signal, kill-wait, exit record), reports the launch on descriptor 3
// when it is open, serves stop, signal and wait requests, fences the task
// when the lease file ends, and exits once the exit record is written.
// ctx ending (SIGTERM to the supervisor) fences the task too.
func StepdMain(ctx context.Context, args []string) int {
	if len(args) == 2 && args[0] == "--detach" {
		return detachStepd(args[1])
	}
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		fmt.Fprintf(os.Stderr, "shoal %s: want [--detach] TASKDIR (absolute), got %q\n", StepdArg, args)
		return 2
	}
	if err := runStepd(ctx, args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "shoal %s %s: %v\n", StepdArg, args[0], err)
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
		fmt.Fprintf(os.Stderr, "shoal %s: %v\n", StepdArg, err)
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
		fmt.Fprintf(os.Stderr, "shoal %s: start supervisor: %v\n", StepdArg, err)
		return 1
	}
	_ = cmd.Process.Release()
	return 0
}

func runStepd(ctx context.Context, dir string) error {
	var cfg stepdConfig
	if err := readJSON(dir, stepdFile, &cfg); err != nil {
		return err
	}
	launchOut := launchFile()
	report := func(r launchResult) {
		if launchOut != nil {
			_ = json.NewEncoder(launchOut).Encode(r)
			launchOut.Close()
			launchOut = nil
		}
	}
	defer report(launchResult{Error: "supervisor ended before the ranks started"})

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := &Executor{
		cfg: Config{DataDir: filepath.Dir(filepath.Dir(dir)), NodeName: cfg.NodeName,
			KillWait: cfg.KillWait, KillGrace: cfg.KillGrace, Logger: log, TaskNamespace: cfg.TaskNamespace,
			Cgroup: cfg.Cgroup, HostCPUs: cfg.HostCPUs, TaskPidsMax: cfg.TaskPidsMax},
		log:     log.With("component", "stepd", "pid", os.Getpid()),
		jobs:    filepath.Dir(dir),
		notify:  make(chan struct{}, 1),
		running: make(map[TaskKey]*task),
		pending: make(map[TaskKey]Exit),
	}
	key := cfg.Launch.key()
	if filepath.Base(dir) != key.dirName() {
		return fmt.Errorf("%s names task %s, not the one of its directory", stepdFile, key)
	}
	p, err := e.plan(cfg.Launch)
	if err != nil {
		return fmt.Errorf("task %s: %w", key, err)
	}
	// The socket is bound relative to the task directory: its absolute
	// path may be longer than a socket address can be.
	if err := os.Chdir(dir); err != nil {
		return err
	}
	_ = os.Remove(sockFile)
	ln, err := net.Listen("unix", sockFile)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	t := &task{key: key, launch: cfg.Launch, plan: p, dir: dir, start: cfg.Start,
		stop: make(chan string, 1), done: make(chan struct{})}
	e.running[key] = t

	launched := make(chan error, 1)
	e.wg.Go(func() { e.run(t, launched) })
	if err := <-launched; err != nil {
		report(launchResult{Error: err.Error(), StartFailed: errors.Is(err, ErrStartFailed)})
	} else {
		report(launchResult{})
	}

	var wg sync.WaitGroup // the watchdog, the acceptor and each connection
	if cfg.Lease != "" {
		wg.Go(func() { e.watchdog(t, cfg.Lease) })
	}
	wg.Go(func() { e.watchStopRecord(t) })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed once the task is done
			}
			wg.Go(func() { e.serveCtl(t, c) })
		}
	})
	select {
	case <-t.done:
	case <-ctx.Done():
		e.log.Warn("supervisor told to stop: fencing the task", "task", key)
		e.Stop(key, causeFenced)
		<-t.done
	}
	ln.Close()
	_ = os.Remove(sockFile)
	wg.Wait()
	e.wg.Wait()
	return nil
}

// watchdog fences t once the lease in path ends without renewal: the
// agent may be dead, stopped or hung, and the leader will soon take the
// node's GPUs back (DESIGN: an agent that cannot renew kills its own tasks
// before that moment).
func (e *Executor) watchdog(t *task, path string) {
	tick := time.NewTicker(watchdogPoll)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		if !leaseExpired(path) {
			continue
		}
		select {
		case t.stop <- causeFenced:
			e.log.Warn("lease ended without renewal: fencing the task", "task", t.key)
			return
		default: // another cause is queued; try again once it is taken
		}
	}
}

// watchStopRecord delivers the cause of the task's stop record, written
// by the agent's Stop before its request, when it appears or changes: a
// request lost on the way still stops the task, within watchdogPoll.
func (e *Executor) watchStopRecord(t *task) {
	tick := time.NewTicker(watchdogPoll)
	defer tick.Stop()
	delivered := ""
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		var rec stopRecord
		if err := readJSON(t.dir, stopFile, &rec); err != nil || rec.Cause == delivered || !validStopCause(rec.Cause) {
			continue
		}
		select {
		case t.stop <- rec.Cause:
			delivered = rec.Cause
		default: // another cause is queued; try again once it is taken
		}
	}
}

// serveCtl answers one request on c.
func (e *Executor) serveCtl(t *task, c net.Conn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(ctlTimeout))
	var req ctlRequest
	line, err := bufio.NewReaderSize(io.LimitReader(c, maxCtlLine), maxCtlLine).ReadBytes('\n')
	if err != nil {
		return
	}
	var reply ctlReply
	if err := json.Unmarshal(line, &req); err != nil {
		reply.Error = fmt.Sprintf("malformed request: %v", err)
	} else {
		switch req.Op {
		case "stop":
			if !validStopCause(req.Cause) {
				reply.Error = fmt.Sprintf("stop cause %q: want cancelled, fenced or timeout", req.Cause)
			} else {
				e.Stop(t.key, req.Cause)
			}
		case "signal":
			if req.Signal < 1 || req.Signal > 64 {
				reply.Error = fmt.Sprintf("signal %d: want 1 to 64", req.Signal)
			} else if err := e.Signal(t.key, syscall.Signal(req.Signal), req.ShellOnly); err != nil {
				reply.Error, reply.NotRunning = err.Error(), errors.Is(err, ErrNotRunning)
			}
		case "wait":
			_ = c.SetReadDeadline(time.Time{})
			<-t.done
		default:
			reply.Error = fmt.Sprintf("op %q: want stop, signal or wait", req.Op)
		}
	}
	_ = c.SetWriteDeadline(time.Now().Add(ctlTimeout))
	_ = json.NewEncoder(c).Encode(reply)
}

func validStopCause(c string) bool {
	return c == causeCancelled || c == causeFenced || c == causeTimeout
}

// launchFile is descriptor 3, which carries the launch result to the
// agent, when the agent said it passed one (launchEnv): an unmarked
// descriptor 3 may be anything.
func launchFile() *os.File {
	if os.Getenv(launchEnv) != "3" {
		return nil
	}
	// Not inherited by the ranks: the agent reads until the supervisor's
	// answer, or its death, and a rank must not hold the pipe open.
	syscall.CloseOnExec(3)
	return os.NewFile(3, "launch")
}

// launchEnv marks a supervisor started with a launch descriptor.
const launchEnv = "SHOAL_STEPD_LAUNCH_FD"

// stepdEnv is a supervisor's environment: PATH, and the markers of its
// task, which recovery finds it by should it be left without an exit
// record (see killOrphans).
func stepdEnv(k TaskKey, node string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), launchEnv + "=3",
		"SHOAL_JOB_ID=" + k.Job.String(),
		"SHOAL_INCARNATION=" + strconv.FormatUint(k.Incarnation, 10),
		"SHOAL_NODE_NAME=" + node}
	if k.Step != NoStep {
		env = append(env, "SHOAL_STEP_ID="+strconv.Itoa(k.Step))
	}
	return env
}

// spawnStepd starts t's supervisor and waits for its launch result.
func (e *Executor) spawnStepd(t *task) (launchResult, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return launchResult{}, err
	}
	defer r.Close()
	logf, err := os.OpenFile(filepath.Join(t.dir, stepdLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		w.Close()
		return launchResult{}, err
	}
	argv := append(slices.Clone(e.cfg.StepdCommand), "--detach", t.dir)
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Env = stepdEnv(t.key, e.cfg.NodeName)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Run() // the detaching parent returns once the supervisor started
	w.Close()
	logf.Close()
	if err != nil {
		return launchResult{}, fmt.Errorf("run %v: %w", argv, err)
	}
	var res launchResult
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return launchResult{}, fmt.Errorf("supervisor of %s ended without a launch result (see %s): %w",
			t.key, filepath.Join(t.dir, stepdLog), err)
	}
	return res, nil
}

// dialStepd connects to the supervisor of the task in dir.
func dialStepd(dir string) (net.Conn, error) {
	path := filepath.Join(dir, sockFile)
	d := net.Dialer{Timeout: ctlTimeout}
	if len(path) <= maxUnixPath {
		return d.Dial("unix", path)
	}
	// Too long for a socket address: reach it through a descriptor of the
	// directory.
	df, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer df.Close()
	return d.Dial("unix", fmt.Sprintf("/proc/self/fd/%d/%s", df.Fd(), sockFile))
}

// sendCtl sends one request to the supervisor of the task in dir and
// returns its reply. For "wait" the read has no deadline.
func sendCtl(c net.Conn, req ctlRequest) (ctlReply, error) {
	var reply ctlReply
	_ = c.SetWriteDeadline(time.Now().Add(ctlTimeout))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return reply, err
	}
	if req.Op != "wait" {
		_ = c.SetReadDeadline(time.Now().Add(ctlTimeout))
	}
	line, err := bufio.NewReaderSize(io.LimitReader(c, maxCtlLine), maxCtlLine).ReadBytes('\n')
	if err != nil {
		return reply, err
	}
	if err := json.Unmarshal(line, &reply); err != nil {
		return reply, fmt.Errorf("malformed reply: %w", err)
	}
	return reply, nil
}

// ctl sends a request to t's supervisor on a connection of its own.
func (e *Executor) ctl(t *task, req ctlRequest) (ctlReply, error) {
	c, err := dialStepd(t.dir)
	if err != nil {
		return ctlReply{}, fmt.Errorf("supervisor of %s: %w", t.key, err)
	}
	defer c.Close()
	reply, err := sendCtl(c, req)
	if err != nil {
		return reply, fmt.Errorf("supervisor of %s: %s: %w", t.key, req.Op, err)
	}
	return reply, nil
}
