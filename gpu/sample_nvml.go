//go:build cgo

package gpu

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlSampler reads utilization, memory, temperature and power through
// NVML, holding NVML open between samples.
type nvmlSampler struct {
	lib  nvml.Interface
	devs []nvml.Device
}

// OpenNVMLSampler initialises NVML for sampling until Close. It returns
// an error wrapping ErrNoNVML where NVML cannot be used.
func OpenNVMLSampler() (Sampler, error) {
	return openNVMLSampler(nvml.New())
}

// openNVMLSampler is OpenNVMLSampler through lib: the NVML library, or in
// tests go-nvml's mock of it.
func openNVMLSampler(lib nvml.Interface) (Sampler, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("sample gpus: %w: %v", ErrNoNVML, ret)
	default:
		return nil, fmt.Errorf("sample gpus: nvml init: %w", ret)
	}
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		lib.Shutdown()
		return nil, fmt.Errorf("sample gpus: count devices: %w", ret)
	}
	s := &nvmlSampler{lib: lib}
	for i := range count {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			lib.Shutdown()
			return nil, fmt.Errorf("sample gpu %d: handle: %w", i, ret)
		}
		s.devs = append(s.devs, dev)
	}
	return s, nil
}

// Sample reads every device. A figure the device does not support is left
// 0; a device whose utilization cannot be read fails the sample.
func (s *nvmlSampler) Sample([]int) ([]Sample, error) {
	out := make([]Sample, len(s.devs))
	for i, dev := range s.devs {
		u, ret := dev.GetUtilizationRates()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("sample gpu %d: utilization: %w", i, ret)
		}
		smp := Sample{Index: i, Utilization: float64(u.Gpu) / 100}
		if mem, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
			smp.MemoryUsedBytes = mem.Used
		}
		if c, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
			smp.TemperatureC = float64(c)
		}
		if mw, ret := dev.GetPowerUsage(); ret == nvml.SUCCESS {
			smp.PowerWatts = float64(mw) / 1000
		}
		out[i] = smp
	}
	return out, nil
}

// Close shuts NVML down.
func (s *nvmlSampler) Close() error {
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return errors.New("nvml shutdown: " + ret.Error())
	}
	return nil
}
