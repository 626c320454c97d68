package exec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Exit causes. They are the values of fsm's Cause* constants (fsm may not
// be imported here: exec depends on domain types only) and must stay equal
// to them; they travel in TaskExited.
const (
	causeExit      = "exit"      // fsm.CauseExit
	causeTimeout   = "timeout"   // fsm.CauseTimeout
	causeCancelled = "cancelled" // fsm.CauseCancelled
	causeFenced    = "fenced"    // fsm.CauseFenced
	causeLost      = "lost"      // fsm.CauseLost
	causeStartFail = "start"     // fsm.CauseStartFail
)

// Exit codes of start failures, as a shell reports them.
const (
	codeNotExecutable = 126
	codeNotFound      = 127
	codeLost          = -1
)

const (
	// DefaultKillGrace is the time between SIGTERM and SIGKILL.
	DefaultKillGrace = 10 * time.Second
	// killWait bounds how long exec waits for SIGKILLed processes that are
	// not its children (orphaned group members, a crashed agent's ranks)
	// to vanish from /proc before it reports them dead.
	killWait = 5 * time.Second
	// killPoll is the period of that wait.
	killPoll = 20 * time.Millisecond
)

var (
	// ErrClosed is returned by Start after Close.
	ErrClosed = errors.New("executor closed")
	// ErrStartFailed is returned by Start when the ranks could not be
	// started. The failure is already recorded as a pending exit with
	// cause "start"; calling Start again does nothing.
	ErrStartFailed = errors.New("ranks could not be started")
)

// Launch is everything exec needs to run this node's share of a job
// incarnation.
type Launch struct {
	Job         cluster.JobID
	Incarnation uint64
	// Spec is the job's spec: Command, Env (applied before the contract,
	// so the contract wins), WorkDir, User/UID/GID, Name and Request
	// (TasksPerNode, CPUsPerTask, TimeLimit).
	Spec cluster.Spec
	// Alloc lists the job's nodes in rank order and its MasterPort.
	Alloc cluster.Allocation
	// NodeIndex is this node's index in Alloc.Nodes (NODE_RANK).
	NodeIndex int
	// MasterAddr is the host ranks dial for Alloc.Nodes[0].
	MasterAddr string
	// NodeList is the compressed hostlist of Alloc.NodeNames(), e.g. "n[1-2]".
	NodeList string
	// NodeName is this node's name.
	NodeName string
}

func (l Launch) key() TaskKey { return TaskKey{Job: l.Job, Incarnation: l.Incarnation} }

// Config configures an Executor.
type Config struct {
	// DataDir is the agent's data directory; exec keeps
	// DataDir/jobs/<job>.<incarnation>/.
	DataDir string
	// NodeName is this node's name; recovery uses it to recognise the
	// ranks this node started.
	NodeName string
	// KillGrace is the time between SIGTERM and SIGKILL; DefaultKillGrace
	// when zero.
	KillGrace time.Duration
	// Logger receives exec's logs; slog.Default() when nil.
	Logger *slog.Logger
}

// TaskKey names one job incarnation's task on this node.
type TaskKey struct {
	Job         cluster.JobID
	Incarnation uint64
}

func compareKeys(a, b TaskKey) int {
	return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Incarnation, b.Incarnation))
}

// Exit is a task's end as recorded on disk.
type Exit struct {
	Job         cluster.JobID
	Incarnation uint64
	// ExitCode is the first failing rank's code (128+signal for a signal
	// death), 0 when all succeeded, -1 when lost.
	ExitCode int
	// Cause is one of fsm's Cause* values.
	Cause      string
	Start, End time.Time
}

// LogFile is one rank's output file.
type LogFile struct {
	Incarnation uint64
	Rank        int    // global rank
	Stream      string // "stdout" or "stderr"
	Path        string
}

// Executor runs this node's ranks and records their exits durably.
type Executor struct {
	cfg    Config
	log    *slog.Logger
	jobs   string // DataDir/jobs
	notify chan struct{}
	wg     sync.WaitGroup // every goroutine exec starts

	mu      sync.Mutex
	closed  bool
	running map[TaskKey]*task
	pending map[TaskKey]Exit
}

// task is one running job incarnation.
type task struct {
	key    TaskKey
	launch Launch
	dir    string
	start  time.Time
	stop   chan string   // buffered 1: the first Stop's cause
	done   chan struct{} // closed once the task left running
}

