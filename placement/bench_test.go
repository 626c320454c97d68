package placement

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// benchCluster returns nodes x 8-GPU nodes, 40 per leaf switch and 10
// leaves per spine, every GPU NVLinked to every other (NVSwitch).
func benchCluster(nodes int) []*cluster.Node {
	ns := make([]*cluster.Node, 0, nodes)
	for i := range nodes {
		leaf := i / 40
		n := mkNode(fmt.Sprintf("gpu%05d", i), 8, fmt.Sprintf("leaf%03d", leaf), fmt.Sprintf("spine%02d", leaf/10))
		for g := range n.GPUs {
			for p := range 8 {
				if p != g {
					n.GPUs[g].NVLinkPeers = append(n.GPUs[g].NVLinkPeers, p)
				}
			}
			n.GPUs[g].NUMA = g / 4
		}
		ns = append(ns, n)
	}
	return ns
}

func BenchmarkPlace64NodeJobOn10kNodes(b *testing.B) {
	v := NewView(benchCluster(10000), nil)
	queue := []*cluster.Job{pending(1, 64, 8)}
	b.ReportAllocs()
	for b.Loop() {
		if res := Place(v, queue, now); len(res.Decisions) != 1 {
			b.Fatalf("Place() = %+v; want the job placed", res)
		}
	}
}

func BenchmarkNewView10kNodes(b *testing.B) {
	nodes := benchCluster(10000)
	var running []*cluster.Job
	for i := range 2000 {
		running = append(running, holding(cluster.JobID(i+1), cluster.JobRunning, false, nodes[i*5].Name, []int{0, 1, 2, 3}))
	}
	b.ReportAllocs()
	for b.Loop() {
		NewView(nodes, running)
	}
}

// BenchmarkPlace1000Pending places a mixed queue of 1000 jobs (1 to 16
// nodes, 1 to 8 GPUs each) on 10,000 nodes that are half busy.
func BenchmarkPlace1000Pending(b *testing.B) {
	nodes := benchCluster(10000)
	var running []*cluster.Job
	for i := 0; i < len(nodes); i += 2 {
		running = append(running, holding(cluster.JobID(100000+i), cluster.JobRunning, false, nodes[i].Name, []int{0, 1, 2, 3, 4}))
	}
	v := NewView(nodes, running)
	var queue []*cluster.Job
	for i := range 1000 {
		queue = append(queue, pending(cluster.JobID(i+1), 1+i*7%16, 1+i*5%8))
	}
	placed := len(Place(v, queue, now).Decisions)
	if placed < 100 {
		b.Fatalf("Place() placed %d jobs; want a benchmark that places many", placed)
	}
	b.ReportMetric(float64(placed), "placed")
	b.ReportAllocs()
	for b.Loop() {
		Place(v, queue, now)
	}
}

// busyJobs returns n running jobs on distinct nodes of nodes, 4 GPUs each,
// with time limits, for the backfill and incremental-view benchmarks.
func busyJobs(nodes []*cluster.Node, n int) []*cluster.Job {
	var running []*cluster.Job
	for i := range n {
		j := holding(cluster.JobID(100000+i), cluster.JobRunning, false, nodes[i*len(nodes)/n].Name, []int{0, 1, 2, 3})
		j.StartTime = now
		j.Spec.Request.TimeLimit = time.Duration(1+i%97) * time.Minute
		running = append(running, j)
	}
	return running
}

// BenchmarkNewView1024Nodes is what rebuilding the simulator's view for
// every event would cost (compare BenchmarkViewStartFinish).
func BenchmarkNewView1024Nodes(b *testing.B) {
	nodes := benchCluster(1024)
	running := busyJobs(nodes, 512)
	b.ReportAllocs()
	for b.Loop() {
		NewView(nodes, running)
	}
}

