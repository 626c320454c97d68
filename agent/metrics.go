package agent

import (
	"context"
	"time"

	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/metrics"
)

// raftConfigTimeout bounds the read of raft's configuration at a scrape;
// past it the voter gauges are left out of that scrape.
const raftConfigTimeout = time.Second

// newMetrics returns the agent's /metrics, read from the agent at each
// scrape (readMetrics).
func (a *Agent) newMetrics() *metrics.Metrics {
	return metrics.New(a.readMetrics)
}

// readMetrics gathers a metrics.Reading; metrics.Samples decides what it
// exports.
func (a *Agent) readMetrics() metrics.Reading {
	c := a.core
	st := c.raft.Stats()
	r := metrics.Reading{
		Now:               time.Now(),
		Node:              c.cfg.Name,
		Leader:            c.raft.IsLeader(),
		Members:           c.gossip.Members(),
		ProbeFailures:     c.gossip.ProbeFailures(),
		HealthScore:       c.gossip.HealthScore(),
		TasksRunning:      len(a.work.exec.Running()),
		Placements:        a.lead.placements.Load(),
		Preemptions:       a.lead.preemptions.Load(),
		Fencings:          a.work.fencing.Load(),
		LeaseRenewals:     a.lead.renewals.Load(),
		RaftLeaderChanges: st.LeaderChanges,
		Raft: metrics.RaftReading{
			Term: st.Term, LastIndex: st.LastIndex, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
		},
	}
	if c.Readable() == nil {
		r.View = c.state.View()
	}
	r.GPU = a.work.gpuSample.Load()
	if l := a.work.lease.Load(); l != nil {
		r.LastRenew, r.LeaseTTL = l.Renewed, l.TTL
	}
	ctx, cancel := context.WithTimeout(context.Background(), raftConfigTimeout)
	defer cancel()
	if servers, err := c.raft.Servers(ctx); err == nil {
		r.RaftConfigReadable = true
		for _, s := range servers {
			if s.Suffrage == consensus.Voter {
				r.Raft.Voters++
			} else {
				r.Raft.Nonvoters++
			}
		}
	}
	return r
}