// New opens the executor's directory under cfg.DataDir, creating it, and
// recovers from a previous agent's crash: every task with a start record
// and no exit record has its surviving processes killed and gets an exit
// record with cause "lost" and code -1. Exits not yet acknowledged are
// pending again.
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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := &Executor{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "exec"),
		jobs:    filepath.Join(cfg.DataDir, "jobs"),
		notify:  make(chan struct{}, 1),
		running: make(map[TaskKey]*task),
		pending: make(map[TaskKey]Exit),
	}
	if err := os.MkdirAll(e.jobs, 0o755); err != nil {
		return nil, fmt.Errorf("exec: create %s: %w", e.jobs, err)
	}
	if err := syncDir(cfg.DataDir); err != nil {
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

// Start launches this node's ranks of l: Spec.Request.TasksPerNode
// processes (default 1), each leading its own process group, with the
// environment of Env. It returns once every rank was forked.
//
// Start is idempotent per (job, incarnation): a call while the task runs,
// after it exited, or after an agent restart found its records, does
// nothing and returns nil. An incarnation is never run twice on a node.
//
// Start records the launch durably before the first fork. If the ranks
// cannot be started (missing work dir, command not found) the failure is
// recorded as a pending exit with cause "start" and Start returns an error
// wrapping ErrStartFailed. Other errors mean nothing was recorded or run.
func (e *Executor) Start(ctx context.Context, l Launch) error {
	key := l.key()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start job %s incarnation %d: %w", l.Job, l.Incarnation, err)
	}
	if err := e.validate(l); err != nil {
		return fmt.Errorf("start job %s incarnation %d: %w", l.Job, l.Incarnation, err)
	}

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fmt.Errorf("start job %s incarnation %d: %w", l.Job, l.Incarnation, ErrClosed)
	}
	if _, ok := e.running[key]; ok {
		e.mu.Unlock()
		return nil
	}
	dir := filepath.Join(e.jobs, key.dirName())
	started, err := exists(filepath.Join(dir, startFile))
	if err != nil || started {
		e.mu.Unlock()
		if err != nil {
			return fmt.Errorf("start job %s incarnation %d: %w", l.Job, l.Incarnation, err)
		}
		return nil
	}
	t := &task{
		key:    key,
		launch: l,
		dir:    dir,
		start:  time.Now(),
		stop:   make(chan string, 1),
		done:   make(chan struct{}),
	}
	if err := e.writeStart(t); err != nil {
		e.mu.Unlock()
		return fmt.Errorf("start job %s incarnation %d: %w", l.Job, l.Incarnation, err)
	}
	e.running[key] = t
	e.mu.Unlock()

	launched := make(chan error, 1)
	e.wg.Go(func() { e.run(t, launched) })
	return <-launched // bounded by fork and exec of the ranks
}

