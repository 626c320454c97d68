package fsm

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/shoal-sched/shoal/cluster"
)

type applyCase struct {
	name    string
	setup   func(t *testing.T, h *harness)
	typ     CmdType
	cmd     any
	wantErr error // a sentinel; nil when the command must be accepted
	// errHas, when set, must appear in the refusal's message.
	errHas string
	check  func(t *testing.T, v *View, r Result)
}

func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness()
			if tc.setup != nil {
				tc.setup(t, h)
			}
			before := h.s.View()
			r := h.apply(t, tc.typ, tc.cmd)
			if tc.wantErr == nil && r.Err != nil || tc.wantErr != nil && !errors.Is(r.Err, tc.wantErr) {
				t.Fatalf("Apply(%s %+v).Err = %v; want %v", tc.typ, tc.cmd, r.Err, tc.wantErr)
			}
			if r.Err != nil && !strings.Contains(r.Err.Error(), tc.errHas) {
				t.Errorf("Apply(%s).Err = %q; want it to mention %q", tc.typ, r.Err, tc.errHas)
			}
			if errors.Is(r.Err, ErrDiverged) {
				t.Fatalf("Apply(%s).Err = %v; a refusal must not diverge", tc.typ, r.Err)
			}
			after := h.s.View()
			if after.Index != h.index {
				t.Errorf("View().Index = %d; want %d (every entry advances the index)", after.Index, h.index)
			}
			if r.Err != nil {
				assertUnchanged(t, before, after)
			}
			if tc.check != nil {
				tc.check(t, after, r)
			}
		})
	}
}

// assertUnchanged checks that no record changed between two views: records
// are copy-on-write, so an unchanged state keeps the very same pointers.
func assertUnchanged(t *testing.T, before, after *View) {
	t.Helper()
	if !slices.Equal(before.Jobs(), after.Jobs()) {
		t.Errorf("jobs changed; want the state unchanged")
	}
	if !slices.Equal(before.Nodes(), after.Nodes()) {
		t.Errorf("nodes changed; want the state unchanged")
	}
}

// withNodes announces nodes of four GPUs each.
func withNodes(names ...string) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		for _, n := range names {
			h.must(t, CmdUpsertNode, UpsertNode{Node: gpuNode(n, 4, "leaf0")})
		}
	}
}

// withRunning sets up nodes n1..n3 and job 1 (2 nodes x 2 GPUs) running on
// n1:[0,1] and n2:[0,1], and job 2 (1 node x 2 GPUs) pending.
func withRunning(t *testing.T, h *harness) {
	withNodes("n1", "n2", "n3")(t, h)
	h.must(t, CmdSubmitJob, SubmitJob{RequestID: "a", Spec: spec(2, 2)})
	h.must(t, CmdSubmitJob, SubmitJob{RequestID: "b", Spec: spec(1, 2)})
	r := h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{0, 1}, "n2", []int{0, 1})}})
	if len(r.Rejected) != 0 {
		t.Fatalf("setup allocate rejected %v", r.Rejected)
	}
}

func job(t *testing.T, v *View, id cluster.JobID) *cluster.Job {
	t.Helper()
	j, ok := v.Job(id)
	if !ok {
		t.Fatalf("View.Job(%d) missing", id)
	}
	return j
}

func wantState(t *testing.T, v *View, id cluster.JobID, want cluster.JobState) *cluster.Job {
	t.Helper()
	j := job(t, v, id)
	if j.State != want {
		t.Errorf("job %d state = %s; want %s", id, j.State, want)
	}
	return j
}

func wantFree(t *testing.T, v *View, node string, want ...int) {
	t.Helper()
	if got := v.FreeGPUs(node); !slices.Equal(got, want) {
		t.Errorf("FreeGPUs(%s) = %v; want %v", node, got, want)
	}
}

