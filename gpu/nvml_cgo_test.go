//go:build cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"

	"github.com/shoal-sched/shoal/cluster"
)

// fakeGPU is one device of fakeNVML: what NVML answers about it.
type fakeGPU struct {
	busID   string
	links   []int // NVLink i leads to device links[i] (-1: an NVSwitch)
	util    uint32
	memUsed uint64
	tempC   uint32
	powerMW uint32
}

// fakeNVML is NVML as go-nvml's mock gives it: the devices answer what
// Discover and the sampler ask, and any other call panics (the mock's
// nil function), so a new NVML call shows up here as a failing test.
func fakeNVML(gpus []fakeGPU, initRet nvml.Return) *mock.Interface {
	devs := make([]nvml.Device, len(gpus))
	pci := func(busID string) nvml.PciInfo {
		var p nvml.PciInfo
		for i := range len(busID) {
			p.BusId[i] = uint8(busID[i])
		}
		return p
	}
	for i, g := range gpus {
		devs[i] = &mock.Device{
			GetUUIDFunc:       func() (string, nvml.Return) { return fmt.Sprintf("GPU-%08d", i), nvml.SUCCESS },
			GetNameFunc:       func() (string, nvml.Return) { return "NVIDIA H100 80GB HBM3", nvml.SUCCESS },
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 80 << 30, Used: g.memUsed}, nvml.SUCCESS },
			GetPciInfoFunc:    func() (nvml.PciInfo, nvml.Return) { return pci(g.busID), nvml.SUCCESS },
			GetNumaNodeIdFunc: func() (int, nvml.Return) { return i / 2, nvml.SUCCESS },
			GetNvLinkStateFunc: func(l int) (nvml.EnableState, nvml.Return) {
				if l < len(g.links) {
					return nvml.FEATURE_ENABLED, nvml.SUCCESS
				}
				return nvml.FEATURE_DISABLED, nvml.ERROR_INVALID_ARGUMENT
			},
			GetNvLinkRemotePciInfoFunc: func(l int) (nvml.PciInfo, nvml.Return) {
				if to := g.links[l]; to >= 0 {
					return pci(gpus[to].busID), nvml.SUCCESS
				}
				return pci("00000000:f0:00.0"), nvml.SUCCESS
			},
			GetNvLinkRemoteDeviceTypeFunc: func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
				if g.links[l] < 0 {
					return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
				}
				return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
			},
			GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
				return nvml.Utilization{Gpu: g.util}, nvml.SUCCESS
			},
			GetTemperatureFunc: func(nvml.TemperatureSensors) (uint32, nvml.Return) { return g.tempC, nvml.SUCCESS },
			GetPowerUsageFunc:  func() (uint32, nvml.Return) { return g.powerMW, nvml.SUCCESS },
		}
	}
	return mockNVML(devs, initRet, func(string) error { return nil })
}

// mockNVML is an NVML library whose Init returns initRet, holding devs,
// whose symbol lookups answer lookup.
func mockNVML(devs []nvml.Device, initRet nvml.Return, lookup func(sym string) error) *mock.Interface {
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return initRet },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
	ext := &mock.ExtendedInterface{LookupSymbolFunc: lookup}
	lib.ExtensionsFunc = func() nvml.ExtendedInterface { return ext }
	return lib
}

// fourGPUs: 0-1 and 2-3 joined by NVLink, 3 also to an NVSwitch.
var fourGPUs = []fakeGPU{
	{busID: "00000000:1B:00.0", links: []int{1, 1}, util: 40, memUsed: 10 << 30, tempC: 51, powerMW: 312_500},
	{busID: "00000000:43:00.0", links: []int{0, 0}, util: 0},
	{busID: "00000000:52:00.0", links: []int{3}, util: 100, memUsed: 79 << 30, tempC: 80, powerMW: 700_000},
	{busID: "00000000:61:00.0", links: []int{2, -1}, util: 7},
}

