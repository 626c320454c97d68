package gpu

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSimulatedSampler(t *testing.T) {
	gpus := Simulated(3, "Sim", 1024)
	s, err := NewSimulatedSampler(gpus, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Sample([]int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{
		{Index: 0, Utilization: 0, MemoryUsedBytes: 0, TemperatureC: 30, PowerWatts: 60},
		{Index: 1, Utilization: 0.5, MemoryUsedBytes: 512 << 20, TemperatureC: 55, PowerWatts: 230},
		{Index: 2, Utilization: 0.5, MemoryUsedBytes: 512 << 20, TemperatureC: 55, PowerWatts: 230},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sample (-want +got):\n%s", diff)
	}
	for _, bad := range []float64{-0.1, 1.5} {
		if _, err := NewSimulatedSampler(gpus, bad); err == nil {
			t.Errorf("load %v: accepted", bad)
		}
	}
}