// BenchmarkViewStartFinish is one job starting and one ending in the
// simulator's incremental view of 1024 nodes.
func BenchmarkViewStartFinish(b *testing.B) {
	nodes := benchCluster(1024)
	v := NewView(nodes, busyJobs(nodes, 512))
	j := holding(1, cluster.JobRunning, false, nodes[1].Name, []int{4, 5, 6, 7}, nodes[3].Name, []int{4, 5, 6, 7})
	j.StartTime, j.Spec.Request.TimeLimit = now, time.Hour
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Start(j); err != nil {
			b.Fatal(err)
		}
		if err := v.Finish(1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlaceWithBackfill1000Pending is BenchmarkPlace1000Pending
// under each policy, with time limits, so backfill computes a
// reservation and tries every job behind it.
func BenchmarkPlaceWithBackfill1000Pending(b *testing.B) {
	nodes := benchCluster(10000)
	v := NewView(nodes, busyJobs(nodes, 5000))
	var queue []*cluster.Job
	for i := range 1000 {
		queue = append(queue, limited(cluster.JobID(i+1), 1+i*7%16, 1+i*5%8, time.Duration(1+i%50)*time.Minute))
	}
	for _, p := range Policies() {
		b.Run(string(p), func(b *testing.B) {
			res, err := PlaceWith(v, queue, now, Options{Policy: p})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(res.Decisions)), "placed")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PlaceWith(v, queue, now, Options{Policy: p}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPass10000Pending is one whole scheduling pass as the leader
// makes it: the View of 10,000 nodes (half of them half busy with jobs
// that have time limits) and the shoal policy over 10,000 pending jobs
// of mixed sizes with limits, EASY backfill behind the first blocked one.
func BenchmarkPass10000Pending(b *testing.B) {
	nodes := benchCluster(10000)
	running := busyJobs(nodes, 5000)
	var queue []*cluster.Job
	for i := range 10000 {
		j := pending(cluster.JobID(i+1), 1+i*7%16, 1+i*5%8)
		j.Spec.Request.TimeLimit = time.Duration(1+i%120) * time.Minute
		queue = append(queue, j)
	}
	benchPass(b, nodes, running, queue)
}

// benchClusterCPUs is benchCluster with CPUs and memory as on a DGX-class
// node: 2 sockets x 24 cores x 2 threads (96 CPUs), 1 TiB, GPUs 0-3 on
// socket 0 and 4-7 on socket 1.
func benchClusterCPUs(nodes int) []*cluster.Node {
	ns := benchCluster(nodes)
	for _, n := range ns {
		n.CPUs, n.Sockets, n.CoresPerSocket, n.ThreadsPerCore = 96, 2, 24, 2
		n.MemoryMiB = 1 << 20
	}
	return ns
}

// cpuMemJob is a pending job asking per GPU cpg CPUs and mpg GiB.
func cpuMemJob(id cluster.JobID, nodes, gpus, cpg, mpg int) *cluster.Job {
	j := pending(id, nodes, gpus)
	j.Spec.Request.CPUsPerGPU = cpg
	j.Spec.Request.MemPerGPUMiB = uint64(mpg) << 10
	return j
}

// BenchmarkPlace64NodeJobOn10kNodesCPUMem is BenchmarkPlace64NodeJobOn10kNodes
// with consumable CPUs and memory: every node reports 96 CPUs and 1 TiB,
// the job asks 12 CPUs and 120 GiB per GPU.
func BenchmarkPlace64NodeJobOn10kNodesCPUMem(b *testing.B) {
	v := NewView(benchClusterCPUs(10000), nil)
	queue := []*cluster.Job{cpuMemJob(1, 64, 8, 12, 120)}
	b.ReportAllocs()
	for b.Loop() {
		if res := Place(v, queue, now); len(res.Decisions) != 1 || len(res.Decisions[0].Nodes[0].CPUs) != 96 {
			b.Fatalf("Place() = %+v; want the job placed with 96 CPUs a node", res)
		}
	}
}

// BenchmarkPass10000PendingCPUMem is BenchmarkPass10000Pending with
// consumable CPUs and memory: the busy jobs hold 4 GPUs, 48 CPUs and
// 480 GiB each, and the pending ones ask 1 to 12 CPUs and 16 to 128 GiB
// per GPU, so some nodes run short of CPUs or memory before GPUs.
func BenchmarkPass10000PendingCPUMem(b *testing.B) {
	nodes := benchClusterCPUs(10000)
	running := busyJobs(nodes, 5000)
	for _, j := range running {
		j.Alloc.Nodes[0].CPUs = seq(0, 47)
		j.Alloc.Nodes[0].MemMiB = 480 << 10
	}
	var queue []*cluster.Job
	for i := range 10000 {
		j := cpuMemJob(cluster.JobID(i+1), 1+i*7%16, 1+i*5%8, 1+i%12, 16*(1+i%8))
		j.Spec.Request.TimeLimit = time.Duration(1+i%120) * time.Minute
		queue = append(queue, j)
	}
	benchPass(b, nodes, running, queue)
}

// benchPass times whole passes as the leader makes them: a new View of
// nodes and running, and the shoal policy over queue.
func benchPass(b *testing.B, nodes []*cluster.Node, running, queue []*cluster.Job) {
	res, err := PlaceWith(NewView(nodes, running), queue, now, Options{Policy: PolicyShoal})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(res.Decisions)), "placed")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PlaceWith(NewView(nodes, running), queue, now, Options{Policy: PolicyShoal}); err != nil {
			b.Fatal(err)
		}
	}
}