func TestSubmitJob(t *testing.T) {
	bad := spec(1, 1)
	bad.Request.Nodes = 0
	noCmd := spec(1, 1)
	noCmd.Command = nil
	emptyEnv := spec(1, 1)
	emptyEnv.Env = []string{}
	runApplyCases(t, []applyCase{
		{
			name: "new job", typ: CmdSubmitJob, cmd: SubmitJob{RequestID: "r1", Spec: spec(2, 4)},
			check: func(t *testing.T, v *View, r Result) {
				if r.JobID != 1 || r.Duplicate {
					t.Errorf("Result = %+v; want JobID 1, not duplicate", r)
				}
				j := wantState(t, v, 1, cluster.JobPending)
				if !j.SubmitTime.Equal(t0.Add(time.Second)) || j.CreateIndex != 1 || j.ModifyIndex != 1 || j.Incarnation != 0 {
					t.Errorf("job = %+v; want submitted at the command's time and index 1, incarnation 0", j)
				}
				if id, ok := v.JobByRequestID("r1"); id != 1 || !ok {
					t.Errorf("JobByRequestID(r1) = %d, %t; want 1, true", id, ok)
				}
			},
		},
		{
			name:  "next id follows the last",
			setup: func(t *testing.T, h *harness) { h.must(t, CmdSubmitJob, SubmitJob{RequestID: "r1", Spec: spec(1, 1)}) },
			typ:   CmdSubmitJob, cmd: SubmitJob{RequestID: "r2", Spec: spec(1, 1)},
			check: func(t *testing.T, v *View, r Result) {
				if r.JobID != 2 {
					t.Errorf("Result.JobID = %d; want 2", r.JobID)
				}
			},
		},
		{
			// DESIGN invariant 2: a retried submit never makes two jobs.
			name:  "duplicate request id",
			setup: func(t *testing.T, h *harness) { h.must(t, CmdSubmitJob, SubmitJob{RequestID: "r1", Spec: spec(1, 1)}) },
			typ:   CmdSubmitJob, cmd: SubmitJob{RequestID: "r1", Spec: spec(3, 3)},
			check: func(t *testing.T, v *View, r Result) {
				if r.JobID != 1 || !r.Duplicate {
					t.Errorf("Result = %+v; want JobID 1, Duplicate", r)
				}
				if n := len(v.Jobs()); n != 1 {
					t.Errorf("len(Jobs()) = %d; want 1", n)
				}
			},
		},
		{
			name:  "empty request ids are not deduplicated",
			setup: func(t *testing.T, h *harness) { h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 1)}) },
			typ:   CmdSubmitJob, cmd: SubmitJob{Spec: spec(1, 1)},
			check: func(t *testing.T, v *View, r Result) {
				if r.JobID != 2 || r.Duplicate {
					t.Errorf("Result = %+v; want JobID 2", r)
				}
			},
		},
		{
			name: "empty env stored as nil", typ: CmdSubmitJob, cmd: SubmitJob{Spec: emptyEnv},
			check: func(t *testing.T, v *View, r Result) {
				if env := job(t, v, 1).Spec.Env; env != nil {
					t.Errorf("Spec.Env = %#v; want nil (canonical)", env)
				}
			},
		},
		{
			name: "request id too long", typ: CmdSubmitJob,
			cmd:     SubmitJob{RequestID: strings.Repeat("x", cluster.MaxRequestIDBytes+1), Spec: spec(1, 1)},
			wantErr: ErrInvalid, errHas: "request_id",
		},
		{name: "invalid request", typ: CmdSubmitJob, cmd: SubmitJob{Spec: bad}, wantErr: ErrInvalid, errHas: "nodes 0"},
		{name: "no command", typ: CmdSubmitJob, cmd: SubmitJob{Spec: noCmd}, wantErr: ErrInvalid, errHas: "command"},
	})
}

func TestCancelJob(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "unknown job", typ: CmdCancelJob, cmd: CancelJob{Job: 9}, wantErr: ErrUnknownJob, errHas: "job 9"},
		{
			name:  "pending",
			setup: func(t *testing.T, h *harness) { h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 1)}) },
			typ:   CmdCancelJob, cmd: CancelJob{Job: 1},
			check: func(t *testing.T, v *View, r Result) {
				j := wantState(t, v, 1, cluster.JobCancelled)
				if j.EndTime.IsZero() || j.ModifyIndex != v.Index {
					t.Errorf("job = %+v; want EndTime and ModifyIndex set", j)
				}
			},
		},
		{
			// DESIGN invariant 1: cancelling does not free GPUs whose tasks
			// may still run.
			name: "running keeps its gpus", setup: withRunning, typ: CmdCancelJob, cmd: CancelJob{Job: 1},
			check: func(t *testing.T, v *View, r Result) {
				j := wantState(t, v, 1, cluster.JobCancelled)
				if !j.HoldsResources() {
					t.Errorf("cancelled job released its allocation; want it held until tasks exit")
				}
				wantFree(t, v, "n1", 2, 3)
			},
		},
		{
			name: "already finished",
			setup: func(t *testing.T, h *harness) {
				h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 1)})
				h.must(t, CmdCancelJob, CancelJob{Job: 1})
			},
			typ: CmdCancelJob, cmd: CancelJob{Job: 1}, wantErr: ErrJobFinished, errHas: "CANCELLED",
		},
	})
}

