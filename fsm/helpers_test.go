package fsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shoal-sched/shoal/cluster"
)

// t0 is the leader's clock at the first entry of every test log; each
// entry the harness applies is stamped one second later than the last.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// harness applies commands at consecutive indexes with leader-stamped times.
type harness struct {
	s     *State
	index uint64
	now   time.Time
}

func newHarness() *harness { return &harness{s: New(), now: t0} }

// apply encodes body, stamps the harness time on it and applies it at the
// next index.
func (h *harness) apply(tb testing.TB, t CmdType, body any) Result {
	tb.Helper()
	h.index++
	h.now = h.now.Add(time.Second)
	return h.s.Apply(h.index, mustEncode(tb, t, stamp(body, h.now)))
}

// must applies and fails the test on a refusal.
func (h *harness) must(tb testing.TB, t CmdType, body any) Result {
	tb.Helper()
	r := h.apply(tb, t, body)
	if r.Err != nil {
		tb.Fatalf("apply %s at %d: %v", t, h.index, r.Err)
	}
	return r
}

// stamp returns body with its Time field set to now.
func stamp(body any, now time.Time) any {
	switch c := body.(type) {
	case SubmitJob:
		c.Time = now
		return c
	case ArchiveJobs:
		c.Time = now
		return c
	case CancelJob:
		c.Time = now
		return c
	case SetHold:
		c.Time = now
		return c
	case RequeueJob:
		c.Time = now
		return c
	case PreemptJob:
		c.Time = now
		return c
	case UpsertNode:
		c.Time = now
		return c
	case NodeDown:
		c.Time = now
		return c
	case NodeLeft:
		c.Time = now
		return c
	case SetDrain:
		c.Time = now
		return c
	case Allocate:
		c.Time = now
		return c
	case TaskStarted:
		c.Time = now
		return c
	case TaskExited:
		c.Time = now
		return c
	case StartStep:
		c.Time = now
		return c
	case StepExited:
		c.Time = now
		return c
	case CancelStep:
		c.Time = now
		return c
	case GrowJob:
		c.Time = now
		return c
	case ShrinkJob:
		c.Time = now
		return c
	}
	return body
}

func mustEncode(tb testing.TB, t CmdType, body any) []byte {
	tb.Helper()
	b, err := Encode(t, body)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// spec is a valid job spec asking for nodes nodes of gpus GPUs each.
func spec(nodes, gpus int) cluster.Spec {
	return cluster.Spec{
		Name:    "train",
		Command: []string{"python", "train.py"},
		Request: cluster.Request{Nodes: nodes, GPUsPerNode: gpus}.WithDefaults(),
		User:    "ada",
		UID:     1000,
		GID:     1000,
	}
}

// batchSpec is a valid batch job spec: a script, no command.
func batchSpec(nodes, gpus int) cluster.Spec {
	sp := spec(nodes, gpus)
	sp.Command = nil
	sp.Batch = &cluster.Batch{Script: "#!/bin/sh\nsrun python train.py\n"}
	return sp
}

// stepCmd is a StartStep of job id's incarnation inc with the given node
// count and tasks per node (0: the defaults).
func stepCmd(id cluster.JobID, inc uint64, nodes, tpn int) StartStep {
	return StartStep{Job: id, Incarnation: inc, Spec: cluster.StepSpec{
		Name: "step", Command: []string{"python", "eval.py"}, Nodes: nodes, TasksPerNode: tpn,
	}}
}

// gpuNode is a node announcement with gpus GPUs under leaf switch sw.
func gpuNode(name string, gpus int, sw string) cluster.Node {
	n := cluster.Node{
		Name:     name,
		APIAddr:  "127.0.0.1:7000",
		CPUs:     64,
		Topology: cluster.Topology{Switch: sw, SwitchParent: "spine0"},
		Version:  "0.1.0",
	}
	for i := range gpus {
		n.GPUs = append(n.GPUs, cluster.GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", name, i), Model: "H100", NUMA: i / 4})
	}
	return n
}

// place is a decision giving job the listed GPUs on each node, in order:
// place(1, "n1", []int{0, 1}, "n2", []int{0, 1}).
func place(job cluster.JobID, nodeGPUs ...any) Decision {
	d := Decision{Job: job}
	for i := 0; i+1 < len(nodeGPUs); i += 2 {
		d.Nodes = append(d.Nodes, Placement{Node: nodeGPUs[i].(string), GPUs: nodeGPUs[i+1].([]int)})
	}
	return d
}

// drainedSnapshot returns a snapshot holding node name, drained, with gpus
// GPUs: no command drains a node yet, so tests restore one.
func drainedSnapshot(tb testing.TB, name string, gpus int) []byte {
	tb.Helper()
	h := newHarness()
	h.must(tb, CmdUpsertNode, UpsertNode{Node: gpuNode(name, gpus, "leaf0")})
	n, _ := h.s.View().Node(name)
	d := n.Clone()
	d.Drain, d.DrainReason = true, "maintenance"
	body := snapshotBody{Index: h.index, Hash: make([]byte, 32), Nodes: []*cluster.Node{d}}
	return encodeBody(tb, body)
}

// encodeBody encodes body as a snapshot as it stands, sorted or not, so
// tests can build corrupt ones.
func encodeBody(tb testing.TB, body snapshotBody) []byte {
	tb.Helper()
	b, err := msgpack.Marshal(&body)
	if err != nil {
		tb.Fatal(err)
	}
	return append([]byte{snapshotVersion}, b...)
}
