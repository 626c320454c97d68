package exec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/pmix"
	"github.com/shoal-sched/shoal/exec/task"
)

const (
	// DefaultKillWait is the time between SIGTERM and SIGKILL when a task
	// is stopped (time limit, cancel, a failed rank), as Slurm's KillWait.
	DefaultKillWait = 30 * time.Second
	// DefaultKillGrace is the time between SIGTERM and SIGKILL when a task
	// is fenced.
	DefaultKillGrace = 10 * time.Second
)

var (
	// ErrClosed is returned by Start after Close.
	ErrClosed = errors.New("executor closed")
	// ErrStartFailed is returned by Start when the ranks could not be
	// started. The failure is already recorded as a pending exit with
	// cause "start"; calling Start again does nothing.
	ErrStartFailed = errors.New("ranks could not be started")
)

// TaskKey names one task on this node (task.Key).
type TaskKey = task.Key

// NoStep is the Step of a TaskKey naming a job's own task: the command of
// `shoal submit` on every node, or a batch job's script on its first node.
const NoStep = task.NoStep

// Launch is everything a task's supervisor needs to run this node's share
// of a job incarnation, or of one of its steps (task.Launch).
type Launch = task.Launch

// Host is a node name and its agent's address, for the tasks' /etc/hosts
// (task.Host).
type Host = task.Host

// outcome is how a task ended when its supervisor could not say: it never
// started, or it is gone without an exit record.
type outcome struct {
	code  int    // the exit code to record
	cause string // one of task's Cause* constants
}

// Config configures an Executor.
type Config struct {
	// DataDir is the agent's data directory; exec keeps
	// DataDir/jobs/<job>.<incarnation>/.
	DataDir string
	// NodeName is this node's name; recovery uses it to recognise the
	// ranks this node started.
	NodeName string
	// KillWait is the time between SIGTERM and SIGKILL when a task is
	// stopped for any cause but "fenced": its time limit, a cancel, a
	// failed rank (Slurm's KillWait); DefaultKillWait when zero.
	KillWait time.Duration
	// KillGrace is that time for cause "fenced" (the node lost its lease,
	// or the agent stops), also for a task already stopping for another
	// cause, and never more than KillWait; DefaultKillGrace when zero. The
	// leader's lease expiry counts on it (see package agent).
	KillGrace time.Duration
	// Logger receives exec's logs; slog.Default() when nil.
	Logger *slog.Logger
	// TaskNamespace, when set, is the argv prefix of the task namespace
	// helper (the shoal binary and stepd.TaskNamespaceCommand): each rank then
	// runs in its own UTS and mount namespace with NodeName as hostname
	// and an /etc/hosts naming Launch.Hosts. It needs root.
	TaskNamespace []string
	// TaskExec, when set, is the argv prefix of the exec shim (the shoal
	// binary and stepd.TaskExecCommand) ranks start through when they do
	// not go through TaskNamespace: it gives each its own pid as
	// SLURM_TASK_PID. Empty: ranks start directly, without it.
	TaskExec []string
	// StepdCommand is the argv prefix that runs a task supervisor (see
	// package stepd); this binary with task.StepdArg when empty. Every task
	// runs under a supervisor process of its own, which outlives the agent.
	StepdCommand []string
	// StepdLightCommand, when set, runs the supervisor of every task that
	// serves no PMIx (pmix.Wanted false) instead of StepdCommand: the small
	// shoal-slurm, which links neither libpmix nor the agent's packages,
	// starts in about half the time (BENCHMARKS.md, "Task start").
	StepdLightCommand []string
	// LeaseTTL, when positive, arms the supervisors' fencing watchdog: a
	// task is fenced once the TTL passed to RenewLease with the last
	// heartbeat (LeaseTTL, or what the leader granted) has passed since
	// that heartbeat was sent. Zero: no watchdog.
	LeaseTTL time.Duration
	// Cgroup, when set, is the agent's cgroup tree (cgroup.Detect, then
	// cgroup.Open): every task then runs in cgroups of its own under it,
	// confined to the node's share of its allocation (see package stepd).
	// Nil: no confinement.
	Cgroup *cgroup.Root
	// HostCPUs are the host's CPU ids in the order of the node's CPU
	// positions (cgroup.Canonical), to map an allocation's CPUs.
	HostCPUs []int
	// TaskPidsMax, when positive, bounds the processes and threads of one
	// task (pids.max) where the pids controller is there.
	TaskPidsMax int64
	// OCIRuntime is the path of the OCI runtime (runc or crun) that runs
	// --container tasks; empty: none, and such tasks fail to start with
	// an error naming the node.
	OCIRuntime string
	// AgentSocket is the agent's Unix socket, for the supervisors of
	// PMIx steps (task.StepdConfig.AgentSocket).
	AgentSocket string
}