func TestUpsertNode(t *testing.T) {
	badIndex := gpuNode("n1", 2, "leaf0")
	badIndex.GPUs[1].Index = 5
	badPeer := gpuNode("n1", 2, "leaf0")
	badPeer.GPUs[0].NVLinkPeers = []int{2}
	negCPU := gpuNode("n1", 2, "leaf0")
	negCPU.CPUs = -1
	moved := gpuNode("n1", 4, "leaf1")
	runApplyCases(t, []applyCase{
		{name: "empty name", typ: CmdUpsertNode, cmd: UpsertNode{Node: gpuNode("", 1, "l")}, wantErr: ErrInvalid, errHas: "name"},
		{
			name: "name too long", typ: CmdUpsertNode, cmd: UpsertNode{Node: gpuNode(strings.Repeat("n", 254), 1, "l")},
			wantErr: ErrInvalid, errHas: "254 bytes",
		},
		{name: "gpu indices out of order", typ: CmdUpsertNode, cmd: UpsertNode{Node: badIndex}, wantErr: ErrInvalid, errHas: "gpus[1].index 5"},
		{name: "nvlink peer out of range", typ: CmdUpsertNode, cmd: UpsertNode{Node: badPeer}, wantErr: ErrInvalid, errHas: "nvlink_peers"},
		{name: "negative cpus", typ: CmdUpsertNode, cmd: UpsertNode{Node: negCPU}, wantErr: ErrInvalid, errHas: "cpus"},
		{
			name: "create", typ: CmdUpsertNode, cmd: UpsertNode{Node: gpuNode("n1", 8, "leaf0")},
			check: func(t *testing.T, v *View, r Result) {
				n, ok := v.Node("n1")
				if !ok || n.Status != cluster.NodeUp || len(n.GPUs) != 8 || n.CreateIndex != 1 || n.StatusTime.IsZero() {
					t.Errorf("Node(n1) = %+v, %t; want up with 8 GPUs created at 1", n, ok)
				}
				wantFree(t, v, "n1", 0, 1, 2, 3, 4, 5, 6, 7)
			},
		},
		{
			name: "update keeps drain and create index",
			setup: func(t *testing.T, h *harness) {
				if err := h.s.Restore(drainedSnapshot(t, "n1", 4)); err != nil {
					t.Fatal(err)
				}
				h.index = h.s.Index()
			},
			typ: CmdUpsertNode, cmd: UpsertNode{Node: moved},
			check: func(t *testing.T, v *View, r Result) {
				n, _ := v.Node("n1")
				if !n.Drain || n.DrainReason != "maintenance" || n.Topology.Switch != "leaf1" || n.CreateIndex != 1 || n.ModifyIndex != v.Index {
					t.Errorf("Node(n1) = %+v; want drain kept, switch leaf1, CreateIndex 1, ModifyIndex %d", n, v.Index)
				}
			},
		},
		{
			name:  "repeated announcement changes nothing",
			setup: withNodes("n1"),
			typ:   CmdUpsertNode, cmd: UpsertNode{Node: gpuNode("n1", 4, "leaf0")},
			check: func(t *testing.T, v *View, r Result) {
				if n, _ := v.Node("n1"); n.ModifyIndex != 1 {
					t.Errorf("Node(n1).ModifyIndex = %d; want 1 (unchanged)", n.ModifyIndex)
				}
			},
		},
		{
			name: "down node comes back up",
			setup: func(t *testing.T, h *harness) {
				withNodes("n1")(t, h)
				h.must(t, CmdNodeDown, NodeDown{Node: "n1"})
			},
			typ: CmdUpsertNode, cmd: UpsertNode{Node: gpuNode("n1", 4, "leaf0")},
			check: func(t *testing.T, v *View, r Result) {
				n, _ := v.Node("n1")
				if n.Status != cluster.NodeUp || !n.StatusTime.Equal(t0.Add(3*time.Second)) {
					t.Errorf("Node(n1) = %s at %v; want up at %v", n.Status, n.StatusTime, t0.Add(3*time.Second))
				}
			},
		},
	})
}

