package stepd

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// readGolden reads one of Slurm's captured environments.
func readGolden(t *testing.T, name string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "shared", "peers", "slurm", "env_golden", name))
	if err != nil {
		t.Fatalf("golden environment: %v", err)
	}
	defer f.Close()
	golden := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			golden[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return golden
}

// compareGolden checks env against a golden Slurm environment: every
// Slurm name env sets must be in golden with the same value (except those
// in skip), every name of want must be set, and ENVIRONMENT and
// CUDA_VISIBLE_DEVICES must agree unless skipped.
func compareGolden(t *testing.T, env map[string]string, golden map[string]string, want []string, skip map[string]bool) {
	t.Helper()
	for k, v := range env {
		if skip[k] {
			continue
		}
		gv, ok := golden[k]
		switch {
		case ok && v != gv:
			t.Errorf("%s = %q; Slurm sets %q", k, v, gv)
		case !ok && strings.HasPrefix(k, "SLURM"):
			t.Errorf("%s = %q is not in Slurm's environment", k, v)
		}
	}
	for _, k := range []string{"ENVIRONMENT", "CUDA_VISIBLE_DEVICES"} {
		if skip[k] {
			continue
		}
		if v, ok := env[k]; golden[k] != v || ok != (golden[k] != "") {
			t.Errorf("%s = %q (set %v); Slurm sets %q", k, v, ok, golden[k])
		}
	}
	for _, k := range want {
		if _, ok := env[k]; !ok {
			t.Errorf("%s not set; Slurm sets %s=%q", k, k, golden[k])
		}
	}
}

// peerTopology is the place of n1 and n2 in the peer's switch tree:
// leaf1 under spine.
var peerTopology = cluster.Topology{Switch: "leaf1", SwitchParent: "spine"}

// Names Shoal sets that these Slurm runs did not: asked for without -c,
// never requeued.
var notInGolden = map[string]bool{"SLURM_CPUS_PER_TASK": true, "SLURM_RESTART_COUNT": true}

// envcheckJob is job 1 "envcheck" of the golden runs: sbatch -N2
// --ntasks-per-node=2 --gres=gpu:2, seen from node index i.
func envcheckJob(i int) task.Launch {
	nodes := []string{"n1", "n2"}
	return task.Launch{
		Topology: peerTopology,
		Job:      1, Incarnation: 1,
		Spec: cluster.Spec{
			Name: "envcheck", WorkDir: "/tmp/slurmpeer/env",
			User: "root", UID: 0, GID: 0, SubmitHost: "vm",
			Request: cluster.Request{Nodes: 2, GPUsPerNode: 2, TasksPerNode: 2, Partition: "gpu"},
			Batch:   &cluster.Batch{Script: "#!/bin/sh\n"},
		},
		ClusterName: "shoalpeer",
		Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{
			{Node: "n1", GPUs: []int{0, 1}}, {Node: "n2", GPUs: []int{0, 1}},
		}, MasterPort: 29500},
		NodeIndex: i, MasterAddr: "n1", NodeList: "n[1-2]", NodeName: nodes[i],
	}
}

var stepNames = []string{"SLURM_STEP_ID", "SLURM_STEPID", "SLURM_STEP_NODELIST",
	"SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_TASKS_PER_NODE",
	"SLURM_STEP_GPUS", "SLURM_GTIDS", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS",
	"SLURM_NPROCS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_TASKS_PER_NODE",
	"SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_GPUS_ON_NODE", "SLURM_JOB_GPUS",
	"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NAME", "SLURMD_NODENAME", "SLURM_SUBMIT_DIR"}

