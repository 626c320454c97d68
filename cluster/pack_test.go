package cluster

import (
	"slices"
	"testing"
)

// TestPacked: the leader packs a block job as Slurm's allocation does on
// idle nodes (slurm/testdata/layout_golden.txt): -n5 -N2 on 16-CPU nodes
// runs 4 and 1; the ranks follow in blocks.
func TestPacked(t *testing.T) {
	for _, tc := range []struct {
		name       string
		r          Request
		cpus       []int
		wantPack   bool
		wantCounts []int
		wantRanks  [][]int
	}{
		{name: "n5 N2", r: Request{Nodes: 2, NTasks: 5, TasksPerNode: 3, CPUsPerTask: 1}, cpus: []int{16, 16, 16},
			wantPack: true, wantCounts: []int{4, 1}, wantRanks: [][]int{{0, 1, 2, 3}, {4}}},
		{name: "n20 N2: the node's CPUs bound it", r: Request{Nodes: 2, NTasks: 20, TasksPerNode: 10, CPUsPerTask: 1}, cpus: []int{16, 16},
			wantPack: true, wantCounts: []int{16, 4}},
		{name: "-c4", r: Request{Nodes: 2, NTasks: 7, TasksPerNode: 4, CPUsPerTask: 4}, cpus: []int{16, 16},
			wantCounts: []int{4, 3}}, // already what Slurm runs: left even
		{name: "the 2nd largest node bounds it", r: Request{Nodes: 2, NTasks: 9, TasksPerNode: 5, CPUsPerTask: 1}, cpus: []int{64, 6, 2},
			wantPack: true, wantCounts: []int{6, 3}},
		{name: "GPUs: even", r: Request{Nodes: 2, NTasks: 5, TasksPerNode: 3, GPUsPerNode: 1}, cpus: []int{16, 16}, wantCounts: []int{3, 2}},
		{name: "cyclic: even", r: Request{Nodes: 2, NTasks: 5, TasksPerNode: 3, Distribution: "cyclic"}, cpus: []int{16, 16}, wantCounts: []int{3, 2}},
		{name: "too few nodes known", r: Request{Nodes: 3, NTasks: 5, TasksPerNode: 2}, cpus: []int{16, 16}, wantCounts: []int{2, 2, 1}},
		{name: "CPUs unknown", r: Request{Nodes: 2, NTasks: 5, TasksPerNode: 3}, cpus: []int{0, 0}, wantCounts: []int{3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.r.Packed(tc.cpus)
			if p.Pack != tc.wantPack {
				t.Errorf("Pack %v; want %v", p.Pack, tc.wantPack)
			}
			if err := p.validateLayout(); err != nil {
				t.Errorf("packed request invalid: %v", err)
			}
			counts := p.TaskCounts(p.Nodes)
			if !slices.Equal(counts, tc.wantCounts) {
				t.Errorf("counts %v; want %v", counts, tc.wantCounts)
			}
			if tc.wantRanks != nil {
				for k, want := range tc.wantRanks {
					for l, rank := range want {
						if got := p.RankAt(p.Nodes, k, l); got != rank {
							t.Errorf("RankAt(node %d, local %d) = %d; want %d", k, l, got, rank)
						}
					}
				}
			}
		})
	}
}

// TestSpreadCounts: a job's ranks sized from its nodes' free CPUs as
// Slurm sizes them (slurm/testdata/layout_golden.txt), named nodes first,
// dealt by the distribution; a job whose GPUs go with its tasks runs at
// most TasksPerNode a node.
func TestSpreadCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     Request
		free  []int
		named []bool
		want  []int
	}{
		{"idle", Request{NTasks: 5}, []int{16, 16}, nil, []int{4, 1}},
		{"first busy", Request{NTasks: 5}, []int{2, 16}, nil, []int{2, 3}},
		{"named second", Request{NTasks: 5}, []int{16, 16}, []bool{false, true}, []int{1, 4}},
		{"-c4", Request{NTasks: 7, CPUsPerTask: 4}, []int{16, 16}, nil, []int{4, 3}},
		{"plane", Request{NTasks: 6, Distribution: "plane=4"}, []int{16, 16}, nil, []int{5, 1}},
		{"gpus per node", Request{NTasks: 5, GPUsPerNode: 2, GPUOption: GPUOptionPerNode}, []int{16, 16}, nil, []int{4, 1}},
		{"gpus per task", Request{NTasks: 5, TasksPerNode: 3, GPUsPerNode: 3}, []int{16, 16}, nil, []int{3, 2}},
		{"gpus per task, no room", Request{NTasks: 5, TasksPerNode: 3, GPUsPerNode: 3}, []int{1, 16}, nil, nil},
		{"exclusive", Request{NTasks: 5, Exclusive: true}, []int{16, 16}, nil, []int{3, 2}},
	} {
		if got := tc.r.SpreadCounts(tc.free, tc.named); !slices.Equal(got, tc.want) {
			t.Errorf("%s: SpreadCounts(%v, %v) = %v; want %v", tc.name, tc.free, tc.named, got, tc.want)
		}
	}
}
