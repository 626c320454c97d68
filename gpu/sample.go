package gpu

import (
	"fmt"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
)

// Sample is one reading of one GPU.
type Sample struct {
	Index int
	// Utilization is the fraction of the last sample period in which a
	// kernel ran (NVML's utilization rate), 0 to 1.
	Utilization     float64
	MemoryUsedBytes uint64
	// TemperatureC and PowerWatts are 0 when the device does not say.
	TemperatureC float64
	PowerWatts   float64
}

// Sampler reads this node's GPUs. held is the indices jobs hold now,
// ascending: real devices ignore it, simulated ones are loaded only there.
type Sampler interface {
	Sample(held []int) ([]Sample, error)
	Close() error
}

// Synthetic figures of a simulated GPU: idle, and added at full load
// (the range of a data-centre GPU).
const (
	simIdleC, simFullC = 30, 80
	simIdleW, simFullW = 60, 400
)

// SimulatedSampler reads simulated GPUs: every GPU a job holds runs at
// Load (0 to 1) and uses that fraction of its memory; a free one is idle.
// It makes the GPU metrics and per-job usage testable without a GPU.
type SimulatedSampler struct {
	GPUs []cluster.GPU
	Load float64
}

// NewSimulatedSampler checks load (0 to 1).
func NewSimulatedSampler(gpus []cluster.GPU, load float64) (*SimulatedSampler, error) {
	if load < 0 || load > 1 {
		return nil, fmt.Errorf("simulated GPU load %v: want 0 to 1", load)
	}
	return &SimulatedSampler{GPUs: gpus, Load: load}, nil
}

// Sample returns every GPU's synthetic reading. Pure.
func (s *SimulatedSampler) Sample(held []int) ([]Sample, error) {
	out := make([]Sample, len(s.GPUs))
	for i, g := range s.GPUs {
		load := 0.0
		if slices.Contains(held, g.Index) {
			load = s.Load
		}
		out[i] = Sample{
			Index:           g.Index,
			Utilization:     load,
			MemoryUsedBytes: uint64(load * float64(g.MemoryMiB) * (1 << 20)),
			TemperatureC:    simIdleC + load*(simFullC-simIdleC),
			PowerWatts:      simIdleW + load*(simFullW-simIdleW),
		}
	}
	return out, nil
}

// Close does nothing.
func (s *SimulatedSampler) Close() error { return nil }