func TestNodeDown(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "unknown node", typ: CmdNodeDown, cmd: NodeDown{Node: "n9"}, wantErr: ErrUnknownNode, errHas: "n9"},
		{
			// DESIGN invariant 1: only a node declared down (its tasks
			// fenced) gives its GPUs back without an exit report.
			name: "running job fails and releases the node", setup: withRunning,
			typ: CmdNodeDown, cmd: NodeDown{Node: "n1"},
			check: func(t *testing.T, v *View, r Result) {
				j := wantState(t, v, 1, cluster.JobNodeFail)
				if j.Reason != cluster.ReasonNodeDown || j.EndTime.IsZero() {
					t.Errorf("job 1 reason %q end %v; want NodeDown with EndTime", j.Reason, j.EndTime)
				}
				if na := j.Alloc.Nodes[0]; na.State != cluster.TaskLost || !na.Released {
					t.Errorf("n1 share = %+v; want lost and released", na)
				}
				if na := j.Alloc.Nodes[1]; na.Released {
					t.Errorf("n2 share released; want held until n2 reports its tasks dead")
				}
				wantFree(t, v, "n2", 2, 3)
				if n, _ := v.Node("n1"); n.Status != cluster.NodeDown {
					t.Errorf("Node(n1).Status = %s; want down", n.Status)
				}
			},
		},
		{
			name: "cancelled job only releases",
			setup: func(t *testing.T, h *harness) {
				withRunning(t, h)
				h.must(t, CmdCancelJob, CancelJob{Job: 1})
			},
			typ: CmdNodeDown, cmd: NodeDown{Node: "n2"},
			check: func(t *testing.T, v *View, r Result) {
				j := wantState(t, v, 1, cluster.JobCancelled)
				if !j.Alloc.Nodes[1].Released || j.Alloc.Nodes[0].Released {
					t.Errorf("alloc = %+v; want only n2 released", j.Alloc.Nodes)
				}
			},
		},
		{
			name: "gpu-less job on the node",
			setup: func(t *testing.T, h *harness) {
				withNodes("n1")(t, h)
				h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 0)})
				h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{})}})
			},
			typ: CmdNodeDown, cmd: NodeDown{Node: "n1"},
			check: func(t *testing.T, v *View, r Result) {
				if j := wantState(t, v, 1, cluster.JobNodeFail); j.HoldsResources() {
					t.Errorf("job 1 still holds resources")
				}
			},
		},
	})
}

