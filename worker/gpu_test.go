package worker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// liveJobs is LiveJobs over a map of job to its live incarnation.
type liveJobs map[cluster.JobID]uint64

func (l liveJobs) Job(id cluster.JobID) (*cluster.Job, bool) {
	inc, ok := l[id]
	if !ok {
		return nil, false
	}
	return &cluster.Job{ID: id, Incarnation: inc}, true
}

// TestGPUUsage: the table sums each run's samples and keeps its series;
// Forget drops the summary but not the series; Prune drops both for runs
// no longer live (archived, or an older incarnation).
func TestGPUUsage(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a1, a2, b1 := GPURun{1, 1}, GPURun{1, 2}, GPURun{2, 1}
	var u GPUUsage
	if u.Get(a1) != nil || len(u.SeriesOf(1)) != 0 {
		t.Fatalf("an empty table has usage")
	}
	u.Add(map[GPURun]GPUShare{a1: {Utils: []float64{0.5, 1}, MemBytes: 10}, b1: {Utils: []float64{0.2}, MemBytes: 5}}, t0)
	u.Add(map[GPURun]GPUShare{a1: {Utils: []float64{0, 0.5}, MemBytes: 30}, a2: {Utils: []float64{1}, MemBytes: 1}}, t0.Add(time.Minute))
	got := u.Get(a1)
	if got == nil || got.Samples != 2 || got.MeanUtil != 0.5 || got.PeakUtil != 1 || got.PeakMemBytes != 30 {
		t.Errorf("usage of job 1's first run = %+v; want 2 samples, mean 0.5, peak 1, peak memory 30", got)
	}
	if s := u.SeriesOf(1); len(s) != 2 || len(s[1].Points) != 2 || len(s[2].Points) != 1 {
		t.Errorf("series of job 1 = %+v; want 2 points for run 1, 1 for run 2", s)
	}
	u.Forget(a1)
	if u.Get(a1) != nil || len(u.SeriesOf(1)[1].Points) != 2 {
		t.Errorf("Forget dropped the series or kept the summary")
	}
	u.Prune(liveJobs{1: 2}) // job 2 archived, job 1 in its second run
	if u.Get(b1) != nil || len(u.SeriesOf(2)) != 0 {
		t.Errorf("Prune kept job 2, archived")
	}
	if s := u.SeriesOf(1); len(s) != 1 || u.Get(a2) == nil {
		t.Errorf("Prune left job 1's series %+v and usage %v; want only its live run", s, u.Get(a2))
	}
}

func TestGPUReportDue(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		since time.Duration
		want  bool
	}{
		{0, false}, {4 * time.Minute, false}, {5 * time.Minute, true}, {time.Hour, true},
	} {
		if got := GPUReportDue(t0, t0.Add(tt.since), 5*time.Minute); got != tt.want {
			t.Errorf("GPUReportDue %s after the last = %t; want %t", tt.since, got, tt.want)
		}
	}
}

// fakeGPUs samples what the test sets, and records reports; the report
// of run failFor fails.
type fakeGPUs struct {
	held    []GPURun
	shares  map[GPURun]GPUShare
	jobs    liveJobs
	err     error
	failFor GPURun
	reports []GPURun
	closed  int
}

func (g *fakeGPUs) Sample() ([]GPURun, map[GPURun]GPUShare, LiveJobs, error) {
	if g.err != nil {
		return g.held, nil, g.jobs, g.err
	}
	return g.held, g.shares, g.jobs, nil
}

func (g *fakeGPUs) ReportGPUUsage(_ context.Context, run GPURun, _ cluster.GPUUsage) error {
	if run == g.failFor {
		return errors.New("no leader")
	}
	g.reports = append(g.reports, run)
	return nil
}

func (g *fakeGPUs) Close() error { g.closed++; return nil }

// TestGPUSamplerRounds runs sampling rounds one by one: a failed read
// counts nothing but still prunes and reports; reports go out once
// ReportInterval has passed, once per run, and stop at the first failure.
func TestGPUSamplerRounds(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a, b, c := GPURun{1, 1}, GPURun{2, 1}, GPURun{3, 1}
	share := GPUShare{Utils: []float64{0.5}, MemBytes: 1}
	gpus := &fakeGPUs{held: []GPURun{a, a, b, c}, shares: map[GPURun]GPUShare{a: share, b: share, c: share},
		jobs: liveJobs{1: 1, 2: 1, 3: 1}}
	clock := &stepClock{now: t0}
	s := GPUSampler{GPUs: gpus, Usage: &GPUUsage{}, Clock: clock, Log: discard,
		Interval: 10 * time.Second, ReportInterval: time.Minute}
	last := t0
	steps := []struct {
		at      time.Duration
		err     error
		failFor GPURun
		failing bool // what the round returns
		samples int  // run a's samples so far
		reports []GPURun
	}{
		{10 * time.Second, nil, GPURun{}, false, 1, nil},
		{20 * time.Second, errors.New("NVML gone"), GPURun{}, true, 1, nil},
		{30 * time.Second, errors.New("NVML gone"), GPURun{}, true, 1, nil},
		{60 * time.Second, nil, GPURun{}, false, 2, []GPURun{a, b, c}}, // due: each run once
		{70 * time.Second, nil, GPURun{}, false, 3, []GPURun{a, b, c}},
		{2 * time.Minute, nil, b, false, 4, []GPURun{a, b, c, a}}, // b's report fails: c waits
	}
	failing := false
	for i, st := range steps {
		clock.now, gpus.err, gpus.failFor = t0.Add(st.at), st.err, st.failFor
		failing = s.Round(context.Background(), failing, &last)
		u := s.Usage.Get(a)
		if failing != st.failing || u == nil || u.Samples != st.samples || !slices.Equal(gpus.reports, st.reports) {
			t.Fatalf("round %d at +%s: failing %t, usage %+v, reports %v; want %t, %d samples, %v",
				i, st.at, failing, u, gpus.reports, st.failing, st.samples, st.reports)
		}
	}

	gpus.jobs = liveJobs{2: 1, 3: 1}
	s.Round(context.Background(), false, &last)
	if s.Usage.Get(a) != nil {
		t.Errorf("job 1 left the live state but its usage stays")
	}
}

// TestGPUSamplerRunCloses: the loop samples at once and on each tick, and
// closes the sampler when ctx ends.
func TestGPUSamplerRunCloses(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := GPURun{1, 1}
	gpus := &fakeGPUs{held: []GPURun{a}, shares: map[GPURun]GPUShare{a: {Utils: []float64{1}}}, jobs: liveJobs{1: 1}}
	tick := make(chan time.Time)
	clock := &tickClock{stepClock: stepClock{now: t0}, tick: tick}
	s := GPUSampler{GPUs: gpus, Usage: &GPUUsage{}, Clock: clock, Log: discard,
		Interval: time.Second, ReportInterval: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	tick <- t0 // unbuffered: taken once the first round has finished
	tick <- t0 // and the second
	cancel()
	<-done
	if u := s.Usage.Get(a); u == nil || u.Samples < 2 || gpus.closed != 1 {
		t.Errorf("usage %+v, closed %d times; want at least 2 samples, closed once", u, gpus.closed)
	}
}

// tickClock is a stepClock whose ticker is the test's channel.
type tickClock struct {
	stepClock
	tick chan time.Time
}

func (c *tickClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return c.tick, func() {} }
