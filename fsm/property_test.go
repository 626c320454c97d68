package fsm

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/shoal-sched/shoal/cluster"
)

// logEntry is one applied entry, kept to replay the log elsewhere.
type logEntry struct {
	index uint64
	data  []byte
}

// model drives a State with random commands shaped to hit the interesting
// paths (mostly plausible decisions and reports, some nonsense) and checks
// the invariants after every entry.
type model struct {
	s     *State
	log   []logEntry
	index uint64
	now   time.Time
	nodes []string
	// prevInc and prevState remember each job as the last check saw it.
	prevInc     map[cluster.JobID]uint64
	prevState   map[cluster.JobID]cluster.JobState
	prevHolding map[cluster.JobID]bool
	// prevJob is each job's record at the last check (records are never
	// modified once stored, so keeping the pointer is keeping the copy).
	prevJob map[cluster.JobID]*cluster.Job
	// before is the state the last entry was applied to, at beforeAt.
	before   *View
	beforeAt time.Time
	// requeued is the job the last entry asked to requeue (scontrol
	// requeue may take a job out of a terminal state), or 0.
	requeued cluster.JobID
	// decisions are the last entry's, when it was an Allocate.
	decisions []Decision
}

func (m *model) apply(t *rapid.T, typ CmdType, body any) {
	m.index += uint64(rapid.IntRange(1, 3).Draw(t, "gap")) // raft indexes have gaps
	m.now = m.now.Add(time.Duration(rapid.IntRange(0, 5).Draw(t, "dt")) * time.Second)
	m.requeued, m.decisions = 0, nil
	switch c := body.(type) {
	case RequeueJob:
		m.requeued = c.Job
	case Allocate:
		m.decisions = c.Decisions
	}
	data, err := Encode(typ, stamp(body, m.now))
	if err != nil {
		t.Fatal(err)
	}
	m.applyRaw(t, data)
}

func (m *model) applyRaw(t *rapid.T, data []byte) {
	m.before, m.beforeAt = m.s.View(), m.now
	m.log = append(m.log, logEntry{m.index, data})
	m.s.Apply(m.index, data)
}

// drawJob returns a job id, usually of a job in one of the states given
// (when there is one), else any id, known or not.
func (m *model) drawJob(t *rapid.T, states ...cluster.JobState) (cluster.JobID, *cluster.Job) {
	v := m.s.View()
	var in []cluster.JobID
	for _, j := range v.Jobs() {
		if slices.Contains(states, j.State) {
			in = append(in, j.ID)
		}
	}
	id := cluster.JobID(rapid.IntRange(0, len(v.Jobs())+1).Draw(t, "job"))
	if len(in) > 0 && rapid.IntRange(0, 3).Draw(t, "in state") > 0 {
		id = rapid.SampledFrom(in).Draw(t, "job in state")
	}
	j, _ := v.Job(id)
	return id, j
}

// drawElastic returns, when there is one, usually a running job with an
// elastic allocation, else drawJob's running one.
func (m *model) drawElastic(t *rapid.T) (cluster.JobID, *cluster.Job) {
	var in []*cluster.Job
	for _, j := range m.s.View().Jobs() {
		if j.State == cluster.JobRunning && j.Alloc != nil && j.Alloc.Elastic {
			in = append(in, j)
		}
	}
	if len(in) > 0 && rapid.IntRange(0, 3).Draw(t, "elastic?") > 0 {
		j := rapid.SampledFrom(in).Draw(t, "elastic job")
		return j.ID, j
	}
	return m.drawJob(t, cluster.JobRunning)
}

func (m *model) drawNode(t *rapid.T) string {
	return rapid.SampledFrom(m.nodes).Draw(t, "node")
}