// TestEnvStepGolden compares the environment of step ranks with Slurm's
// srun tasks: envcheck's step 0 (srun inside the 2x2 batch job, 4 tasks
// on 2 nodes) and step 1 (srun -N1 -n1), and envgpt's step 0 (sbatch -N1
// -n2 --gpus-per-task=2, srun: each task sees its own two GPUs).
func TestEnvStepGolden(t *testing.T) {
	step0 := &cluster.Step{ID: 0, Incarnation: 1, Spec: cluster.StepSpec{Command: []string{"env"}},
		Nodes: []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 2}, {Node: "n2", FirstRank: 2, Tasks: 2}}}
	// srun -N1 -n1 --gres=gpu:1: a step that holds one of the job's GPUs.
	step1 := &cluster.Step{ID: 1, Incarnation: 1, Spec: cluster.StepSpec{Command: []string{"env"}, Nodes: 1, Exclusive: true, GPUs: 1},
		Nodes: []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 1, GPUs: []int{0}}}}
	gpt := task.Launch{
		Topology: peerTopology,
		Job:      6, Incarnation: 1,
		Spec: cluster.Spec{
			Name: "envgpt", WorkDir: "/tmp/slurmpeer/env", User: "root",
			Request: cluster.Request{Nodes: 1, GPUsPerNode: 4, TasksPerNode: 2},
			Batch:   &cluster.Batch{Script: "#!/bin/sh\n"},
		},
		Alloc:     cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1", GPUs: []int{0, 1, 2, 3}}}, MasterPort: 29501},
		NodeIndex: 0, MasterAddr: "n1", NodeList: "n1", NodeName: "n1",
		Step: &cluster.Step{ID: 0, Incarnation: 1, Spec: cluster.StepSpec{Command: []string{"env"}, GPUsPerTask: 2},
			Nodes: []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 2}}},
		StepNodeList: "n1",
	}
	with := func(l task.Launch, st *cluster.Step, list string) task.Launch {
		l.Step, l.StepNodeList = st, list
		return l
	}
	tests := []struct {
		golden string
		launch task.Launch
		local  int
		skip   map[string]bool
	}{
		{"envcheck.step0.task0.env", with(envcheckJob(0), step0, "n[1-2]"), 0, nil},
		{"envcheck.step0.task1.env", with(envcheckJob(0), step0, "n[1-2]"), 1, nil},
		{"envcheck.step0.task2.env", with(envcheckJob(1), step0, "n[1-2]"), 0, nil},
		{"envcheck.step0.task3.env", with(envcheckJob(1), step0, "n[1-2]"), 1, nil},
		// srun --gres=gpu:1 gave Slurm's step one GPU, as Shoal's.
		{"envcheck.step1.task0.env", with(envcheckJob(0), step1, "n1"), 0, nil},
		// Shoal always sets SLURM_NTASKS_PER_NODE; this job asked -n2.
		{"envgpt.step0.task0.env", gpt, 0, map[string]bool{"SLURM_NTASKS_PER_NODE": true}},
		{"envgpt.step0.task1.env", gpt, 1, map[string]bool{"SLURM_NTASKS_PER_NODE": true}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			golden := readGolden(t, tt.golden)
			env := envMap(t, Env(tt.launch, tt.local))
			skip := map[string]bool{}
			for k := range notInGolden {
				skip[k] = true
			}
			for k := range tt.skip {
				skip[k] = true
			}
			want := stepNames
			if tt.launch.Step.Spec.GPUsPerTask > 0 {
				want = append(slices.Clip(want), "SLURM_GPUS_PER_TASK", "SLURMD_TRES_BIND")
			}
			compareGolden(t, env, golden, want, skip)
			// torchrun's names follow Slurm's for the step.
			for torch, slurm := range map[string]string{"RANK": "SLURM_PROCID", "WORLD_SIZE": "SLURM_NTASKS",
				"LOCAL_RANK": "SLURM_LOCALID", "NODE_RANK": "SLURM_NODEID", "GROUP_RANK": "SLURM_NODEID",
				"SHOAL_PROCID": "SLURM_PROCID", "SHOAL_NTASKS": "SLURM_NTASKS", "SHOAL_NNODES": "SLURM_NNODES",
				"SHOAL_NODEID": "SLURM_NODEID", "SHOAL_STEP_ID": "SLURM_STEP_ID"} {
				if env[torch] != golden[slurm] {
					t.Errorf("%s = %q; want %s's %q", torch, env[torch], slurm, golden[slurm])
				}
			}
			if got, want := env["LOCAL_WORLD_SIZE"], strings.Count(golden["SLURM_GTIDS"], ",")+1; got != itoa(want) {
				t.Errorf("LOCAL_WORLD_SIZE = %q; want %d", got, want)
			}
			if env["MASTER_ADDR"] != tt.launch.MasterAddr || env["MASTER_PORT"] != itoa(tt.launch.Alloc.MasterPort) {
				t.Errorf("MASTER_ADDR:PORT = %s:%s; want the job's", env["MASTER_ADDR"], env["MASTER_PORT"])
			}
		})
	}
}

