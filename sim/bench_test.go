package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoal-sched/shoal/placement"
)

// traceDir holds the shared traces, beside the checkout.
const traceDir = "../../shared/traces"

// BenchmarkReplay replays each shared trace under each policy on the
// cluster sizes BENCHMARKS.md reports; it is skipped where the traces are
// absent.
func BenchmarkReplay(b *testing.B) {
	for _, tc := range []struct {
		file  string
		nodes int
	}{
		{"philly_dirlab_subset.csv", 128},
		{"helios_dirlab_subset.csv", 128},
		{"alibaba_gpu_v2023_openb.csv", 16},
	} {
		path := filepath.Join(traceDir, tc.file)
		if _, err := os.Stat(path); err != nil {
			b.Skipf("trace %s: %v", path, err)
		}
		jobs, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range placement.Policies() {
			b.Run(tc.file+"/"+string(p), func(b *testing.B) {
				opts := Options{Cluster: Cluster{Nodes: tc.nodes, GPUsPerNode: 8, LeafSize: 32, LeavesPerSpine: 8}, Policy: p}
				for b.Loop() {
					r, err := Replay(jobs, opts)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(r.Passes), "passes")
				}
			})
		}
	}
}