func compareKeys(a, b TaskKey) int {
	return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Incarnation, b.Incarnation),
		cmp.Compare(a.Join, b.Join), cmp.Compare(a.Step, b.Step))
}

// Exit is a task's end as recorded on disk.
type Exit struct {
	Job         cluster.JobID
	Incarnation uint64
	Step        int // NoStep for the job's own task
	Join        int // the node's entry (TaskKey.Join)
	// ExitCode is the first failing rank's code (128+signal for a signal
	// death), 0 when all succeeded, -1 when lost.
	ExitCode int
	// Cause is one of fsm's Cause* values.
	Cause      string
	Start, End time.Time
	// Usage is what the task used, as its cgroup counted it; nil without
	// cgroups, or for a lost task.
	Usage *cluster.Usage
}

// exitOf is the Exit of the record r; key is the task's key, which the
// directory name gives (records older than steps carry no step).
func exitOf(r task.ExitRecord, key TaskKey) Exit {
	return Exit{Job: key.Job, Incarnation: key.Incarnation, Step: key.Step, Join: key.Join,
		ExitCode: r.ExitCode, Cause: r.Cause, Start: r.Start, End: r.End, Usage: r.Usage}
}

func (x Exit) key() TaskKey {
	return TaskKey{Job: x.Job, Incarnation: x.Incarnation, Step: x.Step, Join: x.Join}
}

// LogFile is one rank's output file. A batch script's Stdout and Stderr
// files are reported with Step NoStep and Rank 0; a single file for both
// is reported once, as "stdout". Read it with ReadLog, which checks that
// a file at a path the job chose is still the one the task wrote.
type LogFile struct {
	Incarnation uint64
	Step        int    // NoStep for the job's own task
	Rank        int    // global rank (within the step for a step)
	Stream      string // "stdout" or "stderr"
	Path        string

	// output, for a file at a path the job chose, is how the supervisor
	// opened it; nil for a rank file in the task directory.
	output *task.OpenedOutput
	// unreadable, when set, is why ReadLog reads nothing of it.
	unreadable string
}

// Executor is the agent's side of this node's tasks: it starts each under
// a supervisor of its own, finds them again after an agent restart, stops
// and signals them through their supervisors, and keeps their exits until
// the agent acknowledges them. The supervisors run the ranks.
type Executor struct {
	cfg    Config
	log    *slog.Logger
	jobs   string // DataDir/jobs
	notify chan struct{}
	wg     sync.WaitGroup // every task's watch

	mu       sync.Mutex
	closed   bool
	detached bool // Detach: the supervisors run on without this agent
	running  map[TaskKey]*tracked
	pending  map[TaskKey]Exit
}

// tracked is a running task as the agent knows it: its supervisor
// process runs it (package stepd), and the agent stops and signals it
// through the supervisor's socket and waits there for its exit.
type tracked struct {
	key    TaskKey
	dir    string
	start  time.Time
	script bool          // a batch script: its end stops the job's steps here
	pmix   bool          // its supervisor serves PMIx (pmix.Wanted)
	done   chan struct{} // closed once the task left running
	// wait is the agent's connection to the supervisor, waiting for the
	// task's end (under Executor.mu).
	wait net.Conn
	// launched is set once the supervisor listens; until then stopCause
	// keeps the first Stop's cause, for launch to deliver (under
	// Executor.mu).
	launched  bool
	stopCause string
	// stopRecorded is the cause in the task's stop record, if written
	// (under Executor.mu).
	stopRecorded string
}