func (m *model) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"submit": func(t *rapid.T) {
			nodes, gpus := rapid.IntRange(1, 3).Draw(t, "nodes"), rapid.IntRange(0, 3).Draw(t, "gpus")
			sp := spec(nodes, gpus)
			if rapid.Bool().Draw(t, "batch") {
				sp = batchSpec(nodes, gpus)
			}
			sp.Request.TasksPerNode = rapid.IntRange(1, 2).Draw(t, "tpn")
			if rapid.IntRange(0, 4).Draw(t, "array?") == 0 {
				sp.Array = &cluster.ArraySpec{Indices: []int{0, 1, 2}, Throttle: rapid.IntRange(0, 2).Draw(t, "throttle")}
			}
			if last := len(m.s.View().Jobs()); last > 0 && rapid.IntRange(0, 3).Draw(t, "dep?") == 0 {
				sp.Dependency = &cluster.Dependency{Any: rapid.Bool().Draw(t, "any"), Conditions: []cluster.DepCondition{{
					Type: rapid.SampledFrom([]string{cluster.DepAfter, cluster.DepAfterAny, cluster.DepAfterOK, cluster.DepAfterNotOK}).Draw(t, "dep type"),
					Jobs: []cluster.DepJob{{ID: cluster.JobID(rapid.IntRange(1, last).Draw(t, "dep job")), Task: -1}},
				}, {Type: cluster.DepSingleton}}}
			}
			sp.Hold = rapid.IntRange(0, 5).Draw(t, "hold?") == 0
			if rapid.IntRange(0, 3).Draw(t, "range?") == 0 {
				sp.Request.NodesMax = nodes + rapid.IntRange(1, 2).Draw(t, "more nodes") // elastic unless batch
			}
			m.apply(t, CmdSubmitJob, SubmitJob{
				RequestID: rapid.SampledFrom([]string{"", "", "a", "b", "c", "d"}).Draw(t, "rid"),
				Spec:      requeueSpec(sp, rapid.Bool().Draw(t, "requeue")),
			})
		},
		"upsert": func(t *rapid.T) {
			// GPU counts change, so a node may shrink under held GPUs.
			m.apply(t, CmdUpsertNode, UpsertNode{Node: gpuNode(m.drawNode(t), rapid.IntRange(0, 4).Draw(t, "gpus"), "leaf0")})
		},
		"nodeDown": func(t *rapid.T) {
			m.apply(t, CmdNodeDown, NodeDown{Node: m.drawNode(t)})
		},
		"nodeLeft": func(t *rapid.T) {
			m.apply(t, CmdNodeLeft, NodeLeft{Node: m.drawNode(t)})
		},
		"drain": func(t *rapid.T) {
			m.apply(t, CmdSetDrain, SetDrain{Node: m.drawNode(t), Drain: rapid.Bool().Draw(t, "drain"), Reason: "r"})
		},
		"allocate": func(t *rapid.T) {
			var c Allocate
			for range rapid.IntRange(1, 3).Draw(t, "decisions") {
				d := m.drawDecision(t)
				d.Elastic = rapid.Bool().Draw(t, "elastic")
				c.Decisions = append(c.Decisions, d)
			}
			m.apply(t, CmdAllocate, c)
		},
		"grow": func(t *rapid.T) {
			// Mostly a plausible grow of a running elastic job: up nodes
			// it does not have, free GPUs, CPUs from a drawn offset (some
			// held); else a drawn decision's placements.
			id, j := m.drawElastic(t)
			v := m.s.View()
			g := GrowJob{Job: id, Incarnation: uint64(rapid.IntRange(0, 2).Draw(t, "inc")), Nodes: m.drawDecision(t).Nodes}
			if j != nil && j.Alloc != nil && rapid.IntRange(0, 3).Draw(t, "odd") > 0 {
				g.Incarnation, g.Nodes = j.Incarnation, nil
				req := j.GrowRequest(true)
				for _, name := range m.nodes {
					n, ok := v.Node(name)
					free := v.FreeGPUs(name)
					if !ok || n.Status != cluster.NodeUp || j.Alloc.Find(name) >= 0 || len(free) < req.GPUsPerNode || !rapid.Bool().Draw(t, "take") {
						continue
					}
					want, off := req.CPUsAt(n, 0, 1), rapid.IntRange(0, 4).Draw(t, "cpu offset")
					p := Placement{Node: name, GPUs: free[:req.GPUsPerNode], MemMiB: req.MemAt(n, 0, 1)}
					for c := range want {
						p.CPUs = append(p.CPUs, off+c)
					}
					g.Nodes = append(g.Nodes, p)
				}
			}
			m.apply(t, CmdGrowJob, g)
		},
		"shrink": func(t *rapid.T) {
			id, j := m.drawElastic(t)
			c := ShrinkJob{Job: id, Incarnation: uint64(rapid.IntRange(0, 2).Draw(t, "inc")), Node: m.drawNode(t)}
			if j != nil && j.Alloc != nil && rapid.IntRange(0, 3).Draw(t, "odd") > 0 {
				c.Incarnation = j.Incarnation
				c.Node = rapid.SampledFrom(j.Alloc.Nodes).Draw(t, "alloc node").Node
			}
			m.apply(t, CmdShrinkJob, c)
		},
		"update nodes": func(t *rapid.T) {
			// scontrol update NumNodes=K, mostly on a running elastic job.
			id, _ := m.drawElastic(t)
			n := rapid.IntRange(0, 5).Draw(t, "num nodes")
			m.apply(t, CmdUpdateJob, UpdateJob{Job: id, Admin: true, Fields: JobUpdate{Nodes: &n}})
		},
		"started": func(t *rapid.T) {
			id, j := m.drawJob(t)
			inc, node := m.drawReport(t, j)
			m.apply(t, CmdTaskStarted, TaskStarted{Job: id, Incarnation: inc, Node: node})
		},
		"exited": func(t *rapid.T) {
			id, j := m.drawJob(t)
			inc, node := m.drawReport(t, j)
			m.apply(t, CmdTaskExited, TaskExited{
				Job: id, Incarnation: inc, Node: node,
				ExitCode: rapid.SampledFrom([]int{0, 0, 0, 1, 137}).Draw(t, "code"),
				Cause:    rapid.SampledFrom([]string{CauseExit, CauseExit, CauseTimeout, CauseCancelled, CauseFenced, CauseLost, CauseStartFail}).Draw(t, "cause"),
			})
		},
		"startStep": func(t *rapid.T) {
			id, j := m.drawJob(t, cluster.JobRunning)
			c := StartStep{Job: id, Incarnation: uint64(rapid.IntRange(0, 2).Draw(t, "inc")), Spec: cluster.StepSpec{
				Command:      []string{"srun"},
				Nodes:        rapid.IntRange(-1, 3).Draw(t, "step nodes"),
				TasksPerNode: rapid.IntRange(0, 2).Draw(t, "step tpn"),
				GPUsPerTask:  rapid.IntRange(0, 2).Draw(t, "gpus per task"),
			}}
			if j != nil && j.Alloc != nil && rapid.IntRange(0, 5).Draw(t, "odd") > 0 {
				// Mostly a step that fits the allocation.
				c.Incarnation = j.Incarnation
				c.Spec.Nodes = rapid.IntRange(0, len(j.Alloc.Nodes)).Draw(t, "fitting nodes")
				c.Spec.GPUsPerTask = rapid.IntRange(0, min(1, j.Spec.Request.GPUsPerNode)).Draw(t, "fitting gpus")
			}
			if rapid.Bool().Draw(t, "exclusive") {
				// A step that holds its GPUs and CPUs (not --overlap).
				c.Spec.Exclusive = true
				c.Spec.Exact = rapid.Bool().Draw(t, "exact")
				if c.Spec.GPUsPerTask == 0 {
					c.Spec.GPUs = rapid.IntRange(0, 3).Draw(t, "step gpus")
				}
			}
			m.apply(t, CmdStartStep, c)
		},
		"stepExited": func(t *rapid.T) {
			id, j := m.drawJob(t, cluster.JobRunning)
			c := StepExited{
				Job: id, Incarnation: uint64(rapid.IntRange(0, 2).Draw(t, "inc")), Step: rapid.IntRange(-1, 3).Draw(t, "step"), Node: m.drawNode(t),
				ExitCode: rapid.SampledFrom([]int{0, 0, 0, 1, 143}).Draw(t, "code"),
				Cause:    rapid.SampledFrom([]string{CauseExit, CauseExit, CauseExit, CauseCancelled, CauseFenced, CauseLost}).Draw(t, "cause"),
			}
			if j != nil && len(j.Steps) > 0 && rapid.IntRange(0, 5).Draw(t, "odd") > 0 {
				st := rapid.SampledFrom(j.Steps).Draw(t, "a step")
				c.Incarnation, c.Step = j.Incarnation, st.ID
				c.Node = rapid.SampledFrom(st.Nodes).Draw(t, "step node").Node
			}
			m.apply(t, CmdStepExited, c)
		},
		"cancelStep": func(t *rapid.T) {
			id, j := m.drawJob(t, cluster.JobRunning)
			s := rapid.IntRange(-1, 3).Draw(t, "step")
			if j != nil && len(j.Steps) > 0 {
				s = rapid.IntRange(0, len(j.Steps)-1).Draw(t, "a step")
			}
			m.apply(t, CmdCancelStep, CancelStep{Job: id, Step: s})
		},
		"cancel": func(t *rapid.T) {
			id, _ := m.drawJob(t)
			m.apply(t, CmdCancelJob, CancelJob{Job: id})
		},
		"hold": func(t *rapid.T) {
			id, _ := m.drawJob(t, cluster.JobPending)
			hold := rapid.SampledFrom([]string{cluster.HoldNone, cluster.HoldUser, cluster.HoldAdmin, "bogus"}).Draw(t, "hold")
			m.apply(t, CmdSetHold, SetHold{Job: id, Hold: hold})
		},
		"requeue": func(t *rapid.T) {
			id, _ := m.drawJob(t, cluster.JobRunning, cluster.JobCompleted, cluster.JobFailed)
			m.apply(t, CmdRequeueJob, RequeueJob{Job: id, Hold: rapid.SampledFrom([]string{"", cluster.HoldUser}).Draw(t, "hold")})
		},
		"preempt": func(t *rapid.T) {
			id, _ := m.drawJob(t, cluster.JobRunning)
			by, _ := m.drawJob(t, cluster.JobPending)
			grace := time.Duration(rapid.IntRange(0, 5).Draw(t, "grace")) * time.Second
			m.apply(t, CmdPreemptJob, PreemptJob{Job: id, By: by, Deadline: m.now.Add(grace)})
		},
		"cancelPreempted": func(t *rapid.T) {
			id, _ := m.drawJob(t, cluster.JobRunning)
			m.apply(t, CmdCancelJob, CancelJob{Job: id, Reason: cluster.ReasonPreempted})
		},
		"cancelNever": func(t *rapid.T) {
			id, _ := m.drawJob(t, cluster.JobPending)
			m.apply(t, CmdCancelJob, CancelJob{Job: id, Reason: cluster.ReasonDependencyNever})
		},
		"reasons": func(t *rapid.T) {
			id, _ := m.drawJob(t)
			m.apply(t, CmdSetReasons, SetReasons{Reasons: []JobReason{{Job: id, Reason: rapid.SampledFrom([]string{"", cluster.ReasonResources, cluster.ReasonPriority}).Draw(t, "reason")}}})
		},
		"garbage": func(t *rapid.T) {
			m.index++
			m.applyRaw(t, rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "bytes"))
		},
		"": m.check,
	}
}