func TestAllocate(t *testing.T) {
	allocate := func(ds ...Decision) Allocate { return Allocate{Decisions: ds} }
	wantRejected := func(job cluster.JobID, reason string) func(*testing.T, *View, Result) {
		return func(t *testing.T, v *View, r Result) {
			if len(r.Rejected) != 1 || r.Rejected[0].Job != job || !strings.Contains(r.Rejected[0].Reason, reason) {
				t.Fatalf("Rejected = %+v; want job %d rejected for %q", r.Rejected, job, reason)
			}
			if j, ok := v.Job(job); ok && j.State == cluster.JobPending && j.Alloc != nil {
				t.Errorf("rejected job %d got an allocation", job)
			}
		}
	}
	pending := func(t *testing.T, h *harness) {
		withNodes("n1", "n2", "n3")(t, h)
		h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(2, 2)})
	}
	downN2 := func(t *testing.T, h *harness) {
		pending(t, h)
		h.must(t, CmdNodeDown, NodeDown{Node: "n2"})
	}
	drained := func(t *testing.T, h *harness) {
		if err := h.s.Restore(drainedSnapshot(t, "n2", 4)); err != nil {
			t.Fatal(err)
		}
		h.index = h.s.Index()
		pending(t, h)
	}
	runApplyCases(t, []applyCase{
		{
			name: "accepted", setup: pending, typ: CmdAllocate,
			cmd: allocate(place(1, "n2", []int{3, 1}, "n1", []int{0, 2})),
			check: func(t *testing.T, v *View, r Result) {
				if len(r.Rejected) != 0 {
					t.Fatalf("Rejected = %+v; want none", r.Rejected)
				}
				j := wantState(t, v, 1, cluster.JobRunning)
				want := &cluster.Allocation{Index: v.Index, MasterPort: 29500, Nodes: []cluster.NodeAlloc{
					{Node: "n2", GPUs: []int{3, 1}, State: cluster.TaskAssigned},
					{Node: "n1", GPUs: []int{0, 2}, State: cluster.TaskAssigned},
				}}
				if diff := cmp.Diff(want, j.Alloc); diff != "" {
					t.Errorf("Alloc mismatch (-want +got):\n%s", diff)
				}
				if j.Incarnation != 1 || j.StartTime.IsZero() || j.Reason != "" {
					t.Errorf("job = %+v; want incarnation 1, StartTime set, no reason", j)
				}
				wantFree(t, v, "n2", 0, 2)
				wantFree(t, v, "n1", 1, 3)
			},
		},
		{name: "unknown job", setup: pending, typ: CmdAllocate, cmd: allocate(place(7, "n1", []int{0, 1}, "n2", []int{0, 1})), check: wantRejected(7, "unknown job")},
		{
			name: "job not pending", setup: withRunning, typ: CmdAllocate,
			cmd: allocate(place(1, "n3", []int{0, 1}, "n2", []int{2, 3})), check: wantRejected(1, "RUNNING, want PENDING"),
		},
		{name: "too few nodes", setup: pending, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{0, 1})), check: wantRejected(1, "1 nodes, job requests 2")},
		{name: "node twice", setup: pending, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{0, 1}, "n1", []int{2, 3})), check: wantRejected(1, "named twice")},
		{name: "unknown node", setup: pending, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{0, 1}, "n9", []int{0, 1})), check: wantRejected(1, `unknown node "n9"`)},
		{name: "node down", setup: downN2, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{0, 1}, "n2", []int{0, 1})), check: wantRejected(1, `"n2" is down`)},
		{name: "node draining", setup: drained, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{0, 1}, "n2", []int{0, 1})), check: wantRejected(1, "draining")},
		{name: "wrong gpu count", setup: pending, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{0}, "n2", []int{0, 1})), check: wantRejected(1, "1 gpus, job requests 2")},
		{name: "gpu out of range", setup: pending, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{0, 4}, "n2", []int{0, 1})), check: wantRejected(1, "gpu 4 out of range")},
		{name: "negative gpu", setup: pending, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{-1, 0}, "n2", []int{0, 1})), check: wantRejected(1, "gpu -1 out of range")},
		{name: "gpu twice", setup: pending, typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{1, 1}, "n2", []int{0, 1})), check: wantRejected(1, "gpu 1 named twice")},
		{
			// DESIGN invariant 1: the FSM re-checks what placement proposed.
			name: "gpu held by another job", setup: withRunning, typ: CmdAllocate,
			cmd: allocate(place(2, "n2", []int{1, 2})), check: wantRejected(2, `"n2": gpu 1 held by job 1`),
		},
		{
			name: "gpu held by an earlier decision of the batch",
			setup: func(t *testing.T, h *harness) {
				withNodes("n1")(t, h)
				h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 2)})
				h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 2)})
				h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 2)})
			},
			typ: CmdAllocate,
			cmd: allocate(place(1, "n1", []int{0, 1}), place(2, "n1", []int{1, 2}), place(3, "n1", []int{2, 3})),
			check: func(t *testing.T, v *View, r Result) {
				wantRejected(2, "gpu 1 held by job 1")(t, v, r)
				wantState(t, v, 1, cluster.JobRunning)
				wantState(t, v, 2, cluster.JobPending)
				j3 := wantState(t, v, 3, cluster.JobRunning)
				if j3.Alloc.MasterPort != 29501 {
					t.Errorf("job 3 MasterPort = %d; want 29501 (job 1 has 29500 on the same first node)", j3.Alloc.MasterPort)
				}
			},
		},
		{
			name: "same job twice in a batch",
			setup: func(t *testing.T, h *harness) {
				withNodes("n1")(t, h)
				h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 1)})
			},
			typ: CmdAllocate, cmd: allocate(place(1, "n1", []int{0}), place(1, "n1", []int{1})),
			check: wantRejected(1, "RUNNING"),
		},
		{
			name: "master ports run out",
			setup: func(t *testing.T, h *harness) {
				withNodes("n1")(t, h)
				var ds []Decision
				for i := range maxMasterPort - minMasterPort + 1 {
					h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 0)})
					ds = append(ds, place(cluster.JobID(i+1), "n1", []int{}))
				}
				h.must(t, CmdAllocate, Allocate{Decisions: ds[:len(ds)-1]})
			},
			typ: CmdAllocate, cmd: allocate(place(maxMasterPort-minMasterPort+1, "n1", []int{})),
			check: wantRejected(maxMasterPort-minMasterPort+1, "no free master port"),
		},
	})
}