// New opens the executor's directory under cfg.DataDir, creating it, and
// recovers from a previous agent's crash or restart: a task with a start
// record and no exit record whose supervisor still runs is reattached (it
// is running, and its exit is pending once it ends); one whose supervisor
// is gone has its surviving processes killed and gets an exit record with
// cause "lost" and code -1. Exits not yet acknowledged are pending again.
func New(ctx context.Context, cfg Config) (*Executor, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("exec config: data dir: empty")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("exec config: node name: empty")
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.KillWait <= 0 {
		cfg.KillWait = DefaultKillWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.StepdCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("exec config: supervisor command: %w", err)
		}
		cfg.StepdCommand = []string{exe, task.StepdArg}
	}
	if len(cfg.TaskNamespace) > 0 && os.Geteuid() != 0 {
		return nil, errors.New("exec config: task namespace: needs root")
	}
	e := &Executor{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "exec"),
		jobs:    filepath.Join(cfg.DataDir, "jobs"),
		notify:  make(chan struct{}, 1),
		running: make(map[TaskKey]*tracked),
		pending: make(map[TaskKey]Exit),
	}
	if err := os.MkdirAll(e.jobs, 0o755); err != nil {
		return nil, fmt.Errorf("exec: create %s: %w", e.jobs, err)
	}
	if err := task.SyncDir(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	if err := e.recover(ctx); err != nil {
		return nil, fmt.Errorf("exec: recover %s: %w", e.jobs, err)
	}
	if len(e.pending) > 0 {
		e.signalPending()
	}
	return e, nil
}

// Start launches this node's share of l under a supervisor of its own
// and returns once the supervisor reports every rank forked. Each rank
// leads its own process group.
//
//   - The job's own tasks (Step nil, no Spec.Batch): Spec.Command as
//     Spec.Request.TasksPerNode ranks (default 1) with the environment of
//     stepd.Env, under the job's time limit.
//   - A batch job's own task (Step nil, Spec.Batch set) runs on the first
//     node only (NodeIndex 0; elsewhere Start returns an error): the
//     script, written to the task directory as an executable owned by the
//     job's user, runs as one task with Spec.Batch.Args, in Spec.WorkDir,
//     with stepd.BatchEnv, under the job's time limit. Its output goes to
//     Stdout/Stderr when set. When it ends, the job's steps still running
//     on this node are stopped.
//   - A step (Step set): this node's StepNode of it, with stepd.Env; no time
//     limit of its own.
//
// Start is idempotent per TaskKey {Job, Incarnation, Step ID or NoStep}: a
// call while the task runs, after it exited, or after an agent restart
// found its records, does nothing and returns nil. A task is never run
// twice on a node.
//
// Start records the launch durably before the first fork. If the ranks
// cannot be started (missing work dir, command not found) the failure is
// recorded as a pending exit with cause "start" and Start returns an error
// wrapping ErrStartFailed. Other errors mean nothing was recorded or run.
func (e *Executor) Start(ctx context.Context, l Launch) error {
	key := l.Key()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start job %s: %w", key, err)
	}
	p, err := l.Plan(e.cfg.NodeName)
	if err != nil {
		return fmt.Errorf("start job %s: %w", key, err)
	}

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fmt.Errorf("start job %s: %w", key, ErrClosed)
	}
	if _, ok := e.running[key]; ok {
		e.mu.Unlock()
		return nil
	}
	dir := filepath.Join(e.jobs, key.DirName())
	started, err := task.Exists(filepath.Join(dir, task.StartFile))
	if err != nil || started {
		e.mu.Unlock()
		if err != nil {
			return fmt.Errorf("start job %s: %w", key, err)
		}
		return nil
	}
	t := &tracked{
		key:    key,
		dir:    dir,
		start:  time.Now(),
		script: p.Script,
		pmix:   pmix.Wanted(l),
		done:   make(chan struct{}),
	}
	if err := e.writeStart(t, l, p); err != nil {
		e.mu.Unlock()
		return fmt.Errorf("start job %s: %w", key, err)
	}
	// A step of a batch job whose script already ended here ends with it
	// as soon as it is launched, as it would have had it started first
	// (settle runs under e.mu too, so one of the two sees the other).
	if l.Step != nil && l.Spec.Batch != nil {
		t.stopCause = e.scriptEnded(TaskKey{Job: key.Job, Incarnation: key.Incarnation, Step: NoStep, Join: key.Join})
	}
	e.running[key] = t
	e.mu.Unlock()
	return e.launch(t, p.Ranks)
}

// scriptEnded returns the cause a batch script's end gives the steps of
// its job, if the script (the job's own task, key) has ended on this
// node, or "". Called with e.mu held.
func (e *Executor) scriptEnded(key TaskKey) string {
	x, ok := e.pending[key]
	if !ok {
		var rec task.ExitRecord
		if err := task.ReadJSON(filepath.Join(e.jobs, key.DirName()), task.ExitFile, &rec); err != nil {
			return ""
		}
		x.Cause = rec.Cause
	}
	return stepStopCause(x.Cause)
}