// weighted returns the actions with the common ones listed several times
// (Repeat draws action names uniformly).
func (m *model) weighted() map[string]func(*rapid.T) {
	a := m.actions()
	for _, name := range []string{"submit", "allocate", "allocate", "grow", "shrink", "exited", "started", "startStep", "startStep", "startStep", "stepExited", "stepExited", "stepExited", "cancelStep"} {
		for i := 2; ; i++ {
			key := fmt.Sprintf("%s#%d", name, i)
			if _, taken := a[key]; !taken {
				a[key] = a[name]
				break
			}
		}
	}
	return a
}

// drawDecision proposes a placement that is usually plausible (a pending
// job, its shape, distinct up nodes, free GPUs) and often aims at GPUs
// another job holds, which the FSM must refuse.
func (m *model) drawDecision(t *rapid.T) Decision {
	v := m.s.View()
	var pending []cluster.JobID
	for _, j := range v.Jobs() {
		if j.State == cluster.JobPending {
			pending = append(pending, j.ID)
		}
	}
	var up []string
	for _, n := range v.Nodes() {
		if n.Status == cluster.NodeUp {
			up = append(up, n.Name)
		}
	}
	id, _ := m.drawJob(t)
	nodes, gpus := rapid.IntRange(1, 3).Draw(t, "n"), rapid.IntRange(0, 3).Draw(t, "g")
	names := rapid.SliceOfN(rapid.SampledFrom(m.nodes), nodes, nodes).Draw(t, "names")
	if len(pending) > 0 && rapid.IntRange(0, 4).Draw(t, "plausible") > 0 {
		id = rapid.SampledFrom(pending).Draw(t, "pending")
		j, _ := v.Job(id)
		nodes, gpus = j.Spec.Request.Nodes, j.Spec.Request.GPUsPerNode
		if len(up) >= nodes {
			names = rapid.SliceOfNDistinct(rapid.SampledFrom(up), nodes, nodes, func(s string) string { return s }).Draw(t, "distinct")
		}
	}
	d := Decision{Job: id}
	for _, name := range names {
		free := v.FreeGPUs(name)
		var held []int
		for g := range 5 {
			if _, ok := v.HeldBy(name, g); ok {
				held = append(held, g)
			}
		}
		pool := []int{0, 1, 2, 3, 4}
		switch rapid.IntRange(0, 3).Draw(t, "pool") {
		case 0, 1:
			if len(free) >= gpus {
				pool = free
			}
		case 2:
			if len(held) > 0 {
				pool = held
			}
		}
		p := Placement{Node: name}
		if gpus > 0 {
			// Distinct most of the time; a repeated GPU must be refused.
			if len(pool) >= gpus && rapid.IntRange(0, 5).Draw(t, "repeat gpu") > 0 {
				p.GPUs = rapid.SliceOfNDistinct(rapid.SampledFrom(pool), gpus, gpus, func(g int) int { return g }).Draw(t, "gpus")
			} else {
				p.GPUs = rapid.SliceOfN(rapid.SampledFrom(pool), gpus, gpus).Draw(t, "gpus")
			}
		}
		d.Nodes = append(d.Nodes, p)
	}
	return d
}

