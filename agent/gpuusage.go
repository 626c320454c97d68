package agent

import (
	"context"
	"maps"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/metrics"
	"github.com/shoal-sched/shoal/worker"
)

// gpuSampler is the GPU sampling loop (worker.GPUSampler) over this
// agent's sampler, replica and leader.
func (w *workerSide) gpuSampler() worker.GPUSampler {
	return worker.GPUSampler{GPUs: agentGPUs{w}, Usage: &w.gpuUsage, Clock: clock.Wall{}, Log: w.log,
		Interval: w.cfg.GPUSampleInterval, ReportInterval: w.cfg.GPUReportInterval}
}

// agentGPUs is worker.GPUs over Config.GPUSampler; each sample is also
// kept for /metrics (readMetrics).
type agentGPUs struct{ w *workerSide }

func gpuRun(ref metrics.JobRef) worker.GPURun {
	return worker.GPURun{Job: ref.ID, Incarnation: ref.Incarnation}
}

// Sample reads the GPUs with the jobs that hold them in the replica.
func (g agentGPUs) Sample() ([]worker.GPURun, map[worker.GPURun]worker.GPUShare, worker.LiveJobs, error) {
	a := g.w
	v := a.state.View()
	holders := metrics.GPUHolders(v.Jobs(), a.cfg.Name)
	indices := slices.Sorted(maps.Keys(holders))
	held := make([]worker.GPURun, 0, len(indices))
	for _, i := range indices {
		held = append(held, gpuRun(holders[i]))
	}
	samples, err := a.cfg.GPUSampler.Sample(indices)
	if err != nil {
		a.gpuSample.Store(nil)
		return held, nil, v, err
	}
	r := &metrics.GPUReading{Samples: samples, Holders: holders}
	a.gpuSample.Store(r)
	shares := map[worker.GPURun]worker.GPUShare{}
	for ref, jg := range metrics.ByJob(*r) {
		shares[gpuRun(ref)] = worker.GPUShare(jg)
	}
	return held, shares, v, nil
}

// ReportGPUUsage records run's usage so far with the leader.
func (g agentGPUs) ReportGPUUsage(ctx context.Context, run worker.GPURun, u cluster.GPUUsage) error {
	ev := taskEvent{Kind: leader.ReportGPUUsage, Job: run.Job, Incarnation: run.Incarnation, Node: g.w.cfg.Name, GPUUsage: &u}
	if j, ok := g.w.state.View().Job(run.Job); ok && j.Incarnation == run.Incarnation {
		if i := j.Alloc.Find(ev.Node); i >= 0 {
			ev.Join = j.Alloc.Nodes[i].Join // the node's share it runs now (an elastic job took it back)
		}
	}
	return g.w.sendTaskEvent(ctx, ev)
}

func (g agentGPUs) Close() error { return g.w.cfg.GPUSampler.Close() }
