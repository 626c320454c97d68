package topology

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shoal-sched/shoal/gpu"
)

func TestNVMLSource(t *testing.T) {
	for _, tc := range []struct {
		name    string
		block   string
		err     error
		want    Found
		wantErr error
	}{
		{"domain", "nvl-6f1c2a3b-4c5d-4e6f-8091-a2b3c4d5e6f7-7", nil, Found{Source: SourceNVML, Block: "nvl-6f1c2a3b-4c5d-4e6f-8091-a2b3c4d5e6f7-7"}, nil},
		{"no fabric", "", nil, Found{}, nil},
		{"no nvml", "", fmt.Errorf("nvlink fabric: %w", gpu.ErrNoNVML), Found{}, nil},
		{"pending", "", fmt.Errorf("gpu 0: %w", gpu.ErrFabricPending), Found{}, gpu.ErrFabricPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &NVMLSource{block: func(context.Context) (string, error) { return tc.block, tc.err }}
			got, err := s.Discover(context.Background())
			if got != tc.want || !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
				t.Errorf("Discover = %+v, %v; want %+v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if NewNVMLSource().Name() != SourceNVML || NewIBSource().Name() != SourceIB {
		t.Error("source names")
	}
}