func TestTaskStarted(t *testing.T) {
	startedN1 := func(t *testing.T, h *harness) {
		withRunning(t, h)
		h.must(t, CmdTaskStarted, TaskStarted{Job: 1, Incarnation: 1, Node: "n1"})
	}
	exitedN1 := func(t *testing.T, h *harness) {
		withRunning(t, h)
		h.must(t, CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n1", Cause: CauseExit})
	}
	unchanged := func(t *testing.T, v *View, r Result) {
		if j := job(t, v, 1); j.ModifyIndex == v.Index {
			t.Errorf("job 1 modified by a report that must change nothing")
		}
	}
	runApplyCases(t, []applyCase{
		{name: "unknown job", setup: withRunning, typ: CmdTaskStarted, cmd: TaskStarted{Job: 9, Incarnation: 1, Node: "n1"}, wantErr: ErrUnknownJob},
		{
			name: "assigned becomes running", setup: withRunning, typ: CmdTaskStarted,
			cmd: TaskStarted{Job: 1, Incarnation: 1, Node: "n2"},
			check: func(t *testing.T, v *View, r Result) {
				j := job(t, v, 1)
				if j.Alloc.Nodes[1].State != cluster.TaskRunning || j.Alloc.Nodes[0].State != cluster.TaskAssigned {
					t.Errorf("alloc = %+v; want n2 running, n1 assigned", j.Alloc.Nodes)
				}
			},
		},
		// DESIGN invariant 3: a report from another incarnation never
		// touches the current one.
		{name: "stale incarnation", setup: withRunning, typ: CmdTaskStarted, cmd: TaskStarted{Job: 1, Incarnation: 0, Node: "n1"}, check: unchanged},
		{name: "future incarnation", setup: withRunning, typ: CmdTaskStarted, cmd: TaskStarted{Job: 1, Incarnation: 2, Node: "n1"}, wantErr: ErrInvalid, errHas: "incarnation 2"},
		{name: "node not in allocation", setup: withRunning, typ: CmdTaskStarted, cmd: TaskStarted{Job: 1, Incarnation: 1, Node: "n3"}, wantErr: ErrInvalid, errHas: "not in its allocation"},
		{
			name:  "pending job has no allocation",
			setup: func(t *testing.T, h *harness) { h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 1)}) },
			typ:   CmdTaskStarted, cmd: TaskStarted{Job: 1, Incarnation: 0, Node: "n1"}, wantErr: ErrInvalid,
		},
		{name: "retried report", setup: startedN1, typ: CmdTaskStarted, cmd: TaskStarted{Job: 1, Incarnation: 1, Node: "n1"}, check: unchanged},
		{name: "after exit", setup: exitedN1, typ: CmdTaskStarted, cmd: TaskStarted{Job: 1, Incarnation: 1, Node: "n1"}, check: unchanged},
	})
}

