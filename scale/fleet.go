package scale

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// Spawn runs one agent in this process with the command line a `shoal
// agent` process would get (args, "agent" first), logging to log, until
// ctx ends. Once the agent is up (its listeners open) it calls started
// with what crashes it: stops it as kill -9 would, as far as the rest of
// the cluster can tell (node.Agent.Crash).
type Spawn func(ctx context.Context, args []string, log io.Writer, started func(crash func())) error

// fleet is the agents of a run, as processes or in this process.
type fleet interface {
	agents() []*localcluster.Agent // their names, ports and data dirs
	running(i int) bool
	// pid is the process agent i runs in (in-process: this one, for all).
	pid(i int) int
	// shared reports whether agent i shares its process (this one) with
	// other agents: its CPU and memory are not its own to measure.
	shared(i int) bool
	kill(i int) error // kill -9, or Crash in-process
	stop()
}

// procFleet is agents as `shoal agent` processes.
type procFleet struct{ c *localcluster.Cluster }

func startProcs(ctx context.Context, o Options) (*procFleet, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{
		Binary: o.Binary, Dir: o.Dir, Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, LeafSize: o.LeafSize,
		ExtraArgs: o.ExtraArgs, Insecure: o.Insecure,
	})
	if err != nil {
		return nil, err
	}
	return &procFleet{c: c}, nil
}

func (f *procFleet) agents() []*localcluster.Agent { return f.c.Agents }
func (f *procFleet) running(i int) bool            { return f.c.Agents[i].Running() }
func (f *procFleet) pid(i int) int                 { return f.c.Agents[i].Pid() }
func (f *procFleet) kill(i int) error              { return f.c.Kill(i) }
func (f *procFleet) shared(int) bool               { return false }
func (f *procFleet) stop()                         { stopProcs(f.c) }

// stopProcs stops c's agent processes, and whatever each left in its
// process group.
func stopProcs(c *localcluster.Cluster) {
	var pids []int
	for _, a := range c.Agents {
		pids = append(pids, a.Pid())
	}
	c.Stop(10 * time.Second)
	// Each agent leads a process group of its own: whatever it left
	// there (supervisors, ranks) goes too.
	for _, pid := range pids {
		if pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// inprocFleet is agents run by Spawn in this process, each with its own
// ports, data dir, memberlist and raft transport.
type inprocFleet struct {
	c      *localcluster.Cluster // the layout only: none of its processes run
	cancel []context.CancelFunc
	done   []chan struct{} // closed when the agent's Spawn returned
	mu     sync.Mutex
	crash  []func() // set once started
	killed []bool
	errs   []error // what each Spawn returned
	logs   []*os.File
}

// spawnParallel is how many agents start at once in-process.
const spawnParallel = 16

func startInProcess(ctx context.Context, o Options) (*inprocFleet, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{
		Dir: o.Dir, Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, LeafSize: o.LeafSize,
		ExtraArgs: o.ExtraArgs, Insecure: o.Insecure, Prepare: true,
	})
	if err != nil {
		return nil, err
	}
	return spawnFleet(ctx, o, c, 0)
}

// spawnFleet runs c's agents from first on in this process (those before
// are not its to run).
func spawnFleet(ctx context.Context, o Options, c *localcluster.Cluster, first int) (*inprocFleet, error) {
	n := len(c.Agents)
	f := &inprocFleet{c: c, cancel: make([]context.CancelFunc, n), done: make([]chan struct{}, n),
		crash: make([]func(), n), killed: make([]bool, n), errs: make([]error, n), logs: make([]*os.File, n)}
	sem := make(chan struct{}, spawnParallel)
	for i, a := range c.Agents {
		if i < first {
			continue
		}
		if err := os.MkdirAll(a.DataDir, 0o755); err != nil {
			f.stop()
			return nil, fmt.Errorf("agent %s: %w", a.Name, err)
		}
		logf, err := os.OpenFile(a.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			f.stop()
			return nil, fmt.Errorf("agent %s: log file: %w", a.Name, err)
		}
		f.logs[i] = logf
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			f.stop()
			return nil, ctx.Err()
		}
		if i > first && o.StartEvery > 0 {
			select {
			case <-time.After(o.StartEvery):
			case <-ctx.Done():
				<-sem
				f.stop()
				return nil, ctx.Err()
			}
		}
		actx, cancel := context.WithCancel(context.Background())
		f.cancel[i], f.done[i] = cancel, make(chan struct{})
		var release sync.Once
		// Owned by f: stop cancels it and waits for done.
		go func() {
			defer close(f.done[i])
			defer release.Do(func() { <-sem })
			// Every goroutine the agent starts carries its name: a CPU
			// profile of the process splits by agent (pprof -tags).
			pprof.Do(actx, pprof.Labels("agent", a.Name), func(actx context.Context) {
				err := o.Spawn(actx, a.Args, logf, func(crash func()) {
					f.mu.Lock()
					f.crash[i] = crash
					f.mu.Unlock()
					release.Do(func() { <-sem })
				})
				f.mu.Lock()
				f.errs[i] = err
				f.mu.Unlock()
				if err != nil {
					fmt.Fprintf(logf, "agent %s ended: %v\n", a.Name, err)
				}
			})
		}()
	}
	return f, nil
}

