package node

import (
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/worker"
)

// archiver is the leader's archive loop (leader.Archiver) over this agent.
func (a *Agent) archiver() leader.Archiver {
	return leader.Archiver{State: a.state, Propose: agentLeader{a}, Clock: wallClock{}, Log: a.log}
}

// cleaner is the output cleanup loop (worker.Cleaner) over this agent's
// replica and executor.
func (a *Agent) cleaner() worker.Cleaner {
	return worker.Cleaner{Replica: retainedReplica{a}, Outputs: a.exec, Clock: wallClock{}, Log: a.log}
}

// retainedReplica is worker.Replica over the FSM.
type retainedReplica struct{ a *Agent }

func (r retainedReplica) Retained() worker.Retained {
	v := r.a.state.View()
	return worker.Retained{Jobs: v, Retention: v.Policy().Retention(),
		Trusted: r.a.caughtUp() && r.a.state.Diverged() == nil, Changed: v.Changed()}
}