func TestTaskExited(t *testing.T) {
	exited := func(node string, code int, cause string) TaskExited {
		return TaskExited{Job: 1, Incarnation: 1, Node: node, ExitCode: code, Cause: cause}
	}
	n1Done := func(t *testing.T, h *harness) {
		withRunning(t, h)
		h.must(t, CmdTaskExited, exited("n1", 0, CauseExit))
	}
	n1Failed := func(t *testing.T, h *harness) {
		withRunning(t, h)
		h.must(t, CmdTaskExited, exited("n1", 3, CauseExit))
	}
	terminal := func(state cluster.JobState, code int) func(*testing.T, *View, Result) {
		return func(t *testing.T, v *View, r Result) {
			j := wantState(t, v, 1, state)
			if j.ExitCode != code || !j.EndTime.Equal(t0.Add(time.Duration(v.Index)*time.Second)) {
				t.Errorf("job 1 exit %d end %v; want exit %d ending at the command's time", j.ExitCode, j.EndTime, code)
			}
		}
	}
	runApplyCases(t, []applyCase{
		{name: "unknown job", setup: withRunning, typ: CmdTaskExited, cmd: TaskExited{Job: 9, Incarnation: 1, Node: "n1"}, wantErr: ErrUnknownJob},
		{name: "node not in allocation", setup: withRunning, typ: CmdTaskExited, cmd: exited("n3", 0, CauseExit), wantErr: ErrInvalid},
		{name: "future incarnation", setup: withRunning, typ: CmdTaskExited, cmd: TaskExited{Job: 1, Incarnation: 5, Node: "n1"}, wantErr: ErrInvalid},
		{
			name: "stale incarnation", setup: withRunning, typ: CmdTaskExited, cmd: TaskExited{Job: 1, Incarnation: 0, Node: "n1", ExitCode: 1},
			check: func(t *testing.T, v *View, r Result) {
				wantState(t, v, 1, cluster.JobRunning)
				wantFree(t, v, "n1", 2, 3)
			},
		},
		{
			name: "one node of two exits", setup: withRunning, typ: CmdTaskExited, cmd: exited("n1", 0, CauseExit),
			check: func(t *testing.T, v *View, r Result) {
				j := wantState(t, v, 1, cluster.JobRunning)
				if na := j.Alloc.Nodes[0]; na.State != cluster.TaskExited || !na.Released {
					t.Errorf("n1 share = %+v; want exited, released", na)
				}
				wantFree(t, v, "n1", 0, 1, 2, 3)
				wantFree(t, v, "n2", 2, 3)
			},
		},
		{name: "all exit zero", setup: n1Done, typ: CmdTaskExited, cmd: exited("n2", 0, CauseExit), check: terminal(cluster.JobCompleted, 0)},
		{name: "non-zero exit", setup: withRunning, typ: CmdTaskExited, cmd: exited("n2", 3, CauseExit), check: terminal(cluster.JobFailed, 3)},
		{name: "start failure", setup: withRunning, typ: CmdTaskExited, cmd: exited("n2", 0, CauseStartFail), check: terminal(cluster.JobFailed, 0)},
		{name: "timeout", setup: withRunning, typ: CmdTaskExited, cmd: exited("n2", 137, CauseTimeout), check: terminal(cluster.JobTimeout, 0)},
		{name: "fenced", setup: withRunning, typ: CmdTaskExited, cmd: exited("n2", 137, CauseFenced), check: terminal(cluster.JobNodeFail, 0)},
		{name: "lost", setup: withRunning, typ: CmdTaskExited, cmd: exited("n2", 0, CauseLost), check: terminal(cluster.JobNodeFail, 0)},
		{
			name: "first failure decides the code", setup: n1Failed, typ: CmdTaskExited, cmd: exited("n2", 9, CauseCancelled),
			check: func(t *testing.T, v *View, r Result) {
				if j := wantState(t, v, 1, cluster.JobFailed); j.ExitCode != 3 || j.HoldsResources() {
					t.Errorf("job 1 exit %d holds %t; want exit 3, all released", j.ExitCode, j.HoldsResources())
				}
				wantFree(t, v, "n2", 0, 1, 2, 3)
			},
		},
		{
			name: "retried report is acknowledged", setup: n1Done, typ: CmdTaskExited, cmd: exited("n1", 5, CauseExit),
			check: func(t *testing.T, v *View, r Result) {
				if j := wantState(t, v, 1, cluster.JobRunning); j.Alloc.Nodes[0].ExitCode != 0 {
					t.Errorf("retried report changed the exit code to %d", j.Alloc.Nodes[0].ExitCode)
				}
			},
		},
		{
			name: "cancelled job just releases",
			setup: func(t *testing.T, h *harness) {
				withRunning(t, h)
				h.must(t, CmdCancelJob, CancelJob{Job: 1})
			},
			typ: CmdTaskExited, cmd: exited("n1", 143, CauseCancelled),
			check: func(t *testing.T, v *View, r Result) {
				if j := wantState(t, v, 1, cluster.JobCancelled); j.ExitCode != 0 {
					t.Errorf("job 1 ExitCode = %d; want 0", j.ExitCode)
				}
				wantFree(t, v, "n1", 0, 1, 2, 3)
				wantFree(t, v, "n2", 2, 3)
			},
		},
	})
}