// drawReport returns an incarnation (usually the job's) and a node
// (usually one of its allocation's).
func (m *model) drawReport(t *rapid.T, j *cluster.Job) (uint64, string) {
	if j == nil || j.Alloc == nil || rapid.IntRange(0, 5).Draw(t, "odd") == 0 {
		return uint64(rapid.IntRange(0, 2).Draw(t, "inc")), m.drawNode(t)
	}
	return j.Incarnation, rapid.SampledFrom(j.Alloc.NodeNames()).Draw(t, "allocnode")
}

// check asserts the invariants the FSM must keep at every index.
func (m *model) check(t *rapid.T) {
	v := m.s.View()
	// DESIGN invariant 1: no GPU held by two unreleased allocations, and the
	// view's index of held GPUs agrees with the jobs.
	holder := map[string]cluster.JobID{}
	ports := map[string]cluster.JobID{}
	for _, j := range v.Jobs() {
		if j.Alloc == nil {
			continue
		}
		if j.HoldsResources() {
			key := fmt.Sprintf("%s:%d", j.Alloc.Nodes[0].Node, j.Alloc.MasterPort)
			if other, dup := ports[key]; dup {
				t.Fatalf("master port %s used by jobs %d and %d", key, other, j.ID)
			}
			ports[key] = j.ID
		}
		for _, na := range j.Alloc.Nodes {
			if na.Released {
				continue
			}
			for _, g := range na.GPUs {
				key := fmt.Sprintf("%s/%d", na.Node, g)
				if other, dup := holder[key]; dup {
					t.Fatalf("gpu %s held by jobs %d and %d", key, other, j.ID)
				}
				holder[key] = j.ID
				if id, ok := v.HeldBy(na.Node, g); !ok || id != j.ID {
					t.Fatalf("HeldBy(%s) = %d, %t; want %d", key, id, ok, j.ID)
				}
			}
		}
	}
	for _, n := range v.Nodes() {
		var want []int
		for i := range n.GPUs {
			if _, held := holder[fmt.Sprintf("%s/%d", n.Name, i)]; !held {
				want = append(want, i)
			}
		}
		if got := v.FreeGPUs(n.Name); !slices.Equal(got, want) {
			t.Fatalf("FreeGPUs(%s) = %v; want %v", n.Name, got, want)
		}
	}
	// Holds, dependencies and array throttles: every job the last entry
	// started was admitted by Gates over the state its decision met (the
	// decisions before it in the entry applied).
	if m.before != nil {
		work := slices.Clone(m.before.Jobs())
		for _, d := range m.decisions {
			now, ok := v.Job(d.Job)
			i, known := findJob(work, d.Job)
			if !ok || !known || now.Incarnation == work[i].Incarnation {
				continue // refused
			}
			if why := newGates(work, m.before.Policy(), m.beforeAt).Admit(work[i]); why != "" {
				t.Fatalf("job %d started though it had to wait: %s", d.Job, why)
			}
			work[i] = now
		}
		for _, j := range v.Jobs() {
			if old, ok := m.before.Job(j.ID); ok && j.Incarnation > old.Incarnation && m.decisions == nil {
				t.Fatalf("job %d started by an entry that was no Allocate", j.ID)
			}
		}
	}
	// DESIGN invariant 3: a job is never in two incarnations at once. An
	// incarnation starts only from PENDING with nothing held, and a
	// terminal state is final.
	for _, j := range v.Jobs() {
		prevInc, prevState, prevHolding := m.prevInc[j.ID], m.prevState[j.ID], m.prevHolding[j.ID]
		switch {
		case j.Incarnation < prevInc:
			t.Fatalf("job %d incarnation went from %d to %d", j.ID, prevInc, j.Incarnation)
		case j.Incarnation > prevInc && (prevState != cluster.JobPending && prevState != "" || prevHolding):
			t.Fatalf("job %d started incarnation %d from %s (holding %t)", j.ID, j.Incarnation, prevState, prevHolding)
		case prevState.Terminal() && j.State != prevState && j.ID != m.requeued:
			t.Fatalf("job %d left terminal state %s for %s", j.ID, prevState, j.State)
		case j.Incarnation == 0 && j.Alloc != nil:
			t.Fatalf("job %d never started but has alloc %v", j.ID, j.Alloc)
		case j.State == cluster.JobPending && j.HoldsResources():
			t.Fatalf("job %d PENDING while holding resources", j.ID)
		case (j.State == cluster.JobRunning || j.State == cluster.JobRequeued) && j.Alloc == nil:
			t.Fatalf("job %d %s without an allocation", j.ID, j.State)
		case j.State == cluster.JobRequeued && !j.HoldsResources():
			t.Fatalf("job %d REQUEUED with every node released: it should be PENDING", j.ID)
		}
		// An elastic job's nodes that may run its tasks hold distinct
		// places (cluster.NodeAlloc.Slot): their ranks follow from them.
		if j.State == cluster.JobRunning && j.Alloc != nil && j.Alloc.Elastic {
			places := map[int]string{}
			for i, na := range j.Alloc.Nodes {
				if !j.Alloc.Live(i) && na.Released {
					continue
				}
				if other, dup := places[j.Alloc.SlotOf(i)]; dup {
					t.Fatalf("job %d: nodes %s and %s both at place %d", j.ID, other, na.Node, j.Alloc.SlotOf(i))
				}
				places[j.Alloc.SlotOf(i)] = na.Node
			}
		}
		m.prevInc[j.ID], m.prevState[j.ID], m.prevHolding[j.ID] = j.Incarnation, j.State, j.HoldsResources()
		m.checkSteps(t, j, m.prevJob[j.ID])
		m.prevJob[j.ID] = j
	}
	m.requeued, m.decisions = 0, nil
}