func TestDiscoverThroughNVML(t *testing.T) {
	got, err := discover(context.Background(), fakeNVML(fourGPUs, nvml.SUCCESS))
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(i, numa int, peers ...int) cluster.GPU {
		return cluster.GPU{Index: i, UUID: fmt.Sprintf("GPU-%08d", i), Model: "NVIDIA H100 80GB HBM3",
			MemoryMiB: 80 << 10, NUMA: numa, NVLinkPeers: peers}
	}
	want := []cluster.GPU{gpu(0, 0, 1), gpu(1, 0, 0), gpu(2, 1, 3), gpu(3, 1, 2)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("discovered GPUs (-want +got):\n%s", d)
	}

	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED} {
		if _, err := discover(context.Background(), fakeNVML(nil, ret)); !errors.Is(err, ErrNoNVML) {
			t.Errorf("init %v: %v; want ErrNoNVML", ret, err)
		}
	}
	if _, err := discover(context.Background(), fakeNVML(nil, nvml.ERROR_UNKNOWN)); err == nil || errors.Is(err, ErrNoNVML) {
		t.Errorf("init ERROR_UNKNOWN: %v; want an error other than ErrNoNVML", err)
	}
}

func TestNVMLSampler(t *testing.T) {
	s, err := openNVMLSampler(fakeNVML(fourGPUs, nvml.SUCCESS))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Sample([]int{0, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{
		{Index: 0, Utilization: 0.4, MemoryUsedBytes: 10 << 30, TemperatureC: 51, PowerWatts: 312.5},
		{Index: 1},
		{Index: 2, Utilization: 1, MemoryUsedBytes: 79 << 30, TemperatureC: 80, PowerWatts: 700},
		{Index: 3, Utilization: 0.07},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if _, err := openNVMLSampler(fakeNVML(nil, nvml.ERROR_DRIVER_NOT_LOADED)); !errors.Is(err, ErrNoNVML) {
		t.Errorf("sampler without a driver: %v; want ErrNoNVML", err)
	}
}

// fabricNVML is NVML with GPUs answering the given fabric information
// (ret: nvmlDeviceGetGpuFabricInfo's return), or, when hasFabric is
// false, a driver without the call.
func fabricNVML(infos []nvml.GpuFabricInfo, ret nvml.Return, hasFabric bool) *mock.Interface {
	devs := make([]nvml.Device, len(infos))
	for i, fi := range infos {
		devs[i] = &mock.Device{GetGpuFabricInfoFunc: func() (nvml.GpuFabricInfo, nvml.Return) { return fi, ret }}
	}
	return mockNVML(devs, nvml.SUCCESS, func(sym string) error {
		if sym == "nvmlDeviceGetGpuFabricInfo" && !hasFabric {
			return errors.New("undefined symbol")
		}
		return nil
	})
}

func TestDiscoverFabricBlockThroughNVML(t *testing.T) {
	tray := nvml.GpuFabricInfo{ClusterUuid: rackA, CliqueId: 32766, State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS)}
	failed := tray
	failed.Status = uint32(nvml.ERROR_UNKNOWN)
	hgx := nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_NOT_SUPPORTED}
	for _, tc := range []struct {
		name      string
		infos     []nvml.GpuFabricInfo
		ret       nvml.Return
		hasFabric bool
		want      string
		wantErr   bool
	}{
		{"nvl72 tray", []nvml.GpuFabricInfo{tray, tray, tray, tray}, nvml.SUCCESS, true, FabricBlockName(rackA, 32766), false},
		{"hgx board", []nvml.GpuFabricInfo{hgx, hgx}, nvml.SUCCESS, true, "", false},
		{"call not supported", []nvml.GpuFabricInfo{tray}, nvml.ERROR_NOT_SUPPORTED, true, "", false},
		{"old driver", []nvml.GpuFabricInfo{tray}, nvml.SUCCESS, false, "", false},
		{"registration failed", []nvml.GpuFabricInfo{tray, failed}, nvml.SUCCESS, true, "", true},
		{"call fails", []nvml.GpuFabricInfo{tray}, nvml.ERROR_GPU_IS_LOST, true, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := discoverFabricBlock(context.Background(), fabricNVML(tc.infos, tc.ret, tc.hasFabric))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("discoverFabricBlock = %q, %v; want %q (error: %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