// stepStopCause is the cause a batch script's end, with cause c, gives
// the steps of its job still running: the script's timeout or fence, else
// a cancel.
func stepStopCause(c string) string {
	if c == task.CauseTimeout || c == task.CauseFenced {
		return c
	}
	return task.CauseCancelled
}

// launch starts t's supervisor, which forks the ranks, and watches it.
// It returns once the supervisor has reported the ranks forked (or their
// start failed): bounded by the supervisor's start and the ranks' fork
// and exec.
func (e *Executor) launch(t *tracked, ranks int) error {
	res, err := e.spawnStepd(t)
	if err != nil {
		e.log.Error("start supervisor", "task", t.key, "err", err)
		e.lose(t, outcome{code: task.CodeNotFound, cause: task.CauseStartFail})
		return fmt.Errorf("start job %s: %w: %w", t.key, ErrStartFailed, err)
	}
	gone := outcome{code: task.CodeLost, cause: task.CauseLost}
	if res.Error != "" {
		gone = outcome{code: task.CodeNotFound, cause: task.CauseStartFail}
	}
	e.mu.Lock()
	if !e.detached { // wg.Go never races Detach's wg.Wait
		e.wg.Go(func() { e.watch(t, gone) })
	}
	t.launched = true
	stop := t.stopCause
	e.mu.Unlock()
	if stop != "" { // stopped while its supervisor was starting
		e.Stop(t.key, stop)
	}
	if res.Error != "" {
		e.log.Error("start ranks", "task", t.key, "err", res.Error)
		return fmt.Errorf("start job %s: %w: %s", t.key, ErrStartFailed, res.Error)
	}
	e.log.Info("ranks started", "task", t.key, "ranks", ranks)
	return nil
}

// watch waits for t's supervisor to end and makes its exit record
// pending. A supervisor gone without one (killed, crashed) leaves the
// task with outcome gone, once whatever it left running is killed.
// After Detach it returns without a word: the supervisor runs on.
func (e *Executor) watch(t *tracked, gone outcome) {
	for {
		c, err := task.Dial(t.dir)
		if err == nil {
			e.mu.Lock()
			if e.detached {
				e.mu.Unlock()
				c.Close()
				return
			}
			t.wait = c
			e.mu.Unlock()
			_, err = task.Send(c, task.Request{Op: "wait"})
			c.Close()
		}
		e.mu.Lock()
		detached := e.detached
		e.mu.Unlock()
		if detached {
			return
		}
		var rec task.ExitRecord
		rerr := task.ReadJSON(t.dir, task.ExitFile, &rec)
		if rerr == nil {
			e.log.Info("task exited", "task", t.key, "exit_code", rec.ExitCode, "cause", rec.Cause)
			e.settle(t, rec)
			return
		}
		if !errors.Is(rerr, fs.ErrNotExist) {
			e.log.Error("unreadable exit record", "task", t.key, "err", rerr)
		} else if err != nil && supervisorListens(t.dir) {
			continue // a broken connection to a live supervisor: wait again
		}
		e.log.Error("supervisor gone without an exit record", "task", t.key, "err", err)
		e.lose(t, gone)
		return
	}
}

