package stepd

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("entry %q: not KEY=VALUE", kv)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("key %s set twice", k)
		}
		m[k] = v
	}
	return m
}

func twoByTwo() task.Launch {
	return task.Launch{
		Job:         42,
		Incarnation: 3,
		Spec: cluster.Spec{
			Name:    "train",
			Command: []string{"/bin/true"},
			WorkDir: "/home/ada/run",
			User:    "ada", UID: 1000, GID: 100,
			Request: cluster.Request{Nodes: 2, GPUsPerNode: 2, TasksPerNode: 2, CPUsPerTask: 8},
		},
		Alloc: cluster.Allocation{
			Nodes:      []cluster.NodeAlloc{{Node: "n1", GPUs: []int{0, 1}}, {Node: "n2", GPUs: []int{2, 3}}},
			MasterPort: 29500,
		},
		NodeIndex:  1,
		MasterAddr: "10.0.0.1",
		NodeList:   "n[1-2]",
		NodeName:   "n2",
	}
}

// sameValue groups the contract's names of one notion (DESIGN "The
// environment contract of a rank"): for a job's rank each group's names
// are all set, to one value, or none is.
var sameValue = [][]string{
	{"SLURM_JOB_ID", "SLURM_JOBID", "SHOAL_JOB_ID"},
	{"SLURM_JOB_NAME", "SHOAL_JOB_NAME"},
	{"SLURM_JOB_NODELIST", "SLURM_NODELIST", "SHOAL_NODELIST"},
	{"SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SHOAL_NNODES"},
	{"SLURM_NTASKS", "SLURM_NPROCS", "SHOAL_NTASKS", "WORLD_SIZE"},
	{"SLURM_PROCID", "SHOAL_PROCID", "RANK"},
	{"SLURM_LOCALID", "SHOAL_LOCALID", "LOCAL_RANK"},
	{"SLURM_NODEID", "SHOAL_NODEID", "NODE_RANK", "GROUP_RANK"},
	{"SLURMD_NODENAME", "SHOAL_NODE_NAME"},
	{"SLURM_JOB_USER", "USER", "LOGNAME"},
	{"SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES"},
}

// withSameValues returns want with, for each sameValue group whose first
// name it holds, the group's other names set to that value.
func withSameValues(t *testing.T, want map[string]string) map[string]string {
	t.Helper()
	out := maps.Clone(want)
	for _, g := range sameValue {
		v, ok := want[g[0]]
		if !ok {
			continue
		}
		for _, k := range g[1:] {
			if _, dup := want[k]; dup {
				t.Fatalf("want names %s and %s: give only the first of a sameValue group", g[0], k)
			}
			out[k] = v
		}
	}
	return out
}

// TestEnvContract checks every variable of the environment contract
// (DESIGN "The environment contract of a rank") for given ranks.
func TestEnvContract(t *testing.T) {
	oneNode := task.Launch{
		Job: 7, Incarnation: 1,
		Spec: cluster.Spec{Command: []string{"/opt/bin/job.sh"}, WorkDir: "/w", User: "bob", UID: 2000, GID: 2000},
		Alloc: cluster.Allocation{
			Nodes: []cluster.NodeAlloc{{Node: "a1"}}, MasterPort: 30000,
		},
		MasterAddr: "a1", NodeList: "a1",
	}
	tests := []struct {
		name   string
		launch task.Launch
		local  int
		want   map[string]string
	}{
		// Each want names one variable of a sameValue group for all.
		{"2x2 rank 3", twoByTwo(), 1, map[string]string{
			"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "SLURM_NTASKS": "4", "SLURM_PROCID": "3",
			"SLURM_LOCALID": "1", "LOCAL_WORLD_SIZE": "2", "SLURM_NODEID": "1",
			"CUDA_VISIBLE_DEVICES": "2,3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
			"SLURM_JOB_ID": "42", "SLURM_JOB_NAME": "train", "SLURM_JOB_NODELIST": "n[1-2]",
			"SLURM_NNODES": "2", "SLURM_NTASKS_PER_NODE": "2", "SLURM_TASKS_PER_NODE": "2(x2)",
			"SLURM_GPUS_ON_NODE": "2", "SLURM_JOB_GPUS": "2,3", "SLURM_CPUS_PER_TASK": "8",
			"SLURM_SUBMIT_DIR": "/home/ada/run", "SLURMD_NODENAME": "n2", "SLURM_JOB_USER": "ada",
			"SLURM_JOB_UID": "1000", "SLURM_JOB_GID": "100", "SLURM_RESTART_COUNT": "2",
			"SHOAL_INCARNATION": "3", "PATH": defaultPath,
			"SLURM_CPUS_ON_NODE": "16", "SLURM_JOB_CPUS_PER_NODE": "16(x2)",
			"SLURM_TOPOLOGY_ADDR": "n2", "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
		}},
		{"1 node no GPUs defaults", oneNode, 0, map[string]string{
			"MASTER_ADDR": "a1", "MASTER_PORT": "30000", "SLURM_NTASKS": "1", "SLURM_PROCID": "0",
			"SLURM_LOCALID": "0", "LOCAL_WORLD_SIZE": "1", "SLURM_NODEID": "0",
			"CUDA_VISIBLE_DEVICES": "", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
			"SLURM_JOB_ID": "7", "SLURM_JOB_NAME": "job.sh", "SLURM_JOB_NODELIST": "a1",
			"SLURM_NNODES": "1", "SLURM_NTASKS_PER_NODE": "1", "SLURM_TASKS_PER_NODE": "1",
			"SLURM_GPUS_ON_NODE": "0", "SLURM_CPUS_PER_TASK": "1",
			"SLURM_SUBMIT_DIR": "/w", "SLURMD_NODENAME": "a1", "SLURM_JOB_USER": "bob",
			"SLURM_JOB_UID": "2000", "SLURM_JOB_GID": "2000",
			"SHOAL_INCARNATION": "1", "PATH": defaultPath,
			"SLURM_CPUS_ON_NODE": "1", "SLURM_JOB_CPUS_PER_NODE": "1",
			"SLURM_TOPOLOGY_ADDR": "a1", "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env(tt.launch, tt.local)
			if !slices.IsSorted(env) {
				t.Errorf("Env(...) is not sorted: %q", env)
			}
			got := envMap(t, env)
			want := withSameValues(t, tt.want)
			for k, want := range want {
				if v, ok := got[k]; !ok || v != want {
					t.Errorf("Env(...)[%s] = %q (set %v); want %q", k, v, ok, want)
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("Env(...) sets unexpected %s=%q", k, v)
				}
			}
		})
	}
}

