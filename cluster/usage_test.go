package cluster

import (
	"math"
	"testing"
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
