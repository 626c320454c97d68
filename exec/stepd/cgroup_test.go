package stepd

import (
	"reflect"
	"testing"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

func TestTaskLimits(t *testing.T) {
	canon := []int{0, 2, 1, 3} // two cores, threads numbered side by side
	launch := func(na cluster.NodeAlloc) task.Launch {
		na.Node = "n2"
		return task.Launch{NodeIndex: 1, Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1"}, na}}}
	}
	for _, tc := range []struct {
		name    string
		l       task.Launch
		has     cgroup.Controller
		pids    int64
		job     cgroup.Limits
		task    cgroup.Limits
		approx  bool
		wantErr bool
	}{
		{name: "nothing asked: no cpuset, no memory limit, GPUs none", l: launch(cluster.NodeAlloc{}), has: cgroup.All,
			job: cgroup.Limits{ConfineGPUs: true}},
		{name: "everything", l: launch(cluster.NodeAlloc{CPUs: []int{0, 1}, MemMiB: 512, GPUs: []int{1, 3}}), has: cgroup.All, pids: 4096,
			job:  cgroup.Limits{CPUs: []int{0, 2}, MemoryBytes: 512 << 20, ConfineGPUs: true, GPUs: []int{1, 3}},
			task: cgroup.Limits{PidsMax: 4096}},
		{name: "memory below Slurm's MinRAMSpace", l: launch(cluster.NodeAlloc{MemMiB: 1}), has: cgroup.Memory,
			job: cgroup.Limits{MemoryBytes: 30 << 20}},
		{name: "simulated node larger than the host", l: launch(cluster.NodeAlloc{CPUs: []int{4, 5}}), has: cgroup.CPUSet,
			job: cgroup.Limits{CPUs: []int{0, 2}}, approx: true},
		{name: "v2 without devices, memory or pids", l: launch(cluster.NodeAlloc{CPUs: []int{2}, MemMiB: 64, GPUs: []int{0}}), has: cgroup.CPUSet, pids: 10,
			job: cgroup.Limits{CPUs: []int{1}}},
		{name: "an exclusive step's task: its own CPUs and GPUs", l: withStep(launch(cluster.NodeAlloc{CPUs: []int{0, 1, 2, 3}, GPUs: []int{4, 5, 6, 7}}),
			cluster.StepNode{Node: "n2", Tasks: 1, GPUs: []int{5}, CPUs: []int{1}}, true), has: cgroup.All,
			job:  cgroup.Limits{CPUs: []int{0, 1, 2, 3}, ConfineGPUs: true, GPUs: []int{4, 5, 6, 7}},
			task: cgroup.Limits{CPUs: []int{2}, ConfineGPUs: true, GPUs: []int{5}}},
		{name: "an exclusive step that asked for no GPUs sees none", l: withStep(launch(cluster.NodeAlloc{GPUs: []int{4}}),
			cluster.StepNode{Node: "n2", Tasks: 1}, true), has: cgroup.Devices,
			job:  cgroup.Limits{ConfineGPUs: true, GPUs: []int{4}},
			task: cgroup.Limits{ConfineGPUs: true}},
		{name: "a shared step's task: the job's", l: withStep(launch(cluster.NodeAlloc{GPUs: []int{4}}),
			cluster.StepNode{Node: "n2", Tasks: 1}, false), has: cgroup.Devices,
			job: cgroup.Limits{ConfineGPUs: true, GPUs: []int{4}}},
		{name: "bad node index", l: task.Launch{NodeIndex: 3}, has: cgroup.All, wantErr: true},
		{name: "bad cpu position", l: launch(cluster.NodeAlloc{CPUs: []int{-1}}), has: cgroup.All, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, task, approx, err := taskLimits(tc.l, canon, tc.has, tc.pids)
			if (err != nil) != tc.wantErr {
				t.Fatalf("taskLimits = %v; want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if !reflect.DeepEqual(job, tc.job) || !reflect.DeepEqual(task, tc.task) || approx != tc.approx {
				t.Errorf("taskLimits = %+v, %+v, %v; want %+v, %+v, %v", job, task, approx, tc.job, tc.task, tc.approx)
			}
		})
	}
}

// withStep makes l a launch of a step whose only node is sn.
func withStep(l task.Launch, sn cluster.StepNode, exclusive bool) task.Launch {
	l.Step = &cluster.Step{Spec: cluster.StepSpec{Exclusive: exclusive}, Nodes: []cluster.StepNode{sn}}
	return l
}