// checkSteps asserts what holds of a job's steps, now (j) and since the
// last check (prev, nil for a new job).
func (m *model) checkSteps(t *rapid.T, j, prev *cluster.Job) {
	if j.State == cluster.JobPending && j.Steps != nil {
		t.Fatalf("job %d PENDING with steps %+v: no step survives a requeue", j.ID, j.Steps)
	}
	var before []cluster.Step
	if prev != nil && prev.Incarnation == j.Incarnation && prev.State != cluster.JobPending && j.State != cluster.JobPending {
		before = prev.Steps
	}
	if len(j.Steps) < len(before) {
		t.Fatalf("job %d lost steps: %d, was %d", j.ID, len(j.Steps), len(before))
	}
	if len(j.Steps) > len(before) && (prev == nil || prev.State != cluster.JobRunning || prev.Incarnation != j.Incarnation) {
		t.Fatalf("job %d started a step while it was not RUNNING (was %v)", j.ID, prev)
	}
	// DESIGN invariant 1 inside a job: no GPU or CPU of the job held by
	// two live nodes of Exclusive steps, and only the job's.
	held := map[string]int{}
	for k, st := range j.Steps {
		for _, sn := range st.Nodes {
			if !taskLive(sn.State) {
				continue
			}
			if !st.Spec.Exclusive && (len(sn.GPUs) > 0 || len(sn.CPUs) > 0) {
				t.Fatalf("job %d shared step %d holds %+v", j.ID, k, sn)
			}
			ai := j.Alloc.Find(sn.Node)
			for _, g := range sn.GPUs {
				if ai < 0 || !slices.Contains(j.Alloc.Nodes[ai].GPUs, g) {
					t.Fatalf("job %d step %d holds GPU %d on %s, not the job's", j.ID, k, g, sn.Node)
				}
				key := fmt.Sprintf("gpu %s %d", sn.Node, g)
				if held[key]++; held[key] > 1 {
					t.Fatalf("job %d: %s held by two running steps (step %d)", j.ID, key, k)
				}
			}
			for _, c := range sn.CPUs {
				key := fmt.Sprintf("cpu %s %d", sn.Node, c)
				if held[key]++; held[key] > 1 {
					t.Fatalf("job %d: %s held by two running steps (step %d)", j.ID, key, k)
				}
			}
		}
	}
	for k, st := range j.Steps {
		if st.ID != k || st.Incarnation != j.Incarnation {
			t.Fatalf("job %d steps[%d]: id %d incarnation %d; want id %d, the job's incarnation %d", j.ID, k, st.ID, st.Incarnation, k, j.Incarnation)
		}
		live, prevAt := 0, -1
		for i, sn := range st.Nodes {
			// Steps only on the allocation's nodes, in rank order: its
			// first ones, or, elastic, those it had at the step's start.
			at := i
			if j.Alloc.Elastic {
				at = j.Alloc.Find(sn.Node)
			}
			if at <= prevAt || at >= len(j.Alloc.Nodes) {
				t.Fatalf("job %d step %d node %d = %+v: not the allocation's next node in rank order", j.ID, k, i, sn)
			}
			prevAt = at
			na := j.Alloc.Nodes[at]
			if sn.Node != na.Node || sn.FirstRank != i*st.Spec.TasksPerNode || sn.Tasks != st.Spec.TasksPerNode {
				t.Fatalf("job %d step %d node %d = %+v; want node %s from rank %d", j.ID, k, i, sn, na.Node, i*st.Spec.TasksPerNode)
			}
			if taskLive(sn.State) {
				live++
				if na.Released {
					t.Fatalf("job %d step %d still live on released node %s", j.ID, k, na.Node)
				}
			}
		}
		// A step ends exactly when its last node is done.
		ended := !st.EndTime.IsZero()
		switch {
		case len(st.Nodes) == 0:
			t.Fatalf("job %d step %d has no nodes", j.ID, k)
		case ended != (live == 0):
			t.Fatalf("job %d step %d: %d nodes live but ended %t (%+v)", j.ID, k, live, ended, st)
		case st.State == cluster.StepRunning && (live == 0 || j.State != cluster.JobRunning):
			t.Fatalf("job %d (%s) step %d RUNNING with %d nodes live", j.ID, j.State, k, live)
		case (st.State == cluster.StepCompleted || st.State == cluster.StepFailed) && live > 0:
			t.Fatalf("job %d step %d %s with %d nodes live", j.ID, k, st.State, live)
		}
		if k < len(before) {
			if b := before[k]; !b.EndTime.IsZero() && (b.State != st.State || b.ExitCode != st.ExitCode || !b.EndTime.Equal(st.EndTime)) {
				t.Fatalf("job %d step %d changed after it ended: %+v, was %+v", j.ID, k, st, b)
			} else if b.State != cluster.StepRunning && st.State != b.State {
				t.Fatalf("job %d step %d went from %s to %s", j.ID, k, b.State, st.State)
			}
		}
	}
}