func (e *Executor) validate(l Launch) error {
	if l.Job == 0 || l.Incarnation == 0 {
		return fmt.Errorf("job id and incarnation must be positive, got %d and %d", l.Job, l.Incarnation)
	}
	if l.NodeIndex < 0 || l.NodeIndex >= len(l.Alloc.Nodes) {
		return fmt.Errorf("node index %d: want 0 to %d", l.NodeIndex, len(l.Alloc.Nodes)-1)
	}
	if n := l.Alloc.Nodes[l.NodeIndex].Node; n != e.cfg.NodeName {
		return fmt.Errorf("node index %d names node %q, this node is %q", l.NodeIndex, n, e.cfg.NodeName)
	}
	s := l.Spec
	s.Request = s.Request.WithDefaults()
	if err := s.Validate(); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

func (e *Executor) writeStart(t *task) error {
	if err := os.Mkdir(t.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := syncDir(e.jobs); err != nil {
		return err
	}
	tpn := t.launch.Spec.Request.WithDefaults().TasksPerNode
	return writeJSON(t.dir, startFile, startRecord{
		Job:         t.key.Job,
		Incarnation: t.key.Incarnation,
		Node:        e.cfg.NodeName,
		FirstRank:   t.launch.NodeIndex * tpn,
		Ranks:       tpn,
		Start:       t.start,
	})
}

// finish records a task's exit durably, makes it pending and wakes
// ExitNotify. A failed write is logged and the exit still reported from
// memory; after a restart the task then reads as lost.
func (e *Executor) finish(t *task, out outcome) {
	rec := exitRecord{
		Job:         t.key.Job,
		Incarnation: t.key.Incarnation,
		Node:        e.cfg.NodeName,
		ExitCode:    out.code,
		Cause:       out.cause,
		Start:       t.start,
		End:         time.Now(),
	}
	if err := writeJSON(t.dir, exitFile, rec); err != nil {
		e.log.Error("record exit", "job", t.key.Job, "incarnation", t.key.Incarnation, "err", err)
	}
	e.log.Info("task exited", "job", t.key.Job, "incarnation", t.key.Incarnation,
		"exit_code", out.code, "cause", out.cause)
	e.mu.Lock()
	delete(e.running, t.key)
	e.pending[t.key] = rec.exit()
	e.mu.Unlock()
	close(t.done)
	e.signalPending()
}

func (e *Executor) signalPending() {
	select {
	case e.notify <- struct{}{}:
	default:
	}
}

// Stop ends a running task: SIGTERM to every rank's process group, SIGKILL
// after KillGrace. The exit record carries cause unless the ranks had
// already ended it (a rank failed, the time limit). It returns whether the
// task was running; it does not wait for the ranks to die.
func (e *Executor) Stop(job cluster.JobID, incarnation uint64, cause string) bool {
	e.mu.Lock()
	t, ok := e.running[TaskKey{Job: job, Incarnation: incarnation}]
	e.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case t.stop <- cause:
	default: // a cause is already queued; the first one wins
	}
	return true
}

// StopAll stops every running task with cause, e.g. "fenced" when the node
// lost its lease.
func (e *Executor) StopAll(cause string) {
	for _, k := range e.Running() {
		e.Stop(k.Job, k.Incarnation, cause)
	}
}

// Running returns the running tasks, sorted.
func (e *Executor) Running() []TaskKey {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.SortedFunc(maps.Keys(e.running), compareKeys)
}

// PendingExits returns the exits recorded and not yet acknowledged,
// sorted by job and incarnation.
func (e *Executor) PendingExits() []Exit {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := slices.Collect(maps.Values(e.pending))
	slices.SortFunc(out, func(a, b Exit) int {
		return compareKeys(TaskKey{a.Job, a.Incarnation}, TaskKey{b.Job, b.Incarnation})
	})
	return out
}

// Ack records durably that the exit of (job, incarnation) was reported, so
// it is not pending again after a restart. Acknowledging twice is fine; an
// unknown or still running task is an error (fs.ErrNotExist when exec has
// no record of it).
func (e *Executor) Ack(job cluster.JobID, incarnation uint64) error {
	key := TaskKey{Job: job, Incarnation: incarnation}
	dir := filepath.Join(e.jobs, key.dirName())
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.pending[key]; !ok {
		if _, ok := e.running[key]; ok {
			return fmt.Errorf("ack job %s incarnation %d: still running", job, incarnation)
		}
		acked, err := exists(filepath.Join(dir, ackFile))
		switch {
		case err != nil:
			return fmt.Errorf("ack job %s incarnation %d: %w", job, incarnation, err)
		case acked:
			return nil
		}
		return fmt.Errorf("ack job %s incarnation %d: no exit: %w", job, incarnation, fs.ErrNotExist)
	}
	if err := writeJSON(dir, ackFile, ackRecord{Time: time.Now()}); err != nil {
		return fmt.Errorf("ack job %s incarnation %d: %w", job, incarnation, err)
	}
	delete(e.pending, key)
	return nil
}

// ExitNotify returns a channel that receives when a new exit is pending.
// It has a buffer of one and is never closed: after a receive, read
// PendingExits.
func (e *Executor) ExitNotify() <-chan struct{} { return e.notify }

// LogFiles returns the output files of every incarnation of job on this
// node, sorted by incarnation, rank and stream.
func (e *Executor) LogFiles(job cluster.JobID) ([]LogFile, error) {
	entries, err := os.ReadDir(e.jobs)
	if err != nil {
		return nil, fmt.Errorf("log files of job %s: %w", job, err)
	}
	var out []LogFile
	for _, d := range entries {
		key, ok := parseDirName(d.Name())
		if !ok || key.Job != job || !d.IsDir() {
			continue
		}
		dir := filepath.Join(e.jobs, d.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("log files of job %s: %w", job, err)
		}
		for _, f := range files {
			rank, stream, ok := parseLogName(f.Name())
			if !ok {
				continue
			}
			out = append(out, LogFile{Incarnation: key.Incarnation, Rank: rank,
				Stream: stream, Path: filepath.Join(dir, f.Name())})
		}
	}
	slices.SortFunc(out, func(a, b LogFile) int {
		return cmp.Or(cmp.Compare(a.Incarnation, b.Incarnation),
			cmp.Compare(a.Rank, b.Rank), strings.Compare(a.Stream, b.Stream))
	})
	return out, nil
}

// parseLogName parses "rank-<N>.out" and "rank-<N>.err".
func parseLogName(name string) (rank int, stream string, ok bool) {
	rest, found := strings.CutPrefix(name, "rank-")
	if !found {
		return 0, "", false
	}
	num, ext, found := strings.Cut(rest, ".")
	if !found {
		return 0, "", false
	}
	switch ext {
	case "out":
		stream = "stdout"
	case "err":
		stream = "stderr"
	default:
		return 0, "", false
	}
	rank, err := strconv.Atoi(num)
	if err != nil || rank < 0 {
		return 0, "", false
	}
	return rank, stream, true
}

// Close refuses further Starts and waits, until ctx is done, for the
// running tasks to end and their exits to be recorded. It does not stop
// them: call StopAll first for a graceful shutdown. If ctx ends first the
// error names the tasks still running; their supervision continues until
// they exit or the agent process ends (which kills their leaders, see the
// package doc), and a restarted agent records them as lost.
func (e *Executor) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	for {
		e.mu.Lock()
		var t *task
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
	e.wg.Wait() // only rank goroutines that already delivered their exit remain
	return nil
}
