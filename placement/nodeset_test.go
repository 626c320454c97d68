package placement

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shoal-sched/shoal/cluster"
	"pgregory.net/rapid"
)

// featured gives n the features fs.
func featured(n *cluster.Node, fs ...string) *cluster.Node { n.Features = fs; return n }

// with returns j with its request edited by f.
func with(j *cluster.Job, f func(r *cluster.Request)) *cluster.Job { f(&j.Spec.Request); return j }

// exclusiveHolding is holding for a job that holds its nodes whole.
func exclusiveHolding(id cluster.JobID, byNode ...any) *cluster.Job {
	j := holding(id, cluster.JobRunning, false, byNode...)
	j.Spec.Request.Exclusive = true
	return j
}

// TestPlaceNodeSet: -w, -x, -C and --exclusive under every policy, and
// the pending reasons they produce.
func TestPlaceNodeSet(t *testing.T) {
	nodes := func() []*cluster.Node {
		ns := cat(mkLeaf("a", 3, 4, "la", "p"), mkLeaf("b", 3, 4, "lb", "p"))
		featured(ns[1], "ib", "a100") // a2
		featured(ns[4], "ib", "h100") // b2
		featured(ns[5], "h100")       // b3
		return ns
	}
	tests := []struct {
		name     string
		nodes    []*cluster.Node
		running  []*cluster.Job
		job      *cluster.Job
		want     []string // node names of the decision, in rank order; nil = not placed
		shoal    []string // want under PolicyShoal and PolicyQSSF (one leaf first), when it differs
		reason   string
		wantGPUs int // GPUs per assignment when placed
	}{
		{name: "nodelist forces a node", job: with(pending(1, 1, 1), func(r *cluster.Request) { r.NodeList = []string{"b3"} }), want: []string{"b3"}, wantGPUs: 1},
		{name: "nodelist plus policy's choice", job: with(pending(1, 3, 1), func(r *cluster.Request) { r.NodeList = []string{"b3"} }), want: []string{"a1", "a2", "b3"}, shoal: []string{"b1", "b2", "b3"}, wantGPUs: 1},
		{name: "exclude avoids", job: with(pending(1, 3, 1), func(r *cluster.Request) { r.Exclude = []string{"a1"} }), want: []string{"a2", "a3", "b1"}, shoal: []string{"b1", "b2", "b3"}, wantGPUs: 1},
		{name: "constraint AND", job: with(pending(1, 1, 1), func(r *cluster.Request) { r.Constraint = "ib&h100" }), want: []string{"b2"}, wantGPUs: 1},
		{name: "constraint OR", job: with(pending(1, 2, 1), func(r *cluster.Request) { r.Constraint = "a100|h100" }), want: []string{"a2", "b2"}, shoal: []string{"b2", "b3"}, wantGPUs: 1},
		{name: "constraint precedence", job: with(pending(1, 2, 1), func(r *cluster.Request) { r.Constraint = "a100|ib&h100" }), want: []string{"a2", "b2"}, wantGPUs: 1},
		{name: "no node has the feature", job: with(pending(1, 1, 1), func(r *cluster.Request) { r.Constraint = "v100" }), reason: ReasonBadConstraints},
		{name: "too few featured nodes", job: with(pending(1, 3, 1), func(r *cluster.Request) { r.Constraint = "h100" }), reason: ReasonBadConstraints},
		{name: "listed node down", nodes: func() []*cluster.Node { ns := nodes(); withStatus(ns[5], cluster.NodeDown); return ns }(),
			job: with(pending(1, 1, 1), func(r *cluster.Request) { r.NodeList = []string{"b3"} }), reason: cluster.ReasonReqNodeNotAvail},
		{name: "listed node drained", nodes: func() []*cluster.Node { ns := nodes(); drained(ns[0]); return ns }(),
			job: with(pending(1, 1, 1), func(r *cluster.Request) { r.NodeList = []string{"a1"} }), reason: cluster.ReasonReqNodeNotAvail},
		{name: "listed node unknown", job: with(pending(1, 1, 1), func(r *cluster.Request) { r.NodeList = []string{"zz"} }), reason: cluster.ReasonReqNodeNotAvail},
		{name: "featured node down", nodes: func() []*cluster.Node { ns := nodes(); withStatus(ns[1], cluster.NodeDown); return ns }(),
			job: with(pending(1, 1, 1), func(r *cluster.Request) { r.Constraint = "a100" }), reason: cluster.ReasonReqNodeNotAvail},
		{name: "listed node busy", running: []*cluster.Job{holding(50, cluster.JobRunning, false, "b3", seq(0, 3))},
			job: with(pending(1, 1, 1), func(r *cluster.Request) { r.NodeList = []string{"b3"} }), reason: cluster.ReasonResources},
		{name: "exclusive takes the whole node", job: with(pending(1, 1, 1), func(r *cluster.Request) { r.Exclusive = true }), want: []string{"a1"}, wantGPUs: 4},
		{name: "exclusive skips a node with a GPU-less job", running: []*cluster.Job{holding(50, cluster.JobRunning, false, "a1", []int(nil))},
			job: with(pending(1, 1, 0), func(r *cluster.Request) { r.Exclusive = true }), want: []string{"a2"}, wantGPUs: 4},
		{name: "exclusive waits for its listed node", running: []*cluster.Job{holding(50, cluster.JobRunning, false, "a1", []int{0})},
			job: with(pending(1, 1, 0), func(r *cluster.Request) { r.Exclusive = true; r.NodeList = []string{"a1"} }), reason: cluster.ReasonResources},
		{name: "GPU-less job avoids an exclusive job's node", running: []*cluster.Job{exclusiveHolding(50, "a1", seq(0, 3))},
			job: with(pending(1, 1, 0), func(r *cluster.Request) {}), want: []string{"a2"}},
		{name: "GPU-less job cannot join an exclusive job", running: []*cluster.Job{exclusiveHolding(50, "a1", seq(0, 3))},
			job: with(pending(1, 1, 0), func(r *cluster.Request) { r.NodeList = []string{"a1"} }), reason: cluster.ReasonResources},
		{name: "exclusive on a zero-GPU node", nodes: []*cluster.Node{mkNode("c1", 0, "l", "p")}, running: []*cluster.Job{holding(50, cluster.JobRunning, false, "c1", []int(nil))},
			job: with(pending(1, 1, 0), func(r *cluster.Request) { r.Exclusive = true }), reason: cluster.ReasonResources},
	}
	for _, tt := range tests {
		for _, policy := range Policies() {
			t.Run(tt.name+"/"+string(policy), func(t *testing.T) {
				ns := tt.nodes
				if ns == nil {
					ns = nodes()
				}
				res, err := PlaceWith(NewView(ns, tt.running), []*cluster.Job{tt.job}, now, Options{Policy: policy})
				if err != nil {
					t.Fatal(err)
				}
				if tt.want == nil {
					if len(res.Decisions) != 0 || res.Reasons[1] != tt.reason {
						t.Fatalf("PlaceWith = %+v, reason %q; want no decision, reason %q", res.Decisions, res.Reasons[1], tt.reason)
					}
					return
				}
				if len(res.Decisions) != 1 {
					t.Fatalf("PlaceWith = %+v, reasons %v; want job 1 placed on %v", res.Decisions, res.Reasons, tt.want)
				}
				var got []string
				for _, a := range res.Decisions[0].Nodes {
					got = append(got, a.Node)
					if len(a.GPUs) != tt.wantGPUs {
						t.Errorf("node %s: GPUs %v; want %d", a.Node, a.GPUs, tt.wantGPUs)
					}
				}
				want := tt.want
				if (policy == PolicyShoal || policy == PolicyQSSF) && tt.shoal != nil {
					want = tt.shoal
				}
				if !slices.Equal(got, want) {
					t.Errorf("PlaceWith nodes = %v; want %v", got, want)
				}
			})
		}
	}
}