// TestPropertyInvariants runs random logs and checks invariants 1 and 3 at
// every index, then invariant 5: replicas fed the same log, from the start
// or from a snapshot taken part way, agree on hash and digest, and
// Snapshot -> Restore -> Snapshot is byte-identical.
func TestPropertyInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &model{
			s: New(), now: t0, nodes: []string{"n1", "n2", "n3", "n4"},
			prevInc: map[cluster.JobID]uint64{}, prevState: map[cluster.JobID]cluster.JobState{}, prevHolding: map[cluster.JobID]bool{},
			prevJob: map[cluster.JobID]*cluster.Job{},
		}
		for _, n := range m.nodes {
			m.apply(t, CmdUpsertNode, UpsertNode{Node: gpuNode(n, 4, "leaf0")})
		}
		t.Repeat(m.weighted())

		// Invariant 5: a replica replaying the log agrees.
		replica := New()
		cut := rapid.IntRange(0, len(m.log)).Draw(t, "snapshot at")
		for _, e := range m.log[:cut] {
			replica.Apply(e.index, e.data)
		}
		snap, err := replica.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		restored := New()
		if err := restored.Restore(snap); err != nil {
			t.Fatalf("Restore(Snapshot()) at entry %d: %v", cut, err)
		}
		if again, _ := restored.Snapshot(); !bytes.Equal(snap, again) {
			t.Fatalf("Snapshot -> Restore -> Snapshot differs at entry %d", cut)
		}
		for _, e := range m.log[cut:] {
			replica.Apply(e.index, e.data)
			restored.Apply(e.index, e.data)
		}
		wantIdx, wantHash := m.s.Hash()
		_, wantDigest, err := m.s.Digest()
		if err != nil {
			t.Fatal(err)
		}
		for name, r := range map[string]*State{"replayed": replica, "restored": restored} {
			if idx, h := r.Hash(); idx != wantIdx || h != wantHash {
				t.Fatalf("%s Hash() = %d, %x; want %d, %x", name, idx, h, wantIdx, wantHash)
			}
			if _, d, _ := r.Digest(); d != wantDigest {
				t.Fatalf("%s Digest() = %x; want %x", name, d, wantDigest)
			}
		}
		final, _ := m.s.Snapshot()
		back := New()
		if err := back.Restore(final); err != nil {
			t.Fatalf("Restore(final snapshot): %v", err)
		}
		if again, _ := back.Snapshot(); !bytes.Equal(final, again) {
			t.Fatalf("Snapshot -> Restore -> Snapshot differs at the end")
		}
	})
}

func requeueSpec(s cluster.Spec, requeue bool) cluster.Spec {
	s.Requeue = requeue
	return s
}
