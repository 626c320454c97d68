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
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, fmt.Appendf(nil, `{"partitions": {
		"gpu":   {"nodes": "%s,%s", "default": true, "default_time": "10:00", "max_time": "1:00:00"},
		"debug": {"nodes": "%s", "max_time": "5:00"}
	}}`, names[0], names[1], names[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	mustShoal(t, a, "policy", "set", policy)

	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	env := []string{"SHOAL_DATA_DIR=" + a.DataDir}
	slurmCmd := func(name string, args ...string) cliResult {
		t.Helper()
		return runEnv(t, env, filepath.Join(shims, name), args...)
	}
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