// TestPlaceExclusiveBlocksLaterJobs: an exclusive job placed in a pass
// keeps later jobs of the same pass off its nodes, and a job placed first
// keeps a later exclusive job off its node.
func TestPlaceExclusiveBlocksLaterJobs(t *testing.T) {
	ns := mkLeaf("a", 2, 2, "l", "p")
	q := []*cluster.Job{
		with(pending(1, 1, 0), func(r *cluster.Request) { r.Exclusive = true }),
		pending(2, 1, 0),
		pending(3, 1, 0),
	}
	res := Place(NewView(ns, nil), q, now)
	want := []Decision{
		{Job: 1, Nodes: []Assignment{asg("a1", 0, 1)}},
		{Job: 2, Nodes: []Assignment{asg("a2")}},
		{Job: 3, Nodes: []Assignment{asg("a2")}},
	}
	if diff := cmp.Diff(want, res.Decisions, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Place (-want +got):\n%s", diff)
	}
	q = []*cluster.Job{pending(1, 2, 0), with(pending(2, 1, 0), func(r *cluster.Request) { r.Exclusive = true })}
	res = Place(NewView(ns, nil), q, now)
	if len(res.Decisions) != 1 || res.Reasons[2] != cluster.ReasonResources {
		t.Errorf("Place = %+v, %v; want job 1 only, job 2 Resources", res.Decisions, res.Reasons)
	}
}

