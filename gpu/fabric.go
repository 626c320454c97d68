package gpu

import (
	"errors"
	"fmt"
)

// FabricInfo is one GPU's view of its NVLink fabric as NVML's GPU fabric
// information gives it (nvmlDeviceGetGpuFabricInfo): on NVL72-style
// systems the fabric manager registers every GPU of an NVLink domain
// under one cluster UUID and a clique id (a partition of the domain).
type FabricInfo struct {
	ClusterUUID [16]byte
	CliqueID    uint32
	// State is NVML's GPU_FABRIC_STATE_*: FabricNotSupported,
	// FabricNotStarted, FabricInProgress or FabricCompleted.
	State uint8
	// Err is the registration's status once completed, nil for success.
	Err error
}

// NVML's GPU fabric states (nvml.h's NVML_GPU_FABRIC_STATE_*).
const (
	FabricNotSupported uint8 = 0
	FabricNotStarted   uint8 = 1
	FabricInProgress   uint8 = 2
	FabricCompleted    uint8 = 3
)

// ErrFabricPending means the fabric manager has not finished registering
// this node's GPUs: the block is not known yet, and asking again later
// will tell.
var ErrFabricPending = errors.New("NVLink fabric registration not finished")

// FabricBlockName names the block (Slurm's topology/block) of an NVLink
// domain partition: "nvl-" then the cluster UUID in its 8-4-4-4-12 form,
// then "-" and the clique id. Every node of the partition derives the
// same name, and two partitions never share one.
func FabricBlockName(clusterUUID [16]byte, cliqueID uint32) string {
	u := clusterUUID
	return fmt.Sprintf("nvl-%x-%x-%x-%x-%x-%d", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16], cliqueID)
}

// FabricBlock decides this node's block from its GPUs' fabric
// information, in GPU index order. GPUs whose fabric is not supported
// (no NVLink switch fabric, as on an HGX board) or whose cluster UUID is
// zero are not in a domain; "" and no error when no GPU is. A GPU still
// registering makes ErrFabricPending, a failed registration an error
// naming the GPU, and completed GPUs in two different domains an error
// naming both.
func FabricBlock(infos []FabricInfo) (string, error) {
	block, first := "", -1
	for i, f := range infos {
		switch f.State {
		case FabricNotSupported:
			continue
		case FabricNotStarted, FabricInProgress:
			return "", fmt.Errorf("gpu %d: %w (state %d)", i, ErrFabricPending, f.State)
		case FabricCompleted:
		default:
			return "", fmt.Errorf("gpu %d: unknown NVLink fabric state %d", i, f.State)
		}
		if f.Err != nil {
			return "", fmt.Errorf("gpu %d: NVLink fabric registration failed: %w", i, f.Err)
		}
		if f.ClusterUUID == ([16]byte{}) {
			continue
		}
		name := FabricBlockName(f.ClusterUUID, f.CliqueID)
		switch {
		case first < 0:
			block, first = name, i
		case name != block:
			return "", fmt.Errorf("gpus %d and %d are in different NVLink domains (%s, %s)", first, i, block, name)
		}
	}
	return block, nil
}
