package placement

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/shoal-sched/shoal/cluster"
)

// mkBlock returns count nodes named prefix1..prefixN with gpus GPUs each
// in NVLink block block. Their leaf switch is one for all blocks, so only
// the block can tell them apart.
func mkBlock(prefix string, count, gpus int, block string) []*cluster.Node {
	ns := mkLeaf(prefix, count, gpus, "leaf", "spine")
	for _, n := range ns {
		n.Topology.Block = block
	}
	return ns
}

// TestPlaceBlocks: with NVLink blocks (Slurm's topology/block), a job
// that fits one block stays in one, the block it fills best; a larger one
// takes whole blocks, as few as possible, the fullest first, and the rest
// from the block that best fits the remainder.
func TestPlaceBlocks(t *testing.T) {
	names := func(d Decision) []string {
		var out []string
		for _, a := range d.Nodes {
			out = append(out, a.Node)
		}
		return out
	}
	tests := []struct {
		name  string
		nodes []*cluster.Node
		jobs  []*cluster.Job
		queue []*cluster.Job
		want  []string
	}{{
		name:  "fits one block: the smallest that suffices",
		nodes: cat(mkBlock("a", 4, 4, "A"), mkBlock("b", 3, 4, "B"), mkBlock("c", 2, 4, "C")),
		queue: []*cluster.Job{pending(1, 3, 4)},
		want:  []string{"b1", "b2", "b3"},
	}, {
		name:  "fits one block only once the others are counted free: never split",
		nodes: cat(mkBlock("a", 4, 4, "A"), mkBlock("b", 4, 4, "B")),
		jobs:  []*cluster.Job{holding(9, cluster.JobRunning, false, "a1", seq(0, 3), "b1", seq(0, 3), "b2", seq(0, 3))},
		queue: []*cluster.Job{pending(1, 3, 4)},
		want:  []string{"a2", "a3", "a4"},
	}, {
		name:  "larger than a block: a whole block, the rest best fit",
		nodes: cat(mkBlock("a", 4, 4, "A"), mkBlock("b", 4, 4, "B"), mkBlock("c", 2, 4, "C")),
		queue: []*cluster.Job{pending(1, 6, 4)},
		want:  []string{"a1", "a2", "a3", "a4", "c1", "c2"},
	}, {
		name:  "larger than two blocks: the fewest blocks",
		nodes: cat(mkBlock("a", 2, 4, "A"), mkBlock("b", 4, 4, "B"), mkBlock("c", 4, 4, "C"), mkBlock("d", 1, 4, "D")),
		queue: []*cluster.Job{pending(1, 8, 4)},
		want:  []string{"b1", "b2", "b3", "b4", "c1", "c2", "c3", "c4"},
	}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := PlaceWith(NewView(tt.nodes, tt.jobs), tt.queue, now, Options{Policy: PolicyShoal})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Decisions) != 1 {
				t.Fatalf("decisions %+v, reasons %v; want one", res.Decisions, res.Reasons)
			}
			if diff := cmp.Diff(tt.want, names(res.Decisions[0])); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}