// TestReservationExclusive: EASY backfill keeps a job that would still be
// running off an exclusive reservation's nodes, GPU-less or not.
func TestReservationExclusive(t *testing.T) {
	ns := mkLeaf("a", 2, 8, "l", "p")
	running := []*cluster.Job{runningFor(50, now, time.Hour, "a1")}
	q := []*cluster.Job{
		with(limited(1, 2, 0, time.Hour), func(r *cluster.Request) { r.Exclusive = true }),
		pending(2, 1, 0), // no limit: would still run at the reservation
		limited(3, 1, 0, 30*time.Minute),
	}
	for _, policy := range []Policy{PolicyBackfill, PolicyShoal} {
		res, _ := PlaceWith(NewView(ns, running), q, now, Options{Policy: policy})
		if res.Reservation == nil || !res.Reservation.Start.Equal(now.Add(time.Hour)) || len(res.Reservation.Nodes) != 2 {
			t.Fatalf("%s: reservation %+v; want both nodes in an hour", policy, res.Reservation)
		}
		var placed []cluster.JobID
		for _, d := range res.Decisions {
			placed = append(placed, d.Job)
		}
		if !slices.Equal(placed, []cluster.JobID{3}) || res.Reasons[2] != cluster.ReasonPriority {
			t.Errorf("%s: placed %v, reasons %v; want only job 3 (ends by the reservation)", policy, placed, res.Reasons)
		}
	}
}

func TestCheckNodeSet(t *testing.T) {
	ns := []*cluster.Node{featured(mkNode("a1", 4, "l", "p"), "ib"), mkNode("a2", 8, "l", "p"), withStatus(featured(mkNode("gone", 8, "l", "p"), "v100"), cluster.NodeLeft)}
	req := func(f func(r *cluster.Request)) cluster.Request {
		r := cluster.Request{Nodes: 1, TasksPerNode: 1, CPUsPerTask: 1}
		f(&r)
		return r
	}
	tests := []struct {
		req  cluster.Request
		want string // "" = feasible
	}{
		{req(func(r *cluster.Request) { r.Constraint = "ib" }), ""},
		{req(func(r *cluster.Request) { r.NodeList = []string{"a2"}; r.GPUsPerNode = 8 }), ""},
		{req(func(r *cluster.Request) { r.Constraint = "v100" }), `constraint "v100": no node has these features`},
		{req(func(r *cluster.Request) { r.NodeList = []string{"zz"} }), `node_list: node "zz" is not in the cluster`},
		{req(func(r *cluster.Request) { r.NodeList = []string{"gone"} }), `node_list: node "gone" is not in the cluster`},
		{req(func(r *cluster.Request) { r.NodeList = []string{"a1"}; r.GPUsPerNode = 8 }), `node_list: node "a1" has 4 GPUs`},
		{req(func(r *cluster.Request) { r.NodeList = []string{"a2"}; r.Constraint = "ib" }), `node_list: node "a2" lacks the features`},
		{req(func(r *cluster.Request) { r.Nodes = 2; r.Constraint = "ib" }), "nodes 2: only 1 node match"},
		{req(func(r *cluster.Request) { r.Nodes = 2; r.Exclude = []string{"a1"} }), "nodes 2: only 1 node match"},
		{req(func(r *cluster.Request) { r.Exclusive = true; r.GPUsPerNode = 8 }), ""},
	}
	for _, tt := range tests {
		err := Check(ns, tt.req)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%+v) = %v; want nil", tt.req, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInfeasible)):
			t.Errorf("Check(%+v) = %v; want ErrInfeasible containing %q", tt.req, err, tt.want)
		}
	}
}

