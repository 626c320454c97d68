package consensus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkApply3Voters measures SubmitJob applies through the leader of
// a 3-server loopback cluster (real TCP, bbolt with fsync): one proposer
// at a time (commit latency bound), and 32 at once (raft batches them).
func BenchmarkApply3Voters(b *testing.B) {
	for _, proposers := range []int{1, 32} {
		b.Run(fmt.Sprintf("proposers=%d", proposers), func(b *testing.B) {
			nodes := newCluster(b, 3, FastTiming())
			leader := waitLeader(b, nodes)
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range proposers {
				wg.Go(func() {
					for {
						n := next.Add(1)
						if n > int64(b.N) {
							return
						}
						if _, _, err := leader.r.Apply(ctx, submitCmd(b, fmt.Sprintf("bench-%d", n))); err != nil {
							b.Errorf("Apply: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
		})
	}
}
