package worker

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// GPURun is one run (incarnation) of a job holding GPUs on this node.
type GPURun struct {
	Job         cluster.JobID
	Incarnation uint64
}

// GPUShare is one run's share of a GPU sample: each of its GPUs'
// utilization and their memory together.
type GPUShare struct {
	Utils    []float64
	MemBytes uint64
}

// LiveJobs is the replica's live jobs (an fsm.View).
type LiveJobs interface {
	Job(id cluster.JobID) (*cluster.Job, bool)
}

// GPUUsage is what each run's GPUs on this node did so far: added to by
// the sampling loop (GPUSampler), read by the exit reports and the
// periodic reports (the summaries) and by the API (the series over time,
// until the job leaves the live state). The zero value is empty.
type GPUUsage struct {
	mu     sync.Mutex
	m      map[GPURun]cluster.GPUUsage
	series map[GPURun]cluster.GPUSeries
}

// Add counts one sample, taken at now, for every run holding a GPU in it.
func (t *GPUUsage) Add(shares map[GPURun]GPUShare, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[GPURun]cluster.GPUUsage{}
		t.series = map[GPURun]cluster.GPUSeries{}
	}
	for run, s := range shares {
		t.m[run] = t.m[run].Add(s.Utils, s.MemBytes)
		t.series[run] = t.series[run].Add(now, s.Utils, s.MemBytes)
	}
}

// SeriesOf returns the series of job's runs sampled here, by incarnation.
func (t *GPUUsage) SeriesOf(job cluster.JobID) map[uint64]cluster.GPUSeries {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[uint64]cluster.GPUSeries{}
	for run, s := range t.series {
		if run.Job == job {
			out[run.Incarnation] = s // Add never changes a series' points in place
		}
	}
	return out
}

// Get returns run's usage so far, nil when never sampled.
func (t *GPUUsage) Get(run GPURun) *cluster.GPUUsage {
	t.mu.Lock()
	defer t.mu.Unlock()
	u, ok := t.m[run]
	if !ok {
		return nil
	}
	return &u
}

// Forget drops run's summary once its exit (with the usage) was
// reported; its series stays until Prune.
func (t *GPUUsage) Forget(run GPURun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, run)
}

// Prune drops runs the replica no longer has live (archived jobs, older
// incarnations): their exit went unreported with usage (a step-only
// node, a restart), and nothing will ask for it.
func (t *GPUUsage) Prune(jobs LiveJobs) {
	t.mu.Lock()
	defer t.mu.Unlock()
	gone := func(run GPURun) bool {
		j, ok := jobs.Job(run.Job)
		return !ok || j.Incarnation != run.Incarnation
	}
	maps.DeleteFunc(t.m, func(run GPURun, _ cluster.GPUUsage) bool { return gone(run) })
	maps.DeleteFunc(t.series, func(run GPURun, _ cluster.GPUSeries) bool { return gone(run) })
}

// GPUReportDue is the sampling loop's decision to report the usage so
// far of the runs holding GPUs: every period since the last report.
func GPUReportDue(last, now time.Time, every time.Duration) bool {
	return now.Sub(last) >= every
}

// GPUs is this node's GPUs as the sampling loop sees them.
type GPUs interface {
	// Sample reads the GPUs with the runs that hold them (from the
	// replica, which it returns), and returns each run's share; err when
	// the GPUs could not be read (the runs are still returned).
	Sample() (held []GPURun, shares map[GPURun]GPUShare, jobs LiveJobs, err error)
	// ReportGPUUsage sends run's usage so far to the leader.
	ReportGPUUsage(ctx context.Context, run GPURun, u cluster.GPUUsage) error
	// Close releases the GPUs' sampler.
	Close() error
}

// GPUSampler is the worker's GPU sampling loop: every Interval it reads
// the GPUs, counts each run's share in Usage and drops the runs no longer
// live; every ReportInterval (GPUReportDue) it reports the usage so far
// of the runs holding GPUs, best effort (the next period, or the exit,
// reports again). It closes the sampler when it ends.
type GPUSampler struct {
	GPUs  GPUs
	Usage *GPUUsage
	Clock LeaseClock
	Log   *slog.Logger
	// Interval is how often the GPUs are sampled, ReportInterval how
	// often the usage is reported.
	Interval, ReportInterval time.Duration
}

// Run samples until ctx ends.
func (s GPUSampler) Run(ctx context.Context) {
	defer func() {
		if err := s.GPUs.Close(); err != nil {
			s.Log.Warn("close GPU sampler", "err", err)
		}
	}()
	tick, stop := s.Clock.NewTicker(s.Interval)
	defer stop()
	failing := false
	lastReport := s.Clock.Now()
	for {
		failing = s.Round(ctx, failing, &lastReport)
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// Round samples once; failing says whether the previous round could not
// read the GPUs, and Round returns whether this one could not. It
// reports when GPUReportDue since lastReport, which it then moves.
func (s GPUSampler) Round(ctx context.Context, failing bool, lastReport *time.Time) bool {
	held, shares, jobs, err := s.GPUs.Sample()
	switch {
	case err != nil && !failing:
		s.Log.Warn("sample GPUs: GPU metrics stop until it works again", "err", err)
	case err == nil:
		if failing {
			s.Log.Info("sampling GPUs again")
		}
		s.Usage.Add(shares, s.Clock.Now())
	}
	s.Usage.Prune(jobs)
	if now := s.Clock.Now(); GPUReportDue(*lastReport, now, s.ReportInterval) {
		*lastReport = now
		s.report(ctx, held)
	}
	return err != nil
}

// report sends the usage so far of the runs in held, stopping at the
// first failure.
func (s GPUSampler) report(ctx context.Context, held []GPURun) {
	seen := map[GPURun]bool{}
	for _, run := range held {
		if seen[run] {
			continue
		}
		seen[run] = true
		u := s.Usage.Get(run)
		if u == nil {
			continue
		}
		if err := s.GPUs.ReportGPUUsage(ctx, run, *u); err != nil {
			s.Log.Debug("report GPU usage", "job", uint64(run.Job), "err", err)
			return
		}
	}
}
