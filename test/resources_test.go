package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestConsumableResources: CPUs and memory are consumed as Slurm's
// cons_tres consumes them (DESIGN invariant 1, extended to CPUs and
// memory). Two 1-GPU jobs that each ask for 60 % of a node's CPUs never
// share a node, and a third waits with Resources, saying it is CPUs;
// --exclusive gets every CPU and all the memory; --mem larger than any
// node is refused at submit; a partition's DefMemPerGPU and DefCpuPerGPU
// fill what a job leaves out.
func TestConsumableResources(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 2, CPUs: 16, ExtraArgs: []string{"--memory", "8G"}})
	a := c.Agents[0]
	running := func(id uint64) api.Job {
		t.Helper()
		var j api.Job
		eventually(t, 30*time.Second, fmt.Sprintf("job %d running", id), func() error {
			if j = jobNow(t, a, id); j.State != "RUNNING" {
				return fmt.Errorf("%s (%s)", j.State, j.Reason)
			}
			return nil
		})
		return j
	}
	first := submit(t, a, "--gpus-per-node", "1", "-c", "10", "--mem", "1G", "--", "sleep", "300")
	second := submit(t, a, "--gpus-per-node", "1", "-c", "10", "--mem", "1G", "--", "sleep", "300")
	j1, j2 := running(first), running(second)
	if j1.Nodes[0] == j2.Nodes[0] {
		t.Errorf("jobs %d and %d, 10 of 16 CPUs each, share node %s", first, second, j1.Nodes[0])
	}
	for _, j := range []api.Job{j1, j2} {
		if got := j.Tasks[0].CPUs; got != "0-9" || j.Tasks[0].MemMiB != 1024 || j.CPUsPerNode != 10 {
			t.Errorf("job %d: CPUs %q, %d MiB, %d CPUs a node; want 0-9, 1024 MiB, 10", j.ID, got, j.Tasks[0].MemMiB, j.CPUsPerNode)
		}
	}
	// Six CPUs still fit beside each of them.
	small := submit(t, a, "--gpus-per-node", "1", "-c", "6", "--", "true")
	if j := waitJob(t, a, small, 30*time.Second); j.State != "COMPLETED" {
		t.Errorf("a 6-CPU job beside a 10-CPU one: %s (%s)", j.State, j.Reason)
	}
	// Both nodes still have a free GPU but only 6 free CPUs.
	third := submit(t, a, "--gpus-per-node", "1", "-c", "10", "--", "true")
	eventually(t, 20*time.Second, "the third job pending with Resources for CPUs", func() error {
		if j := jobNow(t, a, third); j.State != "PENDING" || j.Reason != "Resources" || !strings.HasPrefix(j.ReasonDetail, "CPUs: 0 of the 2 nodes") {
			return fmt.Errorf("%s (%s: %s)", j.State, j.Reason, j.ReasonDetail)
		}
		return nil
	})
	if out := mustShoal(t, a, "job", fmt.Sprint(third)); !strings.Contains(out, "ReasonDetail=waiting for CPUs") {
		t.Errorf("shoal job %d does not say it waits for CPUs:\n%s", third, out)
	}
	mustShoal(t, a, "cancel", fmt.Sprint(first))
	if j := waitJob(t, a, third, 30*time.Second); j.State != "COMPLETED" {
		t.Errorf("the third job once the first ended: %s (%s)", j.State, j.Reason)
	}
	mustShoal(t, a, "cancel", fmt.Sprint(second))
	waitJob(t, a, second, 30*time.Second)

	excl := submit(t, a, "--exclusive", "--", "sleep", "300")
	je := running(excl)
	if je.Tasks[0].CPUs != "0-15" || je.Tasks[0].MemMiB != 8192 {
		t.Errorf("--exclusive: CPUs %q, %d MiB; want 0-15 and all 8192", je.Tasks[0].CPUs, je.Tasks[0].MemMiB)
	}
	var nodes []api.Node
	jsonOf(t, a, &nodes, "nodes")
	for _, n := range nodes {
		if n.Name == je.Nodes[0] && (n.CPUsAlloc != 16 || n.MemAllocMiB != 8192) {
			t.Errorf("node %s under an exclusive job: %d CPUs, %d MiB allocated; want 16 and 8192", n.Name, n.CPUsAlloc, n.MemAllocMiB)
		}
	}
	mustShoal(t, a, "cancel", fmt.Sprint(excl))
	waitJob(t, a, excl, 30*time.Second)

	if r := shoal(t, a, "submit", "--mem", "9G", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "mem 9216 MiB per node (the largest node has 8192 MiB)") {
		t.Errorf("--mem 9G on 8G nodes: exit %d %q; want refused naming the memory", r.code, r.stderr)
	}
	if r := shoal(t, a, "submit", "-c", "17", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "17 CPUs per node") {
		t.Errorf("-c 17 on 16-CPU nodes: exit %d %q; want refused naming the CPUs", r.code, r.stderr)
	}

	// A partition's defaults fill what a job leaves out.
	setPolicy(t, a, `{"partitions": {"gpu": {"default": true, "def_mem_per_gpu": "2G", "def_cpu_per_gpu": 4, "max_mem_per_node": "6G"}}}`)
	def := submit(t, a, "--gpus-per-node", "2", "--", "true")
	if j := waitJob(t, a, def, 30*time.Second); j.State != "COMPLETED" || j.MemPerNodeMiB != 4096 || j.CPUsPerNode != 8 || j.CPUsPerGPU != 4 {
		t.Errorf("a 2-GPU job in a partition with DefMemPerGPU 2G, DefCpuPerGPU 4: %s, %d MiB, %d CPUs (%d per GPU); want COMPLETED, 4096, 8 (4)",
			j.State, j.MemPerNodeMiB, j.CPUsPerNode, j.CPUsPerGPU)
	}
	if r := shoal(t, a, "submit", "--mem", "7G", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "MaxMemPerNode") {
		t.Errorf("--mem 7G in a partition with MaxMemPerNode 6G: exit %d %q; want refused naming MaxMemPerNode", r.code, r.stderr)
	}
}