// TestPlaceNodeSetProperties: over random clusters with features,
// running jobs (some exclusive, some GPU-less) and queues with random
// node lists, exclude lists, constraints and exclusivity, under every
// policy: no decision (nor reservation) puts a job on a node it may not
// use; no GPU is double-booked (DESIGN invariant 1); no exclusive job
// shares a node with another job, running or placed in the same pass;
// and every job gets a decision or a reason.
func TestPlaceNodeSetProperties(t *testing.T) {
	features := []string{"ib", "a100", "h100"}
	exprs := []string{"", "", "ib", "a100|h100", "ib&h100", "ib|a100&h100", "(ib|a100)&h100", "nope"}
	rapid.Check(t, func(t *rapid.T) {
		var nodes []*cluster.Node
		for i := range rapid.IntRange(1, 7).Draw(t, "nodes") {
			n := mkNode(fmt.Sprintf("n%d", i), rapid.IntRange(0, 3).Draw(t, "gpus"),
				rapid.SampledFrom([]string{"l1", "l2", "l3"}).Draw(t, "leaf"), rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "parent"))
			n.Status = rapid.SampledFrom([]cluster.NodeStatus{cluster.NodeUp, cluster.NodeUp, cluster.NodeUp, cluster.NodeDown}).Draw(t, "status")
			n.Drain = rapid.IntRange(0, 5).Draw(t, "drain") == 0
			for _, f := range features {
				if rapid.Bool().Draw(t, "feature") {
					n.Features = append(n.Features, f)
				}
			}
			nodes = append(nodes, n)
		}
		names := []string{"ghost"}
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		// Running jobs hold disjoint GPUs; an exclusive one holds whole
		// nodes nobody else is on.
		gpuOwner := map[string]cluster.JobID{}
		onNode := map[string][]cluster.JobID{}
		exclNode := map[string]bool{}
		var running []*cluster.Job
		for id := range rapid.IntRange(0, 4).Draw(t, "running") {
			jid := cluster.JobID(100 + id)
			excl := rapid.IntRange(0, 2).Draw(t, "exclRunning") == 0
			n := rapid.SampledFrom(nodes).Draw(t, "runNode")
			if exclNode[n.Name] || (excl && len(onNode[n.Name]) > 0) {
				continue
			}
			var gpus []int
			for g := range n.GPUs {
				key := fmt.Sprintf("%s/%d", n.Name, g)
				if _, taken := gpuOwner[key]; !taken && (excl || rapid.Bool().Draw(t, "take")) {
					gpus = append(gpus, g)
					gpuOwner[key] = jid
				}
			}
			j := holding(jid, cluster.JobRunning, false, n.Name, gpus)
			j.Spec.Request.Exclusive = excl
			j.StartTime = now
			j.Spec.Request.TimeLimit = rapid.SampledFrom([]time.Duration{0, time.Hour, 2 * time.Hour}).Draw(t, "runLimit")
			onNode[n.Name] = append(onNode[n.Name], jid)
			exclNode[n.Name] = excl
			running = append(running, j)
		}
		var queue []*cluster.Job
		for _, id := range rapid.SliceOfNDistinct(rapid.IntRange(1, 30), 0, 6, rapid.ID[int]).Draw(t, "queue") {
			j := pending(cluster.JobID(id), rapid.IntRange(1, 3).Draw(t, "reqNodes"), rapid.IntRange(0, 3).Draw(t, "reqGPUs"))
			r := &j.Spec.Request
			r.TimeLimit = rapid.SampledFrom([]time.Duration{0, 30 * time.Minute, 3 * time.Hour}).Draw(t, "limit")
			r.Constraint = rapid.SampledFrom(exprs).Draw(t, "constraint")
			r.Exclusive = rapid.IntRange(0, 2).Draw(t, "exclusive") == 0
			r.NodeList = rapid.SliceOfNDistinct(rapid.SampledFrom(names), 0, 2, rapid.ID[string]).Draw(t, "nodelist")
			for _, n := range rapid.SliceOfNDistinct(rapid.SampledFrom(names), 0, 2, rapid.ID[string]).Draw(t, "exclude") {
				if !slices.Contains(r.NodeList, n) {
					r.Exclude = append(r.Exclude, n)
				}
			}
			*r = r.WithDefaults()
			queue = append(queue, j)
		}
		policy := rapid.SampledFrom(Policies()).Draw(t, "policy")
		res, err := PlaceWith(NewView(nodes, running), queue, now, Options{Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*cluster.Node{}
		for _, n := range nodes {
			byName[n.Name] = n
		}
		// allowed checks one job's assignments against its request.
		allowed := func(what string, req cluster.Request, as []Assignment) {
			c, err := cluster.ParseConstraint(req.Constraint)
			if req.Constraint == "" {
				c = nil
			} else if err != nil {
				t.Fatalf("%s: placed with constraint %q that does not parse", what, req.Constraint)
			}
			if len(as) != req.Nodes {
				t.Fatalf("%s: %d nodes; want %d", what, len(as), req.Nodes)
			}
			for _, l := range req.NodeList {
				if !slices.ContainsFunc(as, func(a Assignment) bool { return a.Node == l }) {
					t.Fatalf("%s: %v lacks listed node %s", what, as, l)
				}
			}
			for _, a := range as {
				n := byName[a.Node]
				switch {
				case n == nil || !n.Schedulable():
					t.Fatalf("%s: node %s not usable", what, a.Node)
				case slices.Contains(req.Exclude, a.Node):
					t.Fatalf("%s: excluded node %s", what, a.Node)
				case !c.Match(n.Features):
					t.Fatalf("%s: node %s (features %v) does not match %q", what, a.Node, n.Features, req.Constraint)
				case req.Exclusive && len(a.GPUs) != len(n.GPUs):
					t.Fatalf("%s: exclusive but given GPUs %v of %d", what, a.GPUs, len(n.GPUs))
				case !req.Exclusive && len(a.GPUs) != req.GPUsPerNode:
					t.Fatalf("%s: GPUs %v; want %d", what, a.GPUs, req.GPUsPerNode)
				}
			}
		}
		byID := map[cluster.JobID]*cluster.Job{}
		for _, j := range queue {
			byID[j.ID] = j
		}
		for _, d := range res.Decisions {
			req := byID[d.Job].Spec.Request
			allowed(fmt.Sprintf("job %d", d.Job), req, d.Nodes)
			for _, a := range d.Nodes {
				for _, g := range a.GPUs {
					key := fmt.Sprintf("%s/%d", a.Node, g)
					if other, taken := gpuOwner[key]; taken {
						t.Fatalf("job %d: GPU %s double-booked with job %d", d.Job, key, other)
					}
					gpuOwner[key] = d.Job
				}
				if exclNode[a.Node] || (req.Exclusive && len(onNode[a.Node]) > 0) {
					t.Fatalf("job %d (exclusive %v) shares node %s with %v (exclusive %v)", d.Job, req.Exclusive, a.Node, onNode[a.Node], exclNode[a.Node])
				}
				onNode[a.Node] = append(onNode[a.Node], d.Job)
				exclNode[a.Node] = req.Exclusive
			}
		}
		if r := res.Reservation; r != nil {
			allowed(fmt.Sprintf("reservation of job %d", r.Job), byID[r.Job].Spec.Request, r.Nodes)
		}
		for id := range byID {
			_, hasReason := res.Reasons[id]
			placed := slices.ContainsFunc(res.Decisions, func(d Decision) bool { return d.Job == id })
			if placed == hasReason {
				t.Fatalf("job %d: placed %v, reason %q; want exactly one", id, placed, res.Reasons[id])
			}
		}
	})
}
