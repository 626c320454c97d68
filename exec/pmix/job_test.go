package pmix

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// stepLaunch is node's Launch of step 3 of job 7: ntasks over nodes n1,
// n2 (firsts and counts as the FSM laid them out), by dist, with env.
func stepLaunch(node string, ntasks int, dist string, counts, firsts []int, env ...string) task.Launch {
	st := &cluster.Step{ID: 3, Incarnation: 1, Spec: cluster.StepSpec{Command: []string{"prog"}, Nodes: 2, NTasks: ntasks,
		Distribution: dist, Env: env}}
	for i, n := range []string{"n1", "n2"} {
		st.Nodes = append(st.Nodes, cluster.StepNode{Node: n, FirstRank: firsts[i], Tasks: counts[i]})
	}
	idx := 0
	if node == "n2" {
		idx = 1
	}
	return task.Launch{Job: 7, Incarnation: 1, NodeName: node, NodeIndex: idx,
		Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1"}, {Node: "n2"}}}, Step: st}
}

func TestWanted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		jobEnv  []string
		stepEnv []string
		want    bool
	}{
		{"none given", nil, nil, false},
		{"pmix", nil, []string{"SLURM_MPI_TYPE=pmix"}, true},
		{"pmix_v4 from the job", []string{"SLURM_MPI_TYPE=pmix_v4"}, nil, true},
		{"the step's none wins", []string{"SLURM_MPI_TYPE=pmix"}, []string{"SLURM_MPI_TYPE=none"}, false},
		{"pmi2 is no PMIx", nil, []string{"SLURM_MPI_TYPE=pmi2"}, false},
		{"another variable", nil, []string{"XSLURM_MPI_TYPE=pmix"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := stepLaunch("n1", 4, "", []int{2, 2}, []int{0, 2}, tc.stepEnv...)
			l.Spec.Env = tc.jobEnv
			if got := Wanted(l); got != tc.want {
				t.Errorf("Wanted = %v; want %v", got, tc.want)
			}
		})
	}
	own := stepLaunch("n1", 4, "", []int{2, 2}, []int{0, 2})
	own.Step, own.Spec.Env = nil, []string{"SLURM_MPI_TYPE=pmix"}
	if Wanted(own) {
		t.Error("Wanted(a job's own task) = true; only steps serve PMIx")
	}
}

// TestJobOf checks the namespace every node of a step derives: the same
// nodes and ranks on each (the fence concatenates in that node order),
// and this node's place.
func TestJobOf(t *testing.T) {
	for _, tc := range []struct {
		name          string
		node          string
		ntasks        int
		dist          string
		counts, first []int
		ranks         [][]int
		self          int
	}{
		{"block, first node", "n1", 4, "", []int{2, 2}, []int{0, 2}, [][]int{{0, 1}, {2, 3}}, 0},
		{"block, second node", "n2", 4, "", []int{2, 2}, []int{0, 2}, [][]int{{0, 1}, {2, 3}}, 1},
		{"cyclic", "n2", 4, "cyclic", []int{2, 2}, []int{0, 1}, [][]int{{0, 2}, {1, 3}}, 1},
		{"uneven blocks (packed)", "n1", 0, "", []int{3, 1}, []int{0, 3}, [][]int{{0, 1, 2}, {3}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := JobOf(stepLaunch(tc.node, tc.ntasks, tc.dist, tc.counts, tc.first))
			if err != nil {
				t.Fatal(err)
			}
			want := Job{Nspace: "shoal.7.1.3", ID: "7.3", Nodes: []string{"n1", "n2"}, Ranks: tc.ranks, Size: 4, Node: tc.self}
			if !reflect.DeepEqual(j, want) {
				t.Errorf("JobOf = %+v; want %+v", j, want)
			}
		})
	}
	l := stepLaunch("n3", 4, "", []int{2, 2}, []int{0, 2})
	if _, err := JobOf(l); err == nil {
		t.Error("JobOf(a node without a share) succeeded")
	}
	l = stepLaunch("n1", 0, "", []int{2, 1}, []int{0, 3})
	if _, err := JobOf(l); err == nil || !strings.Contains(err.Error(), "rank 2 runs nowhere") {
		t.Errorf("JobOf(a rank missing) = %v; want rank 2 runs nowhere", err)
	}
	l = stepLaunch("n1", 4, "", []int{2, 1}, []int{0, 2})
	if _, err := JobOf(l); err == nil || !strings.Contains(err.Error(), "3 ranks laid out, the step has 4") {
		t.Errorf("JobOf(fewer tasks than the step's) = %v; want 3 ranks laid out, the step has 4", err)
	}
}

// TestInfos checks what the server registers for the namespace: the
// sizes, the maps Open MPI builds its view of the job from, this node's
// peers, and each rank's data, with a local rank only where it runs here.
func TestInfos(t *testing.T) {
	j := Job{Nspace: "shoal.7.1.3", ID: "7.3", Nodes: []string{"n1", "n2"}, Ranks: [][]int{{0, 2}, {1, 3}}, Size: 4, Node: 1}
	got := map[string]any{}
	var procs [][]Info
	for _, in := range j.Infos("/tmp/x") {
		if in.Key == keyProcData {
			procs = append(procs, in.Value.([]Info))
			continue
		}
		if _, dup := got[in.Key]; dup {
			t.Errorf("key %s registered twice", in.Key)
		}
		got[in.Key] = in.Value
	}
	want := map[string]any{
		keySpawned: false, keyTmpdir: "/tmp/x", keyNsdir: "/tmp/x", keyJobID: "7.3", keyNodeID: uint32(1),
		keyUnivSize: uint32(4), keyJobSize: uint32(4), keyMaxProcs: uint32(4), keyAppSize: uint32(4),
		keyNumApps: uint32(1), keyNumNodes: uint32(2), keyLocalSize: uint32(2), keyNodeSize: uint32(2),
		keyNodeMap: "n1,n2", keyProcMap: "0,2;1,3", keyLocalPeers: "1,3", keyLocalLdr: Rank(1),
		keyAppNum: uint32(0), keyAppLdr: Rank(0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("job infos = %v;\nwant %v", got, want)
	}
	if len(procs) != 4 {
		t.Fatalf("%d ranks' data; want 4", len(procs))
	}
	for r, data := range procs {
		m := map[string]any{}
		for _, in := range data {
			m[in.Key] = in.Value
		}
		node := r % 2
		want := map[string]any{keyRank: Rank(r), keyAppNum: uint32(0), keyAppLdr: Rank(0), keyGlobalRank: Rank(r),
			keyAppRank: Rank(r), keyHostname: fmt.Sprintf("n%d", node+1), keyNodeID: uint32(node)}
		if node == 1 {
			want[keyLocalRank], want[keyNodeRank] = uint16(r/2), uint16(r/2)
		}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("rank %d data = %v; want %v", r, m, want)
		}
		if data[0].Key != keyRank {
			t.Errorf("rank %d data starts with %s; PMIx wants %s first", r, data[0].Key, keyRank)
		}
	}
}
