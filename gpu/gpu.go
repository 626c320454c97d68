package gpu

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
)

// ErrNoNVML means NVML cannot be used on this host: the binary was built
// without cgo, libnvidia-ml is not installed, or its driver is not loaded.
var ErrNoNVML = errors.New("NVML not available")

// MaxGPUs bounds the GPU count the --gpus flag accepts.
const MaxGPUs = 1024

// nvlinkGroup is the size of an HGX board: simulated GPUs are NVLink peers
// all-to-all within each group of this many.
const nvlinkGroup = 8

// Simulated returns n simulated GPUs of the given model: indices 0..n-1,
// deterministic UUIDs "GPU-sim-<model hash>-<i>", the first half (rounded
// up) on NUMA node 0 and the rest on NUMA node 1, and NVLink peers
// all-to-all within each group of 8 indices, like an HGX board. n <= 0
// gives none.
func Simulated(n int, model string, memoryMiB uint64) []cluster.GPU {
	if n <= 0 {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(model)) // hash.Hash writes never fail
	tag := fmt.Sprintf("%08x", h.Sum32())
	half := (n + 1) / 2
	gpus := make([]cluster.GPU, n)
	for i := range gpus {
		numa := 0
		if i >= half {
			numa = 1
		}
		var peers []int
		start := i / nvlinkGroup * nvlinkGroup
		for j := start; j < min(start+nvlinkGroup, n); j++ {
			if j != i {
				peers = append(peers, j)
			}
		}
		gpus[i] = cluster.GPU{
			Index:       i,
			UUID:        "GPU-sim-" + tag + "-" + strconv.Itoa(i),
			Model:       model,
			MemoryMiB:   memoryMiB,
			NUMA:        numa,
			NVLinkPeers: peers,
		}
	}
	return gpus
}

// Parse reads the agent's --gpus flag: "auto" (discover with NVML) or a
// whole number of simulated GPUs, 0..MaxGPUs.
func Parse(spec string) (auto bool, n int, err error) {
	s := strings.TrimSpace(spec)
	if strings.EqualFold(s, "auto") {
		return true, 0, nil
	}
	v, perr := strconv.Atoi(s)
	if perr != nil || v < 0 || v > MaxGPUs || strings.HasPrefix(s, "+") {
		return false, 0, fmt.Errorf("--gpus %q: want \"auto\" or a whole number 0..%d", spec, MaxGPUs)
	}
	return false, v, nil
}
