package sim

import (
	"slices"
	"time"
)

// Summary is a replay's metrics, as `shoal sim --json` prints them. Times
// are seconds. Waits and JCTs are over the jobs that ran.
type Summary struct {
	Policy      string `json:"policy"`
	Nodes       int    `json:"nodes"`
	GPUsPerNode int    `json:"gpus_per_node"`
	LeafSize    int    `json:"leaf_size"`
	// Jobs counts every trace job, Unplaceable those that could never fit.
	Jobs        int `json:"jobs"`
	Unplaceable int `json:"unplaceable"`
	// Wait is start minus submit; percentiles are nearest-rank.
	AvgWait float64 `json:"avg_wait_s"`
	P50Wait float64 `json:"p50_wait_s"`
	P95Wait float64 `json:"p95_wait_s"`
	P99Wait float64 `json:"p99_wait_s"`
	// MaxWait is the longest wait.
	MaxWait float64 `json:"max_wait_s"`
	// AvgBSld and P99BSld are the mean and nearest-rank p99 of the
	// bounded slowdown, (wait + run) / max(run, BSldBound): how many times
	// its run time a job spent in the system, short jobs counted as
	// BSldBound long (Feitelson's bounded slowdown), so that a fair
	// policy is one where no job's wait is long against its own run.
	AvgBSld float64 `json:"avg_bsld"`
	P99BSld float64 `json:"p99_bsld"`
	// AvgJCT is the mean of end minus submit.
	AvgJCT float64 `json:"avg_jct_s"`
	// Makespan is the last end minus the first submit.
	Makespan float64 `json:"makespan_s"`
	// GPUUtil is GPU-seconds held / (total GPUs x makespan).
	GPUUtil float64 `json:"gpu_util"`
	// MultiNodeJobs counts jobs that ran on more than one node;
	// OneLeafFrac is the fraction of them under one leaf switch (0 when
	// there are none), MeanLeavesMulti the mean number of leaves of the
	// others (0 when there are none).
	MultiNodeJobs   int     `json:"multi_node_jobs"`
	OneLeafFrac     float64 `json:"one_leaf_frac"`
	MeanLeavesMulti float64 `json:"mean_leaves_multi"`
	// Passes counts scheduling passes; DecisionsPerSec is jobs placed per
	// second of the wall time given to Summarize (0 when it is 0).
	Passes          int     `json:"passes"`
	WallSeconds     float64 `json:"wall_s"`
	DecisionsPerSec float64 `json:"decisions_per_s"`
}

// BSldBound is the run time below which bounded slowdown counts a job
// as running this long (10 s, as in the literature).
const BSldBound = 10

// Summarize computes r's metrics; wall is the real time Replay took, for
// DecisionsPerSec (Replay never reads the clock itself).
func Summarize(r *Result, wall time.Duration) Summary {
	c := r.Options.Cluster
	s := Summary{Policy: string(r.Options.Policy), Nodes: c.Nodes, GPUsPerNode: c.GPUsPerNode, LeafSize: c.LeafSize,
		Jobs: len(r.Jobs), Passes: r.Passes, WallSeconds: wall.Seconds()}
	var (
		waits              []int64
		slowdowns          []float64
		sumWait, sumJCT    float64
		gpuSeconds         float64
		first, last        int64
		oneLeaf, multiSpan int
		spanLeaves         int
	)
	for i := range r.Jobs {
		o := &r.Jobs[i]
		if !o.Ran() {
			s.Unplaceable++
			continue
		}
		if len(waits) == 0 || o.Job.Submit < first {
			first = o.Job.Submit
		}
		last = max(last, o.End)
		w := o.Start - o.Job.Submit
		waits = append(waits, w)
		sumWait += float64(w)
		sumJCT += float64(o.End - o.Job.Submit)
		slowdowns = append(slowdowns, float64(w+o.End-o.Start)/float64(max(o.End-o.Start, BSldBound)))
		gpuSeconds += float64(gpusHeld(o)) * float64(o.End-o.Start)
		if len(o.Nodes) > 1 {
			s.MultiNodeJobs++
			if o.Leaves == 1 {
				oneLeaf++
			} else {
				multiSpan++
				spanLeaves += o.Leaves
			}
		}
	}
	if n := len(waits); n > 0 {
		slices.Sort(waits)
		s.AvgWait, s.AvgJCT = sumWait/float64(n), sumJCT/float64(n)
		s.P50Wait, s.P95Wait, s.P99Wait = nearestRank(waits, 50), nearestRank(waits, 95), nearestRank(waits, 99)
		s.MaxWait = float64(waits[n-1])
		sum := 0.0
		for _, x := range slowdowns { // in trace order: deterministic
			sum += x
		}
		s.AvgBSld = sum / float64(n)
		slices.Sort(slowdowns)
		s.P99BSld = nearestRank(slowdowns, 99)
		s.Makespan = float64(last - first)
	}
	if s.Makespan > 0 {
		s.GPUUtil = gpuSeconds / (float64(c.TotalGPUs()) * s.Makespan)
	}
	if s.MultiNodeJobs > 0 {
		s.OneLeafFrac = float64(oneLeaf) / float64(s.MultiNodeJobs)
	}
	if multiSpan > 0 {
		s.MeanLeavesMulti = float64(spanLeaves) / float64(multiSpan)
	}
	if wall > 0 {
		s.DecisionsPerSec = float64(len(waits)) / wall.Seconds()
	}
	return s
}

// nearestRank is the p-th percentile of sorted xs by the nearest-rank
// method: the smallest value with at least p% of xs at or below it.
func nearestRank[T int64 | float64](sorted []T, p int) float64 {
	k := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return float64(sorted[max(k, 1)-1])
}