// TestEnvSpecEnv checks that the submitter's variables come through, later
// ones winning, and that the contract wins over them.
func TestEnvSpecEnv(t *testing.T) {
	l := twoByTwo()
	l.Incarnation = 1
	l.Spec.Env = []string{
		"FOO=1", "FOO=2", "PATH=/custom/bin", "HOME=/h",
		"RANK=99", "SLURM_JOB_ID=1", "SLURM_RESTART_COUNT=5", "SHOAL_NODEID=7",
		"CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_ARRAY_TASK_ID=4", "USER=other", "bogus",
	}
	got := envMap(t, contractEnv(l, 0, "/home/ada"))
	for k, want := range map[string]string{
		"FOO": "2", "PATH": "/custom/bin", "HOME": "/h", "RANK": "2", "SLURM_JOB_ID": "42",
		"SHOAL_NODEID": "1", "CUDA_VISIBLE_DEVICES": "2,3",
		"USER": "other", "LOGNAME": "ada",
	} {
		if got[k] != want {
			t.Errorf("Env(...)[%s] = %q; want %q", k, got[k], want)
		}
	}
	// A stale array id from the submit shell (an sbatch run inside an
	// array element) must not make this job look like an element.
	if v, ok := got["SLURM_ARRAY_TASK_ID"]; ok {
		t.Errorf("SLURM_ARRAY_TASK_ID = %q from the submitter; want it dropped", v)
	}
	if v, ok := got["SLURM_RESTART_COUNT"]; ok {
		t.Errorf("SLURM_RESTART_COUNT = %q on the first incarnation; want unset", v)
	}
	if _, ok := got["bogus"]; ok {
		t.Errorf("malformed entry passed through")
	}
	if got := envMap(t, contractEnv(twoByTwo(), 0, "/home/ada"))["HOME"]; got != "/home/ada" {
		t.Errorf("HOME = %q; want the looked-up /home/ada", got)
	}
}

// TestEnvGolden compares the names Shoal sets with a real Slurm task's
// environment: srun -N2 --ntasks-per-node=2 --gres=gpu:2, task 1 (node n1,
// local id 1) of job 1 "envcheck".
func TestEnvGolden(t *testing.T) {
	golden := readGolden(t, "envcheck.step0.task1.env")
	// envcheck's job on n1, run as a command (srun env), not a script.
	l := envcheckJob(0)
	l.Spec.Command, l.Spec.Batch = []string{"env"}, nil
	got := envMap(t, contractEnv(l, 1, "/root"))
	// Names Shoal sets that this Slurm run did not: asked for without -c,
	// and never requeued.
	notInGolden := map[string]bool{"SLURM_CPUS_PER_TASK": true, "SLURM_RESTART_COUNT": true,
		"USER": true, "LOGNAME": true}
	checked := 0
	for k, v := range got {
		gv, ok := golden[k]
		switch {
		case ok:
			checked++
			if v != gv {
				t.Errorf("%s = %q; Slurm sets %q", k, v, gv)
			}
		case strings.HasPrefix(k, "SLURM") && !notInGolden[k]:
			t.Errorf("%s = %q is not in Slurm's environment", k, v)
		}
	}
	if checked < 25 {
		t.Errorf("only %d names compared with the golden file; want at least 25", checked)
	}
}

// TestEnvJobDescription: the job's partition, account, QoS, memory and the
// cluster's name reach every rank under Slurm's names, and are left unset
// where the job or the cluster has none.
func TestEnvJobDescription(t *testing.T) {
	l := twoByTwo()
	l.Spec.Request.Partition, l.Spec.Account, l.Spec.QoS = "gpu", "physics", "high"
	l.Spec.Request.MemPerNodeMiB = 64000
	l.ClusterName = "lab"
	got := envMap(t, Env(l, 0))
	for k, want := range map[string]string{
		"SLURM_JOB_PARTITION": "gpu", "SLURM_JOB_ACCOUNT": "physics", "SLURM_JOB_QOS": "high",
		"SLURM_MEM_PER_NODE": "64000", "SLURM_CLUSTER_NAME": "lab",
	} {
		if got[k] != want {
			t.Errorf("%s = %q; want %q", k, got[k], want)
		}
	}
	bare := envMap(t, Env(twoByTwo(), 0))
	for _, k := range []string{"SLURM_JOB_PARTITION", "SLURM_JOB_ACCOUNT", "SLURM_JOB_QOS", "SLURM_MEM_PER_NODE", "SLURM_CLUSTER_NAME"} {
		if v, ok := bare[k]; ok {
			t.Errorf("%s = %q for a job and cluster that name none; want unset", k, v)
		}
	}
}
