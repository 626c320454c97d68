package node

import (
	"context"
	"maps"
	"slices"
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
	st := a.raft.Stats()
	r := metrics.Reading{
		Now:               time.Now(),
		Node:              a.cfg.Name,
		Leader:            a.raft.IsLeader(),
		Members:           a.gossip.Members(),
		ProbeFailures:     a.gossip.ProbeFailures(),
		HealthScore:       a.gossip.HealthScore(),
		TasksRunning:      len(a.exec.Running()),
		Placements:        a.placements.Load(),
		Preemptions:       a.preemptions.Load(),
		Fencings:          a.fencing.Load(),
		RaftLeaderChanges: st.LeaderChanges,
		Raft: metrics.RaftReading{
			Term: st.Term, LastIndex: st.LastIndex, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
		},
	}
	if a.readable() == nil {
		r.View = a.state.View()
	}
	r.GPU = a.gpuSample.Load()
	if n := a.lastRenew.Load(); n != 0 {
		r.LastRenew = time.Unix(0, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), raftConfigTimeout)
	defer cancel()
	if servers, err := a.raft.Servers(ctx); err == nil {
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

// gpuSampleLoop samples this node's GPUs every GPUSampleInterval with the
// jobs that hold them (from the replica), for readMetrics, and closes the
// sampler when ctx ends.
func (a *Agent) gpuSampleLoop(ctx context.Context) {
	defer func() {
		if err := a.cfg.GPUSampler.Close(); err != nil {
			a.log.Warn("close GPU sampler", "err", err)
		}
	}()
	t := time.NewTicker(a.cfg.GPUSampleInterval)
	defer t.Stop()
	failing := false
	lastReport := time.Now()
	for {
		v := a.state.View()
		holders := metrics.GPUHolders(v.Jobs(), a.cfg.Name)
		held := slices.Sorted(maps.Keys(holders))
		samples, err := a.cfg.GPUSampler.Sample(held)
		switch {
		case err != nil && !failing:
			a.log.Warn("sample GPUs: GPU metrics stop until it works again", "err", err)
			a.gpuSample.Store(nil)
		case err == nil:
			if failing {
				a.log.Info("sampling GPUs again")
			}
			r := &metrics.GPUReading{Samples: samples, Holders: holders}
			a.gpuSample.Store(r)
			a.gpuUsage.add(r, time.Now())
		}
		a.gpuUsage.prune(v)
		if time.Since(lastReport) >= a.cfg.GPUReportInterval {
			lastReport = time.Now()
			a.reportGPUUsage(ctx, holders)
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
