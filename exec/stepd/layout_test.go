package stepd

import (
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// unevenJob is sbatch -n 5 -N 2 [-m dist] -c 2 seen from node index i: 3
// ranks on the first node, 2 on the second (Slurm's SLURM_TASKS_PER_NODE
// would read 3,2 on nodes whose CPUs it spreads over, as srun -n 5 does).
func unevenJob(i int, dist string, batch bool) task.Launch {
	l := twoByTwo()
	l.Spec.Request = cluster.Request{Nodes: 2, TasksPerNode: 3, NTasks: 5, Distribution: dist, CPUsPerTask: 2}
	l.Alloc.Nodes[0].CPUs = []int{0, 1, 2, 3, 4, 5}
	l.Alloc.Nodes[1].CPUs = []int{0, 1, 2, 3}
	l.Topology = cluster.Topology{Switch: "leaf1", SwitchParent: "spine"}
	l.NodeIndex, l.NodeName = i, l.Alloc.Nodes[i].Node
	if batch {
		l.Spec.Batch = &cluster.Batch{Script: "#!/bin/sh\n"}
	}
	return l
}

// TestEnvUneven: the ranks of a job whose -n does not divide by -N, laid
// out in blocks or round robin, as Slurm's srun numbers them
// (SLURM_PROCID, SLURM_NODEID, SLURM_LOCALID; see slurm.TestLayout).
func TestEnvUneven(t *testing.T) {
	tests := []struct {
		dist        string
		node, local int
		want        map[string]string
	}{
		{"", 0, 2, map[string]string{"RANK": "2", "SLURM_PROCID": "2", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "3", "NODE_RANK": "0"}},
		{"", 1, 0, map[string]string{"RANK": "3", "SLURM_PROCID": "3", "LOCAL_WORLD_SIZE": "2", "NODE_RANK": "1", "SLURM_CPUS_ON_NODE": "4"}},
		{"", 1, 1, map[string]string{"RANK": "4", "SLURM_LOCALID": "1", "SLURM_NODEID": "1"}},
		{"cyclic", 0, 1, map[string]string{"RANK": "2", "SLURM_DISTRIBUTION": "cyclic", "LOCAL_WORLD_SIZE": "3"}},
		{"cyclic", 1, 1, map[string]string{"RANK": "3", "SLURM_PROCID": "3", "SHOAL_PROCID": "3"}},
		{"plane=2", 0, 2, map[string]string{"RANK": "4", "SLURM_DISTRIBUTION": "plane"}},
	}
	for _, tt := range tests {
		env := envMap(t, Env(unevenJob(tt.node, tt.dist, false), tt.local))
		common := map[string]string{"WORLD_SIZE": "5", "SLURM_NTASKS": "5", "SLURM_NPROCS": "5",
			"SLURM_TASKS_PER_NODE": "3,2", "SLURM_JOB_CPUS_PER_NODE": "6,4",
			"SLURM_TOPOLOGY_ADDR":         "spine.leaf1." + []string{"n1", "n2"}[tt.node],
			"SLURM_TOPOLOGY_ADDR_PATTERN": "switch.switch.node"}
		for k, v := range common {
			if env[k] != v {
				t.Errorf("-m %q node %d local %d: %s = %q; want %q", tt.dist, tt.node, tt.local, k, env[k], v)
			}
		}
		for k, v := range tt.want {
			if env[k] != v {
				t.Errorf("-m %q node %d local %d: %s = %q; want %q", tt.dist, tt.node, tt.local, k, env[k], v)
			}
		}
		if v, ok := env["SLURM_NTASKS_PER_NODE"]; ok {
			t.Errorf("SLURM_NTASKS_PER_NODE = %q for a job given -n; Slurm leaves it unset", v)
		}
		if v, ok := env["SLURM_DISTRIBUTION"]; ok != (tt.dist != "") {
			t.Errorf("-m %q: SLURM_DISTRIBUTION = %q (set %v); Slurm sets it only when asked", tt.dist, v, ok)
		}
	}

	// The batch shell: the job's layout, and -m only when asked
	// (sbatch -n5 -N2 -m cyclic on the peer: SLURM_TASKS_PER_NODE and
	// SLURM_DISTRIBUTION=cyclic).
	env := envMap(t, BatchEnv(unevenJob(0, "cyclic", true)))
	for k, v := range map[string]string{"SLURM_TASKS_PER_NODE": "3,2", "SLURM_NTASKS": "5",
		"SLURM_DISTRIBUTION": "cyclic", "SLURM_CPUS_ON_NODE": "6", "SLURM_JOB_CPUS_PER_NODE": "6,4"} {
		if env[k] != v {
			t.Errorf("batch: %s = %q; want %q", k, env[k], v)
		}
	}

	// A step laid out round robin: each task's rank and its node's ranks.
	l := unevenJob(0, "", true)
	l.Step = &cluster.Step{ID: 1, Spec: cluster.StepSpec{Command: []string{"x"}, Nodes: 2, TasksPerNode: 3, NTasks: 5, Distribution: "cyclic"},
		Nodes: []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 3}, {Node: "n2", FirstRank: 1, Tasks: 2}}}
	l.StepNodeList = "n[1-2]"
	env = envMap(t, Env(l, 2))
	for k, v := range map[string]string{"SLURM_PROCID": "4", "RANK": "4", "SLURM_GTIDS": "0,2,4",
		"SLURM_STEP_TASKS_PER_NODE": "3,2", "SLURM_DISTRIBUTION": "cyclic", "LOCAL_WORLD_SIZE": "3"} {
		if env[k] != v {
			t.Errorf("cyclic step: %s = %q; want %q", k, env[k], v)
		}
	}
	l = unevenJob(1, "", true)
	l.Step = &cluster.Step{ID: 1, Spec: cluster.StepSpec{Command: []string{"x"}, Nodes: 2, TasksPerNode: 3, NTasks: 5, Distribution: "cyclic"},
		Nodes: []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 3}, {Node: "n2", FirstRank: 1, Tasks: 2}}}
	env = envMap(t, Env(l, 1))
	if env["SLURM_PROCID"] != "3" || env["SLURM_GTIDS"] != "1,3" {
		t.Errorf("cyclic step, second node, local 1: SLURM_PROCID %q, SLURM_GTIDS %q; want 3 and 1,3", env["SLURM_PROCID"], env["SLURM_GTIDS"])
	}
}

// TestLaunchPlanUneven: each node runs its share of the job's ranks.
func TestLaunchPlanUneven(t *testing.T) {
	for i, want := range []int{3, 2} {
		l := unevenJob(i, "", false)
		p, err := l.Plan(l.NodeName)
		if err != nil {
			t.Fatalf("node %d: Plan: %v", i, err)
		}
		if p.Ranks != want || p.First != 3*i {
			t.Errorf("node %d: Plan runs %d ranks from %d; want %d from %d", i, p.Ranks, p.First, want, 3*i)
		}
	}
}
