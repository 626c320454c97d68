package topology

import (
	"context"
	"errors"
	"fmt"

	"github.com/shoal-sched/shoal/gpu"
)

// NVMLSource finds the node's block, its NVLink domain, from NVML's GPU
// fabric information (gpu.DiscoverFabricBlock): on NVL72-style systems
// every node of a domain partition reports the same cluster UUID and
// clique id.
type NVMLSource struct {
	block func(context.Context) (string, error)
}

// NewNVMLSource returns the NVLink fabric source of this machine.
func NewNVMLSource() *NVMLSource {
	return &NVMLSource{block: gpu.DiscoverFabricBlock}
}

// Name is SourceNVML.
func (s *NVMLSource) Name() string { return SourceNVML }

// Discover returns the node's block; a zero Found and no error where
// NVML cannot be used (no driver, a build without cgo) or the GPUs are
// in no NVLink switch fabric. A fabric still registering is an error
// wrapping gpu.ErrFabricPending.
func (s *NVMLSource) Discover(ctx context.Context) (Found, error) {
	block, err := s.block(ctx)
	switch {
	case errors.Is(err, gpu.ErrNoNVML):
		return Found{}, nil
	case err != nil:
		return Found{}, fmt.Errorf("nvml: %w", err)
	case block == "":
		return Found{}, nil
	}
	return Found{Source: SourceNVML, Block: block}, nil
}

var (
	_ Source = (*NVMLSource)(nil)
	_ Source = (*IBSource)(nil)
)