func TestSetReasons(t *testing.T) {
	setup := func(t *testing.T, h *harness) {
		withRunning(t, h)
		h.must(t, CmdSetReasons, SetReasons{Reasons: []JobReason{{Job: 2, Reason: cluster.ReasonPriority}}})
	}
	runApplyCases(t, []applyCase{
		{
			name: "pending job", setup: withRunning, typ: CmdSetReasons,
			cmd: SetReasons{Reasons: []JobReason{{Job: 2, Reason: cluster.ReasonResources}, {Job: 1, Reason: "x"}, {Job: 9, Reason: "y"}}},
			check: func(t *testing.T, v *View, r Result) {
				if j := job(t, v, 2); j.Reason != cluster.ReasonResources || j.ModifyIndex != v.Index {
					t.Errorf("job 2 reason %q modified %d; want Resources at %d", j.Reason, j.ModifyIndex, v.Index)
				}
				if j := job(t, v, 1); j.Reason != "" {
					t.Errorf("running job 1 reason = %q; want it ignored", j.Reason)
				}
			},
		},
		{
			name: "unchanged reason keeps ModifyIndex", setup: setup, typ: CmdSetReasons,
			cmd: SetReasons{Reasons: []JobReason{{Job: 2, Reason: cluster.ReasonPriority}}},
			check: func(t *testing.T, v *View, r Result) {
				if j := job(t, v, 2); j.ModifyIndex == v.Index {
					t.Errorf("job 2 ModifyIndex bumped for an unchanged reason")
				}
			},
		},
	})
}

func TestRecordGPUUsage(t *testing.T) {
	usage := cluster.GPUUsage{Samples: 4, MeanUtil: 0.4, PeakUtil: 0.9, MeanMemBytes: 1 << 30, PeakMemBytes: 2 << 30}
	rec := func(node string, inc uint64, u cluster.GPUUsage) RecordGPUUsage {
		return RecordGPUUsage{Job: 1, Incarnation: inc, Node: node, Usage: u}
	}
	n1Done := func(t *testing.T, h *harness) {
		withRunning(t, h)
		h.must(t, CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n1", Cause: CauseExit})
	}
	bad := usage
	bad.MeanUtil = 1.5
	runApplyCases(t, []applyCase{
		{
			name: "recorded on its node", setup: n1Done, typ: CmdRecordGPUUsage, cmd: rec("n1", 1, usage),
			check: func(t *testing.T, v *View, r Result) {
				j := wantState(t, v, 1, cluster.JobRunning)
				if g := j.Alloc.Nodes[0].GPUUsage; g == nil || *g != usage {
					t.Errorf("n1 GPU usage = %+v; want %+v", g, usage)
				}
				if j.Alloc.Nodes[1].GPUUsage != nil {
					t.Errorf("n2 GPU usage = %+v; want none", j.Alloc.Nodes[1].GPUUsage)
				}
			},
		},
		{name: "unknown job", setup: withRunning, typ: CmdRecordGPUUsage, cmd: RecordGPUUsage{Job: 9, Incarnation: 1, Node: "n1", Usage: usage}, wantErr: ErrUnknownJob},
		{name: "node not in allocation", setup: withRunning, typ: CmdRecordGPUUsage, cmd: rec("n3", 1, usage), wantErr: ErrInvalid},
		{name: "utilization above 1", setup: withRunning, typ: CmdRecordGPUUsage, cmd: rec("n1", 1, bad), wantErr: ErrInvalid, errHas: "want 0 to 1"},
		{
			name: "stale incarnation", setup: withRunning, typ: CmdRecordGPUUsage, cmd: rec("n1", 0, usage),
			check: func(t *testing.T, v *View, r Result) {
				if g := job(t, v, 1).Alloc.Nodes[0].GPUUsage; g != nil {
					t.Errorf("a stale incarnation's usage was recorded: %+v", g)
				}
			},
		},
	})
}