// TestEnvStepSpecEnv checks the step's own variables, its work of PATH
// and that the contract still wins over both lists.
func TestEnvStepSpecEnv(t *testing.T) {
	l := envcheckJob(1)
	l.Spec.Env = []string{"A=job", "B=job", "PATH=/usr/bin"}
	l.ShimDir = "/var/lib/shoal/shims"
	l.Step = &cluster.Step{ID: 4, Spec: cluster.StepSpec{Command: []string{"x"},
		Env: []string{"B=step", "SLURM_PROCID=9", "SHOAL_STEP_ID=9", "SLURM_STEP_ID=9"}},
		Nodes: []cluster.StepNode{{Node: "n2", FirstRank: 0, Tasks: 1}}}
	env := envMap(t, Env(l, 0))
	for k, want := range map[string]string{"A": "job", "B": "step", "SLURM_PROCID": "0",
		"SHOAL_STEP_ID": "4", "SLURM_STEP_ID": "4", "PATH": "/var/lib/shoal/shims:/usr/bin",
		"SLURM_NODEID": "0", "SLURMD_NODENAME": "n2", "SHOAL_NODE_NAME": "n2"} {
		if env[k] != want {
			t.Errorf("%s = %q; want %q", k, env[k], want)
		}
	}
	// srun passes on its caller's PATH, which already starts with the shims.
	l.Step.Spec.Env = []string{"PATH=/var/lib/shoal/shims:/bin"}
	if got := envMap(t, Env(l, 0))["PATH"]; got != "/var/lib/shoal/shims:/bin" {
		t.Errorf("PATH = %q; want the shim directory once", got)
	}
	// A job's own ranks get neither the shims nor step names.
	l.Step = nil
	l.Spec.Batch = nil
	l.Spec.Command = []string{"x"}
	env = envMap(t, Env(l, 0))
	if env["PATH"] != "/usr/bin" {
		t.Errorf("PATH of a job's own rank = %q; want the submitter's", env["PATH"])
	}
	for _, k := range []string{"SLURM_STEP_ID", "SHOAL_STEP_ID", "ENVIRONMENT", "SLURM_GTIDS"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s = %q set for a job's own rank", k, v)
		}
	}
}

