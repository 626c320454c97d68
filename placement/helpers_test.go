package placement

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// mkNode returns an up node with gpus GPUs (NUMA unknown, no NVLink)
// under leaf switch leaf and parent switch parent.
func mkNode(name string, gpus int, leaf, parent string) *cluster.Node {
	n := &cluster.Node{
		Name:     name,
		Status:   cluster.NodeUp,
		Topology: cluster.Topology{Switch: leaf, SwitchParent: parent},
	}
	for i := range gpus {
		n.GPUs = append(n.GPUs, cluster.GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", name, i), NUMA: -1})
	}
	return n
}

// mkLeaf returns count nodes named prefix1..prefixN with gpus GPUs each.
func mkLeaf(prefix string, count, gpus int, leaf, parent string) []*cluster.Node {
	var ns []*cluster.Node
	for i := 1; i <= count; i++ {
		ns = append(ns, mkNode(fmt.Sprintf("%s%d", prefix, i), gpus, leaf, parent))
	}
	return ns
}

func withStatus(n *cluster.Node, s cluster.NodeStatus) *cluster.Node { n.Status = s; return n }
func drained(n *cluster.Node) *cluster.Node                          { n.Drain = true; return n }

// pending returns a pending job asking for nodes x gpus.
func pending(id cluster.JobID, nodes, gpus int) *cluster.Job {
	return &cluster.Job{
		ID:    id,
		State: cluster.JobPending,
		Spec: cluster.Spec{
			Command: []string{"true"},
			Request: cluster.Request{Nodes: nodes, GPUsPerNode: gpus, TasksPerNode: 1, CPUsPerTask: 1},
		},
	}
}

// holding returns a job in state st whose allocation holds the given GPUs
// of each node (released ones are marked Released).
func holding(id cluster.JobID, st cluster.JobState, released bool, byNode ...any) *cluster.Job {
	j := pending(id, len(byNode)/2, 0)
	j.State = st
	j.Alloc = &cluster.Allocation{}
	for i := 0; i+1 < len(byNode); i += 2 {
		j.Alloc.Nodes = append(j.Alloc.Nodes, cluster.NodeAlloc{
			Node: byNode[i].(string), GPUs: byNode[i+1].([]int), Released: released,
			State: cluster.TaskRunning,
		})
	}
	return j
}

// runningSince returns a running job holding byNode's GPUs that started
// ran before now.
func runningSince(now time.Time, id cluster.JobID, ran time.Duration, byNode ...any) *cluster.Job {
	j := holding(id, cluster.JobRunning, false, byNode...)
	j.StartTime = now.Add(-ran)
	return j
}

// preemptCase is a case of TestVictims or TestPreempt: with jobs
// running, the plan to make room for want from the candidates cands (of
// jobs; nil: all), and whether there is one.
type preemptCase struct {
	name    string
	jobs    []*cluster.Job
	want    *cluster.Job
	cands   []cluster.JobID
	shrinks []Shrink
	victims []cluster.JobID
	ok      bool
}

// runPreemptCases checks plan (Victims or Preempt, named name) against
// each case on nodes at now: the plan expected, and want fitting once it
// is carried out.
func runPreemptCases(t *testing.T, nodes []*cluster.Node, now time.Time, tests []preemptCase, name string, plan func(v *View, job *cluster.Job, cands []*cluster.Job) (Plan, bool)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := plan(NewView(nodes, tt.jobs), tt.want, among(tt.jobs, tt.cands))
			if ok != tt.ok || !slices.Equal(got.Shrinks, tt.shrinks) || !slices.Equal(got.Victims, tt.victims) {
				t.Fatalf("%s = %+v, %v; want shrinks %v victims %v, %v", name, got, ok, tt.shrinks, tt.victims, tt.ok)
			}
			if ok {
				checkFitsAfter(t, nodes, tt.jobs, tt.want, got, now)
			}
		})
	}
}

// among returns the jobs whose ids are in ids; nil ids: all of them.
func among(jobs []*cluster.Job, ids []cluster.JobID) []*cluster.Job {
	var out []*cluster.Job
	for _, j := range jobs {
		if ids == nil || slices.Contains(ids, j.ID) {
			out = append(out, j)
		}
	}
	return out
}

// checkFitsAfter fails t unless job places once p's victims are gone and
// the nodes of its shrinks are released.
func checkFitsAfter(t *testing.T, nodes []*cluster.Node, jobs []*cluster.Job, job *cluster.Job, p Plan, now time.Time) {
	t.Helper()
	var rest []*cluster.Job
	for _, j := range jobs {
		if slices.Contains(p.Victims, j.ID) {
			continue
		}
		c := *j
		c.Alloc = j.Alloc.Clone()
		for _, s := range p.Shrinks {
			if s.Job == j.ID {
				c.Alloc.Nodes[c.Alloc.Find(s.Node)].Released = true
			}
		}
		rest = append(rest, &c)
	}
	if res := Place(NewView(nodes, rest), []*cluster.Job{job}, now); len(res.Decisions) != 1 {
		t.Errorf("with %+v the job still does not fit: %v", p, res.Reasons)
	}
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

func cat(groups ...[]*cluster.Node) []*cluster.Node {
	var all []*cluster.Node
	for _, g := range groups {
		all = append(all, g...)
	}
	return all
}

func asg(node string, gpus ...int) Assignment {
	if len(gpus) == 0 {
		gpus = nil
	}
	return Assignment{Node: node, GPUs: gpus}
}
