package fsm

import (
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

// TestAllocateNodeSet: the FSM refuses a decision that breaks its job's
// node list, exclude list, constraint or exclusivity, whatever placement
// proposed (defence in depth beside DESIGN invariant 1's GPU check).
func TestAllocateNodeSet(t *testing.T) {
	// nodes: n1 (ib), n2 (ib, h100), n3 (none), 4 GPUs each.
	nodes := func(t *testing.T, h *harness) {
		for _, n := range []struct {
			name string
			fs   []string
		}{{"n1", []string{"ib"}}, {"n2", []string{"ib", "h100"}}, {"n3", nil}} {
			node := gpuNode(n.name, 4, "leaf0")
			node.Features = n.fs
			h.must(t, CmdUpsertNode, UpsertNode{Node: node})
		}
	}
	submit := func(edit func(r *cluster.Request), gpus int) func(*testing.T, *harness) {
		return func(t *testing.T, h *harness) {
			nodes(t, h)
			sp := spec(1, gpus)
			edit(&sp.Request)
			h.must(t, CmdSubmitJob, SubmitJob{Spec: sp})
		}
	}
	// running job 1 (exclusive or not) on n1, then job 2 submitted.
	behind := func(firstExcl bool, edit func(r *cluster.Request), gpus int) func(*testing.T, *harness) {
		return func(t *testing.T, h *harness) {
			nodes(t, h)
			sp := spec(1, 0)
			sp.Request.Exclusive = firstExcl
			h.must(t, CmdSubmitJob, SubmitJob{Spec: sp})
			g := []int(nil)
			if firstExcl {
				g = []int{0, 1, 2, 3}
			}
			if r := h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", g)}}); len(r.Rejected) != 0 {
				t.Fatalf("allocate job 1: %+v", r.Rejected)
			}
			sp = spec(1, gpus)
			edit(&sp.Request)
			h.must(t, CmdSubmitJob, SubmitJob{Spec: sp})
		}
	}
	none := func(r *cluster.Request) {}
	tests := []struct {
		name  string
		setup func(*testing.T, *harness)
		d     Decision
		want  string // "" = accepted
	}{
		{"nodelist honoured", submit(func(r *cluster.Request) { r.NodeList = []string{"n2"} }, 1), place(1, "n2", []int{0}), ""},
		{"nodelist node missing", submit(func(r *cluster.Request) { r.NodeList = []string{"n2"} }, 1), place(1, "n1", []int{0}), `node "n2": in the job's node list`},
		{"excluded node", submit(func(r *cluster.Request) { r.Exclude = []string{"n1"} }, 1), place(1, "n1", []int{0}), `node "n1": excluded`},
		{"constraint met", submit(func(r *cluster.Request) { r.Constraint = "ib&h100" }, 1), place(1, "n2", []int{0}), ""},
		{"constraint broken", submit(func(r *cluster.Request) { r.Constraint = "ib&h100" }, 1), place(1, "n1", []int{0}), `do not match constraint "ib&h100"`},
		{"exclusive whole node", submit(func(r *cluster.Request) { r.Exclusive = true }, 1), place(1, "n3", []int{0, 1, 2, 3}), ""},
		{"exclusive part of a node", submit(func(r *cluster.Request) { r.Exclusive = true }, 1), place(1, "n3", []int{0}), "exclusive job takes all 4"},
		{"exclusive on a busy node", behind(false, func(r *cluster.Request) { r.Exclusive = true }, 0), place(2, "n1", []int{0, 1, 2, 3}), "in use by job 1"},
		{"GPU-less job joins an exclusive one", behind(true, none, 0), place(2, "n1", []int(nil)), "held whole by exclusive job 1"},
		{"GPU-less jobs share", behind(false, none, 0), place(2, "n1", []int(nil)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness()
			tt.setup(t, h)
			r := h.must(t, CmdAllocate, Allocate{Decisions: []Decision{tt.d}})
			switch {
			case tt.want == "" && len(r.Rejected) != 0:
				t.Fatalf("Allocate(%+v).Rejected = %+v; want accepted", tt.d, r.Rejected)
			case tt.want != "" && (len(r.Rejected) != 1 || !strings.Contains(r.Rejected[0].Reason, tt.want)):
				t.Fatalf("Allocate(%+v).Rejected = %+v; want a rejection containing %q", tt.d, r.Rejected, tt.want)
			}
		})
	}
}

// TestUpsertNodeFeatures: features are recorded, changing them is a
// change, and bad ones are refused naming the field.
func TestUpsertNodeFeatures(t *testing.T) {
	h := newHarness()
	n := gpuNode("n1", 1, "leaf0")
	n.Features = []string{"ib", "a100"}
	h.must(t, CmdUpsertNode, UpsertNode{Node: n})
	got, _ := h.s.View().Node("n1")
	if strings.Join(got.Features, ",") != "ib,a100" {
		t.Fatalf("node features = %v; want [ib a100]", got.Features)
	}
	n.Features = []string{"ib"}
	h.must(t, CmdUpsertNode, UpsertNode{Node: n})
	if got, _ := h.s.View().Node("n1"); strings.Join(got.Features, ",") != "ib" {
		t.Fatalf("node features after update = %v; want [ib]", got.Features)
	}
	n.Features = []string{"a&b"}
	if r := h.apply(t, CmdUpsertNode, UpsertNode{Node: n}); r.Err == nil || !strings.Contains(r.Err.Error(), "features[0]") {
		t.Fatalf("UpsertNode(features [a&b]).Err = %v; want one naming features[0]", r.Err)
	}
}
