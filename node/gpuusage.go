package node

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/metrics"
)

// gpuKey is one run (incarnation) of a job.
type gpuKey struct {
	job cluster.JobID
	inc uint64
}

// gpuUsageTable is what each job's GPUs on this node did so far: added to
// by gpuSampleLoop, read by the exit reports and the periodic reports
// (the summaries, m) and by the API (the series over time, until the job
// leaves the live state).
type gpuUsageTable struct {
	mu     sync.Mutex
	m      map[gpuKey]cluster.GPUUsage
	series map[gpuKey]cluster.GPUSeries
}

// add counts one sample, taken at now, for every job holding a GPU in it.
func (t *gpuUsageTable) add(r *metrics.GPUReading, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[gpuKey]cluster.GPUUsage{}
		t.series = map[gpuKey]cluster.GPUSeries{}
	}
	for ref, jg := range metrics.ByJob(*r) {
		k := gpuKey{ref.ID, ref.Incarnation}
		t.m[k] = t.m[k].Add(jg.Utils, jg.MemBytes)
		t.series[k] = t.series[k].Add(now, jg.Utils, jg.MemBytes)
	}
}

// seriesOf returns the series of job's runs sampled here, by incarnation.
func (t *gpuUsageTable) seriesOf(job cluster.JobID) map[uint64]cluster.GPUSeries {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[uint64]cluster.GPUSeries{}
	for k, s := range t.series {
		if k.job == job {
			out[k.inc] = s // Add never changes a series' points in place
		}
	}
	return out
}

// get returns k's usage so far, nil when never sampled.
func (t *gpuUsageTable) get(k gpuKey) *cluster.GPUUsage {
	t.mu.Lock()
	defer t.mu.Unlock()
	u, ok := t.m[k]
	if !ok {
		return nil
	}
	return &u
}

// forget drops k's summary once its exit (with the usage) was reported;
// its series stays until prune.
func (t *gpuUsageTable) forget(k gpuKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, k)
}

// prune drops runs the replica no longer has live (archived jobs, older
// incarnations): their exit went unreported with usage (a step-only
// node, a restart), and nothing will ask for it.
func (t *gpuUsageTable) prune(v *fsm.View) {
	t.mu.Lock()
	defer t.mu.Unlock()
	gone := func(k gpuKey) bool {
		j, ok := v.Job(k.job)
		return !ok || j.Incarnation != k.inc
	}
	maps.DeleteFunc(t.m, func(k gpuKey, _ cluster.GPUUsage) bool { return gone(k) })
	maps.DeleteFunc(t.series, func(k gpuKey, _ cluster.GPUSeries) bool { return gone(k) })
}

// reportGPUUsage records the usage so far of the jobs holding GPUs here
// (best effort: the next period, or the exit, reports again).
func (a *Agent) reportGPUUsage(ctx context.Context, holders map[int]metrics.JobRef) {
	seen := map[gpuKey]bool{}
	for _, ref := range holders {
		k := gpuKey{ref.ID, ref.Incarnation}
		if seen[k] {
			continue
		}
		seen[k] = true
		u := a.gpuUsage.get(k)
		if u == nil {
			continue
		}
		ev := taskEvent{Kind: "gpu-usage", Job: k.job, Incarnation: k.inc, Node: a.cfg.Name, GPUUsage: u}
		if err := a.sendTaskEvent(ctx, ev); err != nil {
			a.log.Debug("report GPU usage", "job", uint64(k.job), "err", err)
			return
		}
	}
}