// TestBatchEnvGolden compares BatchEnv with the environment of envcheck's
// batch shell.
func TestBatchEnvGolden(t *testing.T) {
	golden := readGolden(t, "envcheck.batch.env")
	l := envcheckJob(0)
	l.ShimDir = "/var/lib/shoal/shims"
	env := envMap(t, BatchEnv(l))
	want := []string{"ENVIRONMENT", "CUDA_VISIBLE_DEVICES", "SLURMD_NODENAME", "SLURM_GPUS_ON_NODE",
		"SLURM_GTIDS", "SLURM_JOBID", "SLURM_JOB_GID", "SLURM_JOB_GPUS", "SLURM_JOB_ID", "SLURM_JOB_NAME",
		"SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_JOB_UID", "SLURM_JOB_USER", "SLURM_LOCALID",
		"SLURM_NNODES", "SLURM_NODEID", "SLURM_NODELIST", "SLURM_NPROCS", "SLURM_NTASKS",
		"SLURM_NTASKS_PER_NODE", "SLURM_PROCID", "SLURM_SUBMIT_DIR", "SLURM_TASKS_PER_NODE"}
	// PATH: below, with the shim directory first.
	compareGolden(t, env, golden, want, map[string]bool{"SLURM_CPUS_PER_TASK": true,
		"SLURM_RESTART_COUNT": true, "PATH": true})
	for k, v := range map[string]string{
		"PATH":        "/var/lib/shoal/shims:" + golden["PATH"],
		"MASTER_ADDR": "n1", "MASTER_PORT": "29500", "SHOAL_JOB_ID": "1", "SHOAL_INCARNATION": "1",
		"SHOAL_NODE_NAME": "n1", "SHOAL_PROCID": "0", "SHOAL_NTASKS": "4", "SHOAL_NNODES": "2",
	} {
		if env[k] != v {
			t.Errorf("%s = %q; want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_STEP_ID", "SLURM_STEP_GPUS", "SHOAL_STEP_ID"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s = %q in a batch shell; Slurm sets none", k, v)
		}
	}
	// The batch shell sees the first node's GPUs, whichever node asks.
	l.Alloc.Nodes[0].GPUs = []int{4, 5}
	if got := envMap(t, BatchEnv(l))["CUDA_VISIBLE_DEVICES"]; got != "4,5" {
		t.Errorf("CUDA_VISIBLE_DEVICES = %q; want the first node's 4,5", got)
	}
}

// TestBatchEnvGoldenGPUsPerNode compares BatchEnv with the batch shell of
// Slurm's envgpn run (sbatch -N2 --gpus-per-node=4): the one that sets
// SLURM_GPUS_PER_NODE, which Ray's Slurm launcher reads.
func TestBatchEnvGoldenGPUsPerNode(t *testing.T) {
	golden := readGolden(t, "envgpn.batch.env")
	l := task.Launch{
		Topology: peerTopology,
		Job:      7, Incarnation: 1,
		Spec: cluster.Spec{
			Name: "envgpn", WorkDir: "/tmp/slurmpeer/env", User: "root", SubmitHost: "vm",
			Request: cluster.Request{Nodes: 2, GPUsPerNode: 4, TasksPerNode: 1, Partition: "gpu", GPUOption: cluster.GPUOptionPerNode},
			Batch:   &cluster.Batch{Script: "#!/bin/sh\n"},
		},
		Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{
			{Node: "n1", GPUs: []int{0, 1, 2, 3}}, {Node: "n2", GPUs: []int{0, 1, 2, 3}},
		}, MasterPort: 29500},
		NodeIndex: 0, MasterAddr: "n1", NodeList: "n[1-2]", NodeName: "n1", ClusterName: "shoalpeer",
	}
	env := envMap(t, BatchEnv(l))
	compareGolden(t, env, golden, []string{"SLURM_GPUS_PER_NODE", "SLURM_SUBMIT_HOST", "SLURM_CLUSTER_NAME",
		"SLURM_JOB_PARTITION", "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE", "GPU_DEVICE_ORDINAL"},
		map[string]bool{"SLURM_CPUS_PER_TASK": true, "PATH": true})
	l.Spec.Request.GPUOption = cluster.GPUOptionTotal
	env = envMap(t, BatchEnv(l))
	if env["SLURM_GPUS"] != "8" || env["SLURM_GPUS_PER_NODE"] != "" {
		t.Errorf("--gpus 8: SLURM_GPUS = %q, SLURM_GPUS_PER_NODE = %q; want 8 and unset", env["SLURM_GPUS"], env["SLURM_GPUS_PER_NODE"])
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestEnvArrayGolden compares array elements' batch shells and step tasks
// with Slurm's envarray run (sbatch --array=0-3%2, one GPU each): the
// SLURM_ARRAY_* names and every other name both set. The element and
// array ids are taken from the golden files, since Slurm numbers an
// array's elements its own way (README: arrays).
func TestEnvArrayGolden(t *testing.T) {
	arrayNames := []string{"SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT",
		"SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP"}
	for elem := range 4 {
		for _, ctx := range []string{"batch", "step0"} {
			name := "envarray.task" + itoa(elem) + "." + ctx + ".env"
			t.Run(name, func(t *testing.T) {
				golden := readGolden(t, name)
				id, _ := strconv.ParseUint(golden["SLURM_JOB_ID"], 10, 64)
				arrayID, _ := strconv.ParseUint(golden["SLURM_ARRAY_JOB_ID"], 10, 64)
				gpu, _ := strconv.Atoi(golden["SLURM_JOB_GPUS"])
				spec := &cluster.ArraySpec{Indices: []int{0, 1, 2, 3}, Throttle: 2}
				l := task.Launch{
					Topology: peerTopology,
					Job:      cluster.JobID(id), Incarnation: 1,
					Spec: cluster.Spec{Name: "envarray", WorkDir: "/tmp/slurmpeer/env", User: "root",
						Request: cluster.Request{Nodes: 1, GPUsPerNode: 1, TasksPerNode: 1},
						Batch:   &cluster.Batch{Script: "#!/bin/sh\n"}},
					Alloc:     cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1", GPUs: []int{gpu}}}, MasterPort: 29500},
					NodeIndex: 0, MasterAddr: "n1", NodeList: "n1", NodeName: "n1",
					Array: &spec.Elements(cluster.JobID(arrayID))[elem],
				}
				var env map[string]string
				if ctx == "batch" {
					env = envMap(t, BatchEnv(l))
				} else {
					l.Step = &cluster.Step{ID: 0, Incarnation: 1, Spec: cluster.StepSpec{Command: []string{"env"}},
						Nodes: []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 1}}}
					l.StepNodeList = "n1"
					env = envMap(t, Env(l, 0))
				}
				skip := map[string]bool{"SLURM_NTASKS_PER_NODE": true} // Shoal always sets it
				for k := range notInGolden {
					skip[k] = true
				}
				compareGolden(t, env, golden, arrayNames, skip)
			})
		}
	}
}

