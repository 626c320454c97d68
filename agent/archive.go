package agent

import (
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/worker"
)

// archiver is the leader's archive loop (leader.Archiver) over this agent.
func (l *leaderSide) archiver() leader.Archiver {
	return leader.Archiver{State: l.state, Propose: l, Clock: clock.Wall{}, Log: l.log, Gate: l.checkProtocolEvery}
}

// cleaner is the output cleanup loop (worker.Cleaner) over this agent's
// replica and executor.
func (w *workerSide) cleaner() worker.Cleaner {
	return worker.Cleaner{Replica: retainedReplica{w.core}, Outputs: w.exec, Clock: clock.Wall{}, Log: w.log}
}

// retainedReplica is worker.Replica over the FSM, or on a worker over
// the view its server sends (follow.go), which holds only its jobs and
// no archive.
type retainedReplica struct{ c *core }

func (r retainedReplica) Retained() worker.Retained {
	a := r.c
	if a.Outside() {
		if v := a.remote.Current(); v != nil {
			return worker.Retained{Jobs: v, Retention: v.Policy().Retention(), Trusted: true, Partial: true, Changed: v.Changed()}
		}
		v := a.state.View() // nothing followed yet: wait
		return worker.Retained{Jobs: v, Retention: v.Policy().Retention(), Changed: v.Changed()}
	}
	v := a.state.View()
	return worker.Retained{Jobs: v, Retention: v.Policy().Retention(),
		Trusted: a.caughtUp() && a.state.Diverged() == nil, Changed: v.Changed()}
}