func (f *inprocFleet) agents() []*localcluster.Agent { return f.c.Agents }
func (f *inprocFleet) pid(int) int                   { return os.Getpid() }
func (f *inprocFleet) shared(int) bool               { return true }

func (f *inprocFleet) running(i int) bool {
	f.mu.Lock()
	up := f.crash[i] != nil && !f.killed[i]
	f.mu.Unlock()
	if !up || f.done[i] == nil {
		return false
	}
	select {
	case <-f.done[i]:
		return false
	default:
		return true
	}
}

func (f *inprocFleet) kill(i int) error {
	f.mu.Lock()
	crash := f.crash[i]
	f.killed[i] = true
	f.mu.Unlock()
	if crash == nil {
		return fmt.Errorf("agent %s: not started", f.c.Agents[i].Name)
	}
	crash()
	return nil
}

// stop ends every agent (a graceful stop, as SIGTERM) and waits, bounded,
// for them all.
func (f *inprocFleet) stop() {
	for _, cancel := range f.cancel {
		if cancel != nil {
			cancel()
		}
	}
	deadline := time.After(2 * time.Minute)
	for i, d := range f.done {
		if d == nil {
			continue
		}
		select {
		case <-d:
		case <-deadline:
			fmt.Fprintf(os.Stderr, "scale: agent %s still stopping after 2 minutes; leaving it\n", f.c.Agents[i].Name)
			return
		}
	}
	for _, l := range f.logs {
		if l != nil {
			l.Close()
		}
	}
}

// hybridFleet is the first servers agents as `shoal agent` processes at
// normal priority, and every other one in this process, which runs at a
// low CPU priority (Options.WorkerNice) with --raft-eligible=false: the
// servers' raft heartbeats never wait behind the workers' goroutines, and
// no worker is ever given a raft seat (where it would be starved).
type hybridFleet struct {
	c       *localcluster.Cluster
	servers int
	in      *inprocFleet // agents from servers on
}

func startHybrid(ctx context.Context, o Options) (*hybridFleet, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{
		Binary: o.Binary, Dir: o.Dir, Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, LeafSize: o.LeafSize,
		ExtraArgs: o.ExtraArgs, Insecure: o.Insecure, Prepare: true,
	})
	if err != nil {
		return nil, err
	}
	for _, a := range c.Agents[o.Servers:] {
		a.Args = append(a.Args, "--raft-eligible=false")
	}
	f := &hybridFleet{c: c, servers: o.Servers}
	for i := range o.Servers {
		if err := c.StartAgent(i); err != nil {
			f.stop()
			return nil, err
		}
	}
	// The servers started at this process's priority; from here on it,
	// and whatever it starts (the workers' supervisors and ranks), runs
	// at the workers'.
	if err := lowerPriority(o.WorkerNice); err != nil {
		f.stop()
		return nil, err
	}
	if o.WorkerGCPercent > 0 {
		debug.SetGCPercent(o.WorkerGCPercent)
	}
	if f.in, err = spawnFleet(ctx, o, c, o.Servers); err != nil {
		f.stop()
		return nil, err
	}
	return f, nil
}

func (f *hybridFleet) agents() []*localcluster.Agent { return f.c.Agents }
func (f *hybridFleet) shared(i int) bool             { return i >= f.servers }

func (f *hybridFleet) running(i int) bool {
	if f.shared(i) {
		return f.in.running(i)
	}
	return f.c.Agents[i].Running()
}

func (f *hybridFleet) pid(i int) int {
	if f.shared(i) {
		return os.Getpid()
	}
	return f.c.Agents[i].Pid()
}

func (f *hybridFleet) kill(i int) error {
	if f.shared(i) {
		return f.in.kill(i)
	}
	return f.c.Kill(i)
}

// stop ends the workers first (they would otherwise spend the servers'
// last seconds looking for a leader), then the servers.
func (f *hybridFleet) stop() {
	if f.in != nil {
		f.in.stop()
	}
	stopProcs(f.c) // the workers are no processes of c's: passed over
}