// supervisorListens reports whether the supervisor of the task in dir
// accepts connections.
func supervisorListens(dir string) bool {
	c, err := task.Dial(dir)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// lose ends a task whose supervisor is gone without an exit record: it
// kills what is left of the task, as recovery does for a crashed agent's,
// and records out.
func (e *Executor) lose(t *tracked, out outcome) {
	procs, _ := task.ReadProcs(t.dir)
	killed, err := e.killOrphans([]orphan{{key: t.key, dir: t.dir, start: t.start, procs: procs}})
	if err != nil {
		e.log.Error("kill what is left of the task", "task", t.key, "err", err)
	}
	if alive := waitPIDsGone(context.Background(), killed, task.GoneWait); len(alive) > 0 {
		e.log.Error("processes of a lost task survived SIGKILL", "pids", alive)
	}
	e.finish(t, out)
}

// writeStart creates t's directory and records l, the supervisor's input,
// and the start record, which makes the task one that ran here.
func (e *Executor) writeStart(t *tracked, l Launch, p task.Plan) error {
	if err := os.Mkdir(t.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := task.SyncDir(e.jobs); err != nil {
		return err
	}
	sc := task.StepdConfig{Launch: l, Start: t.start, NodeName: e.cfg.NodeName,
		KillWait: e.cfg.KillWait, KillGrace: e.cfg.KillGrace, TaskNamespace: e.cfg.TaskNamespace, TaskExec: e.cfg.TaskExec,
		Cgroup: e.cfg.Cgroup, HostCPUs: e.cfg.HostCPUs, TaskPidsMax: e.cfg.TaskPidsMax,
		OCIRuntime: e.cfg.OCIRuntime, AgentSocket: e.cfg.AgentSocket}
	if e.cfg.LeaseTTL > 0 {
		sc.Lease = filepath.Join(e.cfg.DataDir, task.LeaseFile)
	}
	// The supervisor's input need not survive a power loss: only this
	// boot's supervisor and cgroups read it (reattach, killLostCgroup),
	// and a missing or torn file reads as a task that cannot be
	// reattached, as it is after a reboot. The start record is durable,
	// and its directory's sync makes this file's name durable too: three
	// syncs before the supervisor starts, not five.
	if err := task.WriteJSONVolatile(t.dir, task.StepdFile, sc); err != nil {
		return err
	}
	return task.WriteJSON(t.dir, task.StartFile, task.StartRecord{
		Job:         t.key.Job,
		Incarnation: t.key.Incarnation,
		Step:        task.StepField(t.key.Step),
		Node:        e.cfg.NodeName,
		FirstRank:   p.First,
		Ranks:       p.Ranks,
		Start:       t.start,
		Stdout:      l.Stdout,
		Stderr:      l.Stderr,
	})
}

// finish records a task's exit durably and settles it. A failed write is
// logged and the exit still reported from memory; after a restart the
// task then reads as lost.
func (e *Executor) finish(t *tracked, out outcome) {
	rec := task.ExitRecord{
		Job:         t.key.Job,
		Incarnation: t.key.Incarnation,
		Step:        task.StepField(t.key.Step),
		Node:        e.cfg.NodeName,
		ExitCode:    out.code,
		Cause:       out.cause,
		Start:       t.start,
		End:         time.Now(),
	}
	if err := task.WriteJSON(t.dir, task.ExitFile, rec); err != nil {
		e.log.Error("record exit", "task", t.key, "err", err)
	}
	e.log.Info("task exited", "task", t.key, "exit_code", out.code, "cause", out.cause)
	e.settle(t, rec)
}

// settle makes a task's recorded exit pending and wakes ExitNotify. When
// a batch script ends, the job's steps still running here are stopped:
// the job ends with its script.
func (e *Executor) settle(t *tracked, rec task.ExitRecord) {
	e.mu.Lock()
	delete(e.running, t.key)
	e.pending[t.key] = exitOf(rec, t.key)
	var steps []TaskKey
	if t.script {
		for k := range e.running {
			if k.Job == t.key.Job && k.Incarnation == t.key.Incarnation && k.Join == t.key.Join {
				steps = append(steps, k)
			}
		}
	}
	e.mu.Unlock()
	close(t.done)
	e.signalPending()
	cause := stepStopCause(rec.Cause)
	for _, k := range steps {
		e.log.Info("stopping step of an ended batch script", "task", k, "cause", cause)
		e.Stop(k, cause)
	}
}

func (e *Executor) signalPending() {
	select {
	case e.notify <- struct{}{}:
	default:
	}
}

// Stop ends a running task: SIGTERM to every rank's process group, SIGKILL
// after KillWait (KillGrace for cause "fenced"). The exit record carries
// cause unless the ranks had already ended it (a rank failed, the time
// limit). It returns whether the
// task was running; it does not wait for the ranks to die. Stopping a
// step leaves the job's own task and its other steps running. The task's
// supervisor does the stopping: Stop records the cause in the task
// directory, which the supervisor reads every 100 ms, then sends it the
// request, so a request lost on the way still arrives.
func (e *Executor) Stop(key TaskKey, cause string) bool {
	e.mu.Lock()
	t, ok := e.running[key]
	if !ok {
		e.mu.Unlock()
		return false
	}
	launched := t.launched
	if !launched && t.stopCause == "" {
		t.stopCause = cause
	}
	// The stop record: what the supervisor finds even if the request
	// below is lost. Rewritten only to make it more urgent.
	record := t.stopRecorded == "" || cause == task.CauseFenced && t.stopRecorded != task.CauseFenced
	if record {
		if err := task.WriteJSON(t.dir, task.StopFile, task.StopRecord{Cause: cause}); err != nil {
			e.log.Error("record stop", "task", key, "cause", cause, "err", err)
		} else {
			t.stopRecorded = cause
		}
	}
	e.mu.Unlock()
	if !launched {
		return true // launch delivers it
	}
	if reply, err := e.ctl(t, task.Request{Op: "stop", Cause: cause}); err != nil || reply.Error != "" {
		e.log.Warn("stop task", "task", key, "cause", cause, "err", cmp.Or(fmt.Sprint(err), reply.Error))
	}
	return true
}

// StopAll stops every running task with cause, e.g. "fenced" when the node
// lost its lease.
func (e *Executor) StopAll(cause string) {
	for _, k := range e.Running() {
		e.Stop(k, cause)
	}
}

// Running returns the running tasks, sorted by job, incarnation and step
// (a job's own task first).
func (e *Executor) Running() []TaskKey {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.SortedFunc(maps.Keys(e.running), compareKeys)
}

// PendingExits returns the exits recorded and not yet acknowledged,
// sorted by job, incarnation and step.
func (e *Executor) PendingExits() []Exit {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := slices.Collect(maps.Values(e.pending))
	slices.SortFunc(out, func(a, b Exit) int { return compareKeys(a.key(), b.key()) })
	return out
}

// Ack records durably that the exit of key was reported, so it is not
// pending again after a restart. Acknowledging twice is fine; an unknown
// or still running task is an error (fs.ErrNotExist when exec has no
// record of it).
func (e *Executor) Ack(key TaskKey) error {
	dir := filepath.Join(e.jobs, key.DirName())
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.pending[key]; !ok {
		if _, ok := e.running[key]; ok {
			return fmt.Errorf("ack job %s: still running", key)
		}
		acked, err := task.Exists(filepath.Join(dir, task.AckFile))
		switch {
		case err != nil:
			return fmt.Errorf("ack job %s: %w", key, err)
		case acked:
			return nil
		}
		return fmt.Errorf("ack job %s: no exit: %w", key, fs.ErrNotExist)
	}
	if err := task.WriteJSON(dir, task.AckFile, task.AckRecord{Time: time.Now()}); err != nil {
		return fmt.Errorf("ack job %s: %w", key, err)
	}
	delete(e.pending, key)
	return nil
}

// ExitNotify returns a channel that receives when a new exit is pending.
// It has a buffer of one and is never closed: after a receive, read
// PendingExits.
func (e *Executor) ExitNotify() <-chan struct{} { return e.notify }

// LogFiles returns the output files of every incarnation and step of job
// on this node, sorted by incarnation, step, rank and stream.
func (e *Executor) LogFiles(job cluster.JobID) ([]LogFile, error) {
	entries, err := os.ReadDir(e.jobs)
	if err != nil {
		return nil, fmt.Errorf("log files of job %s: %w", job, err)
	}
	var out []LogFile
	for _, d := range entries {
		key, ok := task.ParseDirName(d.Name())
		if !ok || key.Job != job || !d.IsDir() {
			continue
		}
		dir := filepath.Join(e.jobs, d.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("log files of job %s: %w", job, err)
		}
		for _, f := range files {
			rank, stream, ok := task.ParseRankFile(f.Name())
			if !ok {
				continue
			}
			out = append(out, LogFile{Incarnation: key.Incarnation, Step: key.Step, Rank: rank,
				Stream: stream, Path: filepath.Join(dir, f.Name())})
		}
		if key.Step != NoStep {
			continue
		}
		var start task.StartRecord
		if err := task.ReadJSON(dir, task.StartFile, &start); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("log files of job %s: %w", job, err)
		}
		if start.Stdout == "" && start.Stderr == "" {
			continue
		}
		// Files at paths the job chose are readable only as the
		// supervisor recorded opening them (see output.go); a missing or
		// damaged record leaves them unreadable.
		var opened *task.OutputRecord
		var rec task.OutputRecord
		if err := task.ReadJSON(dir, task.OutputsFile, &rec); err == nil {
			opened = &rec
		}
		if start.Stdout != "" {
			out = append(out, outputLogFile(LogFile{Incarnation: key.Incarnation, Step: NoStep, Stream: "stdout", Path: start.Stdout}, opened))
		}
		if start.Stderr != "" && start.Stderr != start.Stdout {
			out = append(out, outputLogFile(LogFile{Incarnation: key.Incarnation, Step: NoStep, Stream: "stderr", Path: start.Stderr}, opened))
		}
	}
	slices.SortFunc(out, func(a, b LogFile) int {
		return cmp.Or(cmp.Compare(a.Incarnation, b.Incarnation), cmp.Compare(a.Step, b.Step),
			cmp.Compare(a.Rank, b.Rank), strings.Compare(a.Stream, b.Stream))
	})
	return out, nil
}

// Close refuses further Starts and waits, until ctx is done, for the
// running tasks to end and their exits to be recorded. It does not stop
// them: call StopAll first for a graceful shutdown. If ctx ends first the
// error names the tasks still running; their supervisors run on (see
// Detach).
func (e *Executor) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	for {
		e.mu.Lock()
		var t *tracked
		for _, r := range e.running {
			t = r
			break
		}
		e.mu.Unlock()
		if t == nil {
			break
		}
		select {
		case <-t.done:
		case <-ctx.Done():
			return fmt.Errorf("close exec: tasks %v still running: %w", e.Running(), ctx.Err())
		}
	}
	e.wg.Wait() // only goroutines that already delivered their exit remain
	return nil
}

