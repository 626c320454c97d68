//go:build cgo

package gpu

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/shoal-sched/shoal/cluster"
)

const sysPCIDevices = "/sys/bus/pci/devices"

// Discover lists this node's GPUs through NVML. It returns an error
// wrapping ErrNoNVML when libnvidia-ml.so.1 cannot be loaded or its driver
// is not running. ctx is checked between devices; a single NVML call
// cannot be interrupted.
func Discover(ctx context.Context) ([]cluster.GPU, error) {
	return discover(ctx, nvml.New())
}

// discover is Discover through lib: the NVML library, or in tests
// go-nvml's mock of it.
func discover(ctx context.Context, lib nvml.Interface) ([]cluster.GPU, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("discover gpus: %w", err)
	}
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, fmt.Errorf("discover gpus: %w: libnvidia-ml.so.1 not found", ErrNoNVML)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("discover gpus: %w: NVIDIA driver not loaded", ErrNoNVML)
	default:
		return nil, fmt.Errorf("discover gpus: nvml init: %w", ret)
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			// The GPUs were read; a failed shutdown only leaks a handle.
			slog.Default().With("component", "gpu").Warn("nvml shutdown failed", "err", ret.Error())
		}
	}()

	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("discover gpus: count devices: %w", ret)
	}
	hasNUMA := lib.Extensions().LookupSymbol("nvmlDeviceGetNumaNodeId") == nil
	hasRemoteType := lib.Extensions().LookupSymbol("nvmlDeviceGetNvLinkRemoteDeviceType") == nil

	gpus := make([]cluster.GPU, 0, count)
	busIDs := make([]string, count)
	links := make([][]link, count)
	for i := range count {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("discover gpus: %w", err)
		}
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("discover gpu %d: handle: %w", i, ret)
		}
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("discover gpu %d: uuid: %w", i, ret)
		}
		name, ret := dev.GetName()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("discover gpu %d (%s): name: %w", i, uuid, ret)
		}
		mem, ret := dev.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("discover gpu %d (%s): memory: %w", i, uuid, ret)
		}
		pci, ret := dev.GetPciInfo()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("discover gpu %d (%s): pci info: %w", i, uuid, ret)
		}
		busIDs[i] = normalizeBusID(busIDString(pci.BusId[:]))
		links[i] = activeLinks(dev, hasRemoteType)
		gpus = append(gpus, cluster.GPU{
			Index:     i,
			UUID:      uuid,
			Model:     name,
			MemoryMiB: mem.Total >> 20,
			NUMA:      numaNode(dev, hasNUMA, busIDs[i]),
		})
	}
	for i, peers := range nvlinkPeers(busIDs, links) {
		gpus[i].NVLinkPeers = peers
	}
	return gpus, nil
}

// numaNode asks NVML when the driver has the call, else sysfs; -1 when
// neither knows.
func numaNode(dev nvml.Device, hasNUMA bool, busID string) int {
	if hasNUMA {
		if n, ret := dev.GetNumaNodeId(); ret == nvml.SUCCESS {
			return n
		}
	}
	if busID == "" {
		return -1
	}
	b, err := os.ReadFile(filepath.Join(sysPCIDevices, busID, "numa_node"))
	if err != nil {
		return -1
	}
	n, err := parseNUMANode(string(b))
	if err != nil {
		return -1
	}
	return n
}

// activeLinks lists dev's enabled NVLinks and where they lead. Every link
// number is asked: a device without NVLink, or a link beyond the device's
// count, answers an error, which just means "no link here".
func activeLinks(dev nvml.Device, hasRemoteType bool) []link {
	var out []link
	for l := range nvml.NVLINK_MAX_LINKS {
		state, ret := dev.GetNvLinkState(l)
		if ret != nvml.SUCCESS || state != nvml.FEATURE_ENABLED {
			continue
		}
		pci, ret := dev.GetNvLinkRemotePciInfo(l)
		if ret != nvml.SUCCESS {
			continue
		}
		lk := link{remoteBusID: normalizeBusID(busIDString(pci.BusId[:]))}
		if hasRemoteType {
			if t, ret := dev.GetNvLinkRemoteDeviceType(l); ret == nvml.SUCCESS {
				if t == nvml.NVLINK_DEVICE_TYPE_IBMNPU {
					continue // a CPU link, not a GPU peer or switch
				}
				lk.toSwitch = t == nvml.NVLINK_DEVICE_TYPE_SWITCH
			}
		}
		out = append(out, lk)
	}
	return out
}

// DiscoverFabricBlock reads this node's NVLink domain from NVML's GPU
// fabric information and names it with FabricBlock: "" where the GPUs
// are in no NVLink switch fabric; an error wrapping ErrNoNVML where NVML
// cannot be used.
func DiscoverFabricBlock(ctx context.Context) (string, error) {
	return discoverFabricBlock(ctx, nvml.New())
}

// discoverFabricBlock is DiscoverFabricBlock through lib. It asks
// nvmlDeviceGetGpuFabricInfo, whose fields (cluster UUID, clique id,
// state, status) are those of the versioned call; go-nvml's handler for
// the versioned call holds a concrete device and cannot be mocked.
func discoverFabricBlock(ctx context.Context, lib nvml.Interface) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("nvlink fabric: %w", err)
	}
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return "", fmt.Errorf("nvlink fabric: %w: %s", ErrNoNVML, ret.Error())
	default:
		return "", fmt.Errorf("nvlink fabric: nvml init: %w", ret)
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			slog.Default().With("component", "gpu").Warn("nvml shutdown failed", "err", ret.Error())
		}
	}()
	if lib.Extensions().LookupSymbol("nvmlDeviceGetGpuFabricInfo") != nil {
		return "", nil // a driver older than fabric information (R525)
	}
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("nvlink fabric: count devices: %w", ret)
	}
	infos := make([]FabricInfo, 0, count)
	for i := range count {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("nvlink fabric: %w", err)
		}
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return "", fmt.Errorf("nvlink fabric: gpu %d: handle: %w", i, ret)
		}
		fi, ret := dev.GetGpuFabricInfo()
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED:
			infos = append(infos, FabricInfo{State: FabricNotSupported})
			continue
		default:
			return "", fmt.Errorf("nvlink fabric: gpu %d: fabric info: %w", i, ret)
		}
		info := FabricInfo{ClusterUUID: fi.ClusterUuid, CliqueID: fi.CliqueId, State: fi.State}
		if st := nvml.Return(fi.Status); st != nvml.SUCCESS {
			info.Err = st
		}
		infos = append(infos, info)
	}
	return FabricBlock(infos)
}
