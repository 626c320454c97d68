//go:build !cgo

package gpu

import (
	"context"
	"fmt"

	"github.com/shoal-sched/shoal/cluster"
)

// Discover would list this node's GPUs through NVML, which needs cgo; this
// build has none, so it always returns an error wrapping ErrNoNVML.
func Discover(ctx context.Context) ([]cluster.GPU, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("discover gpus: %w", err)
	}
	return nil, fmt.Errorf("discover gpus: %w: NVML not compiled in (built without cgo)", ErrNoNVML)
}

// OpenNVMLSampler would read the GPUs through NVML, which needs cgo.
func OpenNVMLSampler() (Sampler, error) {
	return nil, fmt.Errorf("sample gpus: %w: NVML not compiled in (built without cgo)", ErrNoNVML)
}

// DiscoverFabricBlock would read the NVLink domain through NVML, which
// needs cgo.
func DiscoverFabricBlock(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("nvlink fabric: %w", err)
	}
	return "", fmt.Errorf("nvlink fabric: %w: NVML not compiled in (built without cgo)", ErrNoNVML)
}