// TestEnvStepMasterFromCaller: a step's tasks get the MASTER_ADDR and
// MASTER_PORT srun's caller had (the batch script may export its own, as
// under Slurm), else the job's.
func TestEnvStepMasterFromCaller(t *testing.T) {
	l := envcheckJob(1)
	l.Step = &cluster.Step{ID: 0, Spec: cluster.StepSpec{Command: []string{"x"}},
		Nodes: []cluster.StepNode{{Node: "n2", FirstRank: 0, Tasks: 1}}}
	env := envMap(t, Env(l, 0))
	if env["MASTER_ADDR"] != "n1" || env["MASTER_PORT"] != "29500" {
		t.Errorf("without the caller's: MASTER_ADDR:PORT = %s:%s; want the job's n1:29500", env["MASTER_ADDR"], env["MASTER_PORT"])
	}
	l.Step.Spec.Env = []string{"MASTER_ADDR=head", "MASTER_PORT=29400"}
	env = envMap(t, Env(l, 0))
	if env["MASTER_ADDR"] != "head" || env["MASTER_PORT"] != "29400" {
		t.Errorf("with the caller's: MASTER_ADDR:PORT = %s:%s; want head:29400", env["MASTER_ADDR"], env["MASTER_PORT"])
	}
	// A job's own ranks keep the contract's, whatever was submitted.
	l.Step = nil
	l.Spec.Env = []string{"MASTER_PORT=1"}
	if got := envMap(t, Env(l, 0))["MASTER_PORT"]; got != "29500" {
		t.Errorf("a job's rank: MASTER_PORT = %s; want the contract's 29500", got)
	}
}

// TestEnvNTasksPerGPU: srun --ntasks-per-gpu=2 binds each task to one
// GPU, two tasks to a GPU in local order, as Slurm's --gpu-bind=single:2
// (SLURMD_TRES_BIND=gpu:single:2, as the peer sets it).
func TestEnvNTasksPerGPU(t *testing.T) {
	l := task.Launch{
		Job: 7, Incarnation: 1,
		Spec: cluster.Spec{Name: "npg", WorkDir: "/tmp", User: "root",
			Request: cluster.Request{Nodes: 1, GPUsPerNode: 2, TasksPerNode: 1}},
		Alloc:     cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1", GPUs: []int{4, 5}}}, MasterPort: 29501},
		NodeIndex: 0, MasterAddr: "n1", NodeList: "n1", NodeName: "n1",
		Step: &cluster.Step{ID: 0, Incarnation: 1, Spec: cluster.StepSpec{Command: []string{"env"}, NTasks: 5, NTasksPerGPU: 2},
			Nodes: []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 5}}},
		StepNodeList: "n1",
	}
	for local, want := range []string{"4", "4", "5", "5", "4"} {
		env := envMap(t, Env(l, local))
		if env["CUDA_VISIBLE_DEVICES"] != want || env["SLURMD_TRES_BIND"] != "gpu:single:2" {
			t.Errorf("task %d: CUDA_VISIBLE_DEVICES=%q SLURMD_TRES_BIND=%q; want %q and gpu:single:2",
				local, env["CUDA_VISIBLE_DEVICES"], env["SLURMD_TRES_BIND"], want)
		}
	}
}
