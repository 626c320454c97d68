package cluster

import (
	"math"
	"testing"
	"time"
)

func TestGPUUsageAdd(t *testing.T) {
	var u GPUUsage
	u = u.Add(nil, 5) // no GPUs: no sample
	if u != (GPUUsage{}) {
		t.Fatalf("a sample of no GPUs counted: %+v", u)
	}
	u = u.Add([]float64{0.2, 0.6}, 100) // mean 0.4
	u = u.Add([]float64{0.8, 1.0}, 300) // mean 0.9
	want := GPUUsage{Samples: 2, MeanUtil: 0.65, PeakUtil: 1, MeanMemBytes: 200, PeakMemBytes: 300}
	if u.Samples != want.Samples || math.Abs(u.MeanUtil-want.MeanUtil) > 1e-12 || u.PeakUtil != want.PeakUtil ||
		u.MeanMemBytes != want.MeanMemBytes || u.PeakMemBytes != want.PeakMemBytes {
		t.Errorf("Add twice = %+v; want %+v", u, want)
	}
}

func TestGPUSeriesAdd(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 10 * time.Second) }

	var s GPUSeries
	s = s.Add(at(0), nil, 5) // no GPUs: nothing
	if len(s.Points) != 0 {
		t.Fatalf("a sample of no GPUs made points: %+v", s)
	}
	s = s.Add(at(0), []float64{0.2, 0.4}, 100)
	s = s.Add(at(1), []float64{0.6, 0.6}, 300)
	if s.Every != 1 || len(s.Points) != 2 {
		t.Fatalf("two samples: %+v, want two points of one sample", s)
	}
	if p := s.Points[0]; p.Time != at(0) || math.Abs(p.Util-0.3) > 1e-12 || p.MemBytes != 100 || p.Samples != 1 {
		t.Errorf("first point %+v, want 30 %% and 100 bytes at %v", p, at(0))
	}

	// Past MaxGPUPoints, neighbours merge pairwise: the series keeps the
	// whole run, its first point's time, and the weighted means.
	before := s
	for i := 2; i < MaxGPUPoints+1; i++ {
		s = s.Add(at(i), []float64{1}, 1000)
	}
	if len(before.Points) != 2 {
		t.Fatalf("Add changed its receiver's points: %+v", before)
	}
	if s.Every != 2 || len(s.Points) != (MaxGPUPoints+2)/2 {
		t.Fatalf("after %d samples: every %d, %d points; want 2 and %d", MaxGPUPoints+1, s.Every, len(s.Points), (MaxGPUPoints+2)/2)
	}
	if p := s.Points[0]; p.Time != at(0) || p.Samples != 2 || math.Abs(p.Util-0.45) > 1e-12 || p.MemBytes != 200 {
		t.Errorf("merged first point %+v, want 2 samples, 45 %%, 200 bytes at %v", p, at(0))
	}
	total := 0
	for _, p := range s.Points {
		total += p.Samples
	}
	if total != MaxGPUPoints+1 {
		t.Errorf("points hold %d samples, want %d", total, MaxGPUPoints+1)
	}

	// However long the run, the series stays bounded and complete.
	for i := MaxGPUPoints + 1; i < 10_000; i++ {
		s = s.Add(at(i), []float64{0.5}, 0)
	}
	total = 0
	for _, p := range s.Points {
		total += p.Samples
		if p.Samples > s.Every {
			t.Fatalf("point %+v holds more than every=%d samples", p, s.Every)
		}
	}
	if len(s.Points) > MaxGPUPoints || total != 10_000 || s.Points[0].Time != at(0) {
		t.Errorf("after 10000 samples: %d points holding %d samples from %v (every %d)", len(s.Points), total, s.Points[0].Time, s.Every)
	}
}
