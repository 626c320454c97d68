package exec

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// BenchmarkStartToExit is the executor's share of submit-to-running and
// of a task's end: Start of a one-rank task running true (its supervisor
// started, the rank forked), then its exit pending and acknowledged.
func BenchmarkStartToExit(b *testing.B) {
	e, err := New(b.Context(), Config{DataDir: b.TempDir(), NodeName: "n2", KillWait: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	l := Launch{
		Incarnation: 1,
		Spec: cluster.Spec{Name: "b", Command: []string{"true"}, WorkDir: b.TempDir(),
			Env: []string{"PATH=/usr/bin:/bin"}, UID: os.Getuid(), GID: os.Getgid(),
			Request: cluster.Request{Nodes: 1, TasksPerNode: 1}},
		Alloc:     cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n2"}}, MasterPort: 29500},
		NodeIndex: 0, MasterAddr: "127.0.0.1", NodeList: "n2", NodeName: "n2",
	}
	var start time.Duration
	for i := range b.N {
		l.Job = cluster.JobID(100 + i)
		t0 := time.Now()
		if err := e.Start(b.Context(), l); err != nil {
			b.Fatal(err)
		}
		start += time.Since(t0)
		key := TaskKey{Job: l.Job, Incarnation: 1, Step: NoStep}
	wait:
		for {
			for _, x := range e.PendingExits() {
				if x.key() == key {
					break wait
				}
			}
			<-e.ExitNotify()
		}
		if err := e.Ack(key); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(start.Microseconds())/float64(b.N), "start-µs/op")
}
