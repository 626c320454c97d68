package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestPartitions: partitions declared in the agents' --policy file are in
// force: a job without -p goes to the default partition and gets its
// default time limit, -p keeps a job on its partition's nodes, an unknown
// partition and a request too big for its partition are refused at
// submit, a job asking for more than MaxTime pends PartitionTimeLimit,
// and sinfo, squeue and scontrol show the partitions.
func TestPartitions(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[0]
	nodes := nodesByName(t, a)
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	// gpu: the first two nodes, the default; debug: the third.
	setPolicy(t, a, fmt.Sprintf(`{"partitions": {
		"gpu":   {"nodes": "%s,%s", "default": true, "default_time": "10:00", "max_time": "1:00:00"},
		"debug": {"nodes": "%s", "max_time": "5:00"}
	}}`, names[0], names[1], names[2]))

	slurmCmd := newSlurmShims(t, a).run
	sbatch := func(args ...string) uint64 {
		t.Helper()
		r := slurmCmd("sbatch", append([]string{"--parsable", "--chdir", t.TempDir()}, args...)...)
		if r.code != 0 {
			t.Fatalf("sbatch %v: exit %d: %s", args, r.code, r.stderr)
		}
		var id uint64
		fmt.Sscan(r.stdout, &id)
		return id
	}
	job := func(id uint64) api.Job {
		t.Helper()
		var j api.Job
		jsonOf(t, a, &j, "job", fmt.Sprint(id))
		return j
	}

	def := sbatch("--wrap", "true")
	dbg := sbatch("-p", "debug", "--wrap", "hostname")
	over := sbatch("-p", "debug", "-t", "10:00", "--wrap", "true")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "cpu", "--wrap", "true"}, `partition "cpu": no such partition`},
		{[]string{"-p", "debug", "-N", "2", "--wrap", "true"}, "partition debug: nodes 2: the cluster has 1 node"},
	} {
		if r := slurmCmd("sbatch", append([]string{"--chdir", t.TempDir()}, tc.args...)...); r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sbatch %v: exit %d %q; want refused with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if j := waitJob(t, a, def, 30*time.Second); j.State != "COMPLETED" || j.Partition != "gpu" || j.TimeLimitS != 600 || j.Nodes[0] == names[2] {
		t.Errorf("job without -p: %s in %q, limit %ds, on %v; want COMPLETED in gpu, 600 s, not on %s", j.State, j.Partition, j.TimeLimitS, j.Nodes, names[2])
	}
	if j := waitJob(t, a, dbg, 30*time.Second); j.State != "COMPLETED" || j.Partition != "debug" || j.TimeLimitS != 300 || j.Nodes[0] != names[2] {
		t.Errorf("job -p debug: %s in %q, limit %ds, on %v; want COMPLETED in debug, 300 s, on %s", j.State, j.Partition, j.TimeLimitS, j.Nodes, names[2])
	}
	eventually(t, 10*time.Second, "the over-limit job's reason", func() error {
		if j := job(over); j.State != "PENDING" || j.Reason != "PartitionTimeLimit" {
			return fmt.Errorf("%s (%s)", j.State, j.Reason)
		}
		return nil
	})
	if got := strings.TrimSpace(slurmCmd("squeue", "-h", "-j", fmt.Sprint(over), "-o", "%P %r").stdout); got != "debug PartitionTimeLimit" {
		t.Errorf("squeue -o '%%P %%r' = %q; want debug PartitionTimeLimit", got)
	}
	got := slurmCmd("sinfo", "-h", "-o", "%P %l %D").stdout
	if want := "debug 5:00 1\ngpu* 1:00:00 2\n"; got != want {
		t.Errorf("sinfo -o '%%P %%l %%D':\n%s\nwant:\n%s", got, want)
	}
	if r := slurmCmd("scontrol", "show", "partition", "debug"); !strings.Contains(r.stdout, "PartitionName=debug") || !strings.Contains(r.stdout, "MaxTime=5:00") {
		t.Errorf("scontrol show partition debug:\n%s%s", r.stdout, r.stderr)
	}
}