// Detach refuses further Starts and lets the running tasks go on without
// this executor: their supervisors keep them, fence them if the lease is
// not renewed, and record their exits, which the next executor opened on
// the same DataDir reattaches to or finds (see New). For an agent that
// stops to be restarted.
func (e *Executor) Detach() {
	e.mu.Lock()
	e.closed, e.detached = true, true
	for _, t := range e.running {
		if t.wait != nil {
			t.wait.Close()
		}
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// ErrNoTerminal: the task asked for has no terminal to attach to here
// (not running on this node, or not a --pty task).
var ErrNoTerminal = errors.New("no terminal")

// DialPty connects to the terminal of a running --pty task (see
// task.PtySock); the caller relays the connection to srun --pty.
func (e *Executor) DialPty(key TaskKey) (net.Conn, error) {
	return e.dialTask(key, task.DialPty)
}

// DialStdin connects to the stdin of a running task's ranks that read
// srun's: its resumable socket when resume (task.StdinResumeSock), else
// the raw one (task.StdinSock); the caller relays srun's stdin to it. It
// fails with ErrNoTerminal where there is none (yet), and with
// ErrNoResume where resume is asked of a supervisor that predates it.
func (e *Executor) DialStdin(key TaskKey, resume bool) (net.Conn, error) {
	c, err := e.dialTask(key, func(dir string) (net.Conn, error) { return task.DialStdin(dir, resume) })
	if err != nil && resume {
		// A supervisor of an earlier agent serves the raw socket alone.
		if _, rerr := os.Stat(filepath.Join(e.jobs, key.DirName(), task.StdinSock)); rerr == nil {
			if _, ferr := os.Stat(filepath.Join(e.jobs, key.DirName(), task.StdinResumeSock)); os.IsNotExist(ferr) {
				return nil, fmt.Errorf("task %s: %w", key, ErrNoResume)
			}
		}
	}
	return c, err
}

// ErrNoResume: the task's supervisor serves srun's stdin only raw (it
// predates resumable input); the client asks for that instead.
var ErrNoResume = errors.New("the tasks' supervisor relays stdin only without resuming")

// DialPMIx connects to the fences of a running PMIx step whose first
// node this is (see task.PMIxSock); the caller relays another node's
// supervisor to it. It fails with ErrNoTerminal where there is none
// (yet).
func (e *Executor) DialPMIx(key TaskKey) (net.Conn, error) {
	return e.dialTask(key, task.DialPMIx)
}

// dialTask connects to one of a running task's sockets with dial.
func (e *Executor) dialTask(key TaskKey, dial func(dir string) (net.Conn, error)) (net.Conn, error) {
	e.mu.Lock()
	_, running := e.running[key]
	e.mu.Unlock()
	if !running {
		return nil, fmt.Errorf("task %s: not running on this node: %w", key, ErrNoTerminal)
	}
	c, err := dial(filepath.Join(e.jobs, key.DirName()))
	if err != nil {
		return nil, fmt.Errorf("task %s: %w: %w", key, ErrNoTerminal, err)
	}
	return c, nil
}
