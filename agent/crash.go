package agent

import (
	"errors"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/fsm"
)

// errCrashed ends Run after Crash.
var errCrashed = errors.New("crashed (Crash)")

// crash is an agent's stop as kill -9 would look from the network.
type crash struct {
	once sync.Once
	done chan struct{} // closed by Crash
	// raftDown is closed once raft has shut down after Crash.
	raftDown chan struct{}
}

// Crash stops the agent as kill -9 of its process would, as far as the
// rest of the cluster can tell: its listeners close, gossip stops without
// a goodbye (the others declare it failed), raft stops without handing
// leadership over; Run then returns errCrashed without announcing
// anything. For agents that share a process (the scale harness's
// in-process mode), where no signal can kill one alone. Its ranks are
// stopped and the executor closed, as their supervisors' lease watchdogs
// would fence them. Safe to call more than once and concurrently with Run.
func (a *Agent) Crash() {
	c := a.core
	a.crash.once.Do(func() {
		_ = a.server.Close()
		_ = c.gossip.Shutdown()
		// Raft stops talking at once, but its shutdown waits for its
		// goroutines, which may wait on the agent's loops: those stop
		// once done is closed. Owned by shutdownCrashed, which waits.
		a.crash.raftDown = make(chan struct{})
		go func() {
			defer close(a.crash.raftDown)
			if err := c.raft.Shutdown(); err != nil {
				c.log.Warn("raft shutdown (crash)", "err", err)
			}
		}()
		close(a.crash.done)
	})
}

// crashed reports whether Crash was called.
func (a *Agent) crashed() bool {
	select {
	case <-a.crash.done:
		return true
	default:
		return false
	}
}

// shutdownCrashed is shutdown after Crash: the network side is gone
// already; the loops end, the ranks stop, nothing is announced.
func (a *Agent) shutdownCrashed(wg *sync.WaitGroup) {
	c := a.core
	c.log.Info("agent crashed: stopping without a goodbye")
	wg.Wait()
	<-a.crash.raftDown
	a.work.exec.StopAll(fsm.CauseFenced)
	a.closeTasks(c.cfg.KillGrace + 2*time.Second)
	a.stopped()
}