// TestTestOnly: sbatch --test-only says when and where a job could start
// and submits nothing: now on a free node, at a running job's time limit
// when the nodes are taken; a request no node could hold is refused.
func TestTestOnly(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 2})
	a := c.Agents[0]
	shims := newSlurmShims(t, a)
	sbatch := func(args ...string) cliResult {
		return shims.run("sbatch", append([]string{"--chdir", t.TempDir()}, args...)...)
	}
	r := sbatch("--test-only", "--gpus-per-node=2", "--wrap", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "sbatch: Job 1 to start at ") || !strings.Contains(r.stderr, "using 1 processors on nodes n1 in partition shoal") {
		t.Fatalf("sbatch --test-only on an idle node: exit %d %q", r.code, r.stderr)
	}
	var jobs []api.Job
	jsonOf(t, a, &jobs, "queue", "--all")
	if len(jobs) != 0 {
		t.Fatalf("--test-only submitted %d jobs", len(jobs))
	}
	// A running job with a 10-minute limit holds the GPUs: the estimate
	// is its end.
	id := submit(t, a, "--gpus-per-node", "2", "--time", "10:00", "--", "sleep", "60")
	waitState(t, a, id, "RUNNING", "")
	r = sbatch("--test-only", "--gpus-per-node=2", "--wrap", "true")
	if r.code != 0 {
		t.Fatalf("sbatch --test-only behind a job: exit %d %q", r.code, r.stderr)
	}
	var j api.Job
	jsonOf(t, a, &j, "job", fmt.Sprint(id))
	started, _ := time.Parse(time.RFC3339, j.StartTime)
	if want := started.Add(10 * time.Minute).Local().Format("2006-01-02T15:04:05"); !strings.Contains(r.stderr, "to start at "+want) {
		t.Errorf("estimate %q; want the blocker's end %s", r.stderr, want)
	}
	if r := sbatch("--test-only", "--gpus-per-node=4", "--wrap", "true"); r.code == 0 || !strings.Contains(r.stderr, "gpus_per_node 4") {
		t.Errorf("--test-only of an impossible job: exit %d %q; want refused", r.code, r.stderr)
	}
}

// jobNow returns job id as agent a sees it now.
func jobNow(t *testing.T, a *localcluster.Agent, id uint64) api.Job {
	t.Helper()
	var j api.Job
	jsonOf(t, a, &j, "job", fmt.Sprint(id))
	return j
}

// TestGPUsAndMemory: --gpus without --nodes goes over the fewest nodes
// that hold it evenly; --mem keeps a job off nodes with less memory, and
// one no node has is refused at submit naming it.
func TestGPUsAndMemory(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 4})
	a := c.Agents[0]
	id := submit(t, a, "--gpus", "6", "--", "true")
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" || j.NumNodes != 2 || j.GPUsPerNode != 3 {
		t.Errorf("--gpus 6 on 4-GPU nodes: %s on %d nodes x %d GPUs; want COMPLETED on 2 x 3", j.State, j.NumNodes, j.GPUsPerNode)
	}
	id = submit(t, a, "--gpus", "3", "--", "true")
	if j := waitJob(t, a, id, 30*time.Second); j.NumNodes != 1 || j.GPUsPerNode != 3 {
		t.Errorf("--gpus 3: %d nodes x %d GPUs; want 1 x 3", j.NumNodes, j.GPUsPerNode)
	}
	// -N 1-3 on a 2-node cluster: as many as fit, 2.
	work := t.TempDir()
	out := mustShoal(t, a, "batch", "--parsable", "--chdir", work, "-N", "1-3", "-o", "range.out", "--wrap", `echo "nnodes $SLURM_NNODES"`)
	var rid uint64
	fmt.Sscan(out, &rid)
	if j := waitJob(t, a, rid, 30*time.Second); j.State != "COMPLETED" || j.NumNodes != 2 {
		t.Errorf("-N 1-3: %s on %d nodes; want COMPLETED on 2", j.State, j.NumNodes)
	}
	if data, _ := os.ReadFile(filepath.Join(work, "range.out")); !strings.Contains(string(data), "nnodes 2") {
		t.Errorf("-N 1-3: the script saw %q; want SLURM_NNODES 2", data)
	}
	id = submit(t, a, "--mem", "1M", "--", "true")
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" {
		t.Errorf("--mem 1M: %s", j.State)
	}
	if r := shoal(t, a, "submit", "--mem", "64T", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "mem 67108864 MiB") {
		t.Errorf("--mem 64T: exit %d %q; want refused naming the memory", r.code, r.stderr)
	}
}

// TestTopologyConf: agents started with a Slurm topology.conf take their
// leaf switch and its parent from it, and a 2-node job goes under one
// leaf.
func TestTopologyConf(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "topology.conf")
	if err := os.WriteFile(conf, []byte("SwitchName=leaf1 Nodes=n[1,3]\nSwitchName=leaf2 Nodes=n[2,4]\nSwitchName=core Switches=leaf[1-2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, localcluster.Options{Nodes: 4, GPUsPerNode: 1, TopologyConf: conf})
	a := c.Agents[0]
	eventually(t, 20*time.Second, "every node's switch from topology.conf", func() error {
		nodes := nodesByName(t, a)
		for name, want := range map[string]string{"n1": "leaf1", "n2": "leaf2", "n3": "leaf1", "n4": "leaf2"} {
			if n := nodes[name]; n.Switch != want || n.SwitchParent != "core" {
				return fmt.Errorf("%s under %q/%q; want %s/core", name, n.Switch, n.SwitchParent, want)
			}
		}
		return nil
	})
	id := submit(t, a, "-N", "2", "--gpus-per-node", "1", "--", "true")
	j := waitJob(t, a, id, 30*time.Second)
	leaf := map[string]string{"n1": "A", "n3": "A", "n2": "B", "n4": "B"}
	if j.State != "COMPLETED" || len(j.Nodes) != 2 || leaf[j.Nodes[0]] != leaf[j.Nodes[1]] {
		t.Errorf("2-node job %s on %v; want COMPLETED under one leaf", j.State, j.Nodes)
	}
}
