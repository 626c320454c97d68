package fsm

import "github.com/shoal-sched/shoal/cluster"

// View is an immutable view of the state at one applied index. It is safe
// for concurrent use. The records it returns are shared with the State and
// other views: callers must not mutate them (clone first).
type View struct {
	// Index is the applied index the view shows.
	Index uint64

	hash    [32]byte
	lastJob cluster.JobID
	jobs    []*cluster.Job  // ascending ID
	nodes   []*cluster.Node // ascending name
	held    map[string]map[int]cluster.JobID
	rids    ridView
	policy  *cluster.Policy // never modified once stored (SetPolicy clones)
	// security is never modified once stored (its commands clone it).
	security *cluster.Security
	archive  []*cluster.Job          // ascending ID; never modified in place
	switches []*cluster.SwitchReport // ascending switch; never modified in place
	changed  <-chan struct{}
	// byNode is the jobs by node, built on first use (JobsOn).
	byNode byNode
}

// Jobs returns every job in ascending ID order. Callers must not mutate
// the slice or the jobs.
func (v *View) Jobs() []*cluster.Job { return v.jobs[:len(v.jobs):len(v.jobs)] }

// Job returns job id.
func (v *View) Job(id cluster.JobID) (*cluster.Job, bool) {
	return jobIn(v.jobs, id)
}

// Nodes returns every node in ascending name order. Callers must not
// mutate the slice or the nodes.
func (v *View) Nodes() []*cluster.Node { return v.nodes[:len(v.nodes):len(v.nodes)] }

// Node returns node name.
func (v *View) Node(name string) (*cluster.Node, bool) {
	if i, ok := findNode(v.nodes, name); ok {
		return v.nodes[i], true
	}
	return nil, false
}

// JobByRequestID returns the job a SubmitJob with request id made.
func (v *View) JobByRequestID(id string) (cluster.JobID, bool) {
	p, ok := v.byRequestID(id, ridSubmit)
	return p.Job, ok
}

// StepByRequestID returns the step a StartStep with request id started:
// its job, the job's incarnation it ran in, and its id.
func (v *View) StepByRequestID(id string) (job cluster.JobID, incarnation uint64, step int, ok bool) {
	p, ok := v.byRequestID(id, ridStep)
	return p.Job, p.Incarnation, p.Step, ok
}

// byRequestID returns what a command of kind with request id did.
func (v *View) byRequestID(id, kind string) (ridPair, bool) {
	if id == "" {
		return ridPair{}, false
	}
	p, ok := v.rids.get(id)
	if !ok || p.Kind != kind {
		return ridPair{}, false
	}
	return p, true
}

// Changed returns a channel closed once the state moves past v.Index (an
// entry applied or a snapshot restored). Blocking queries wait on it.
func (v *View) Changed() <-chan struct{} { return v.changed }

// FreeGPUs returns, in ascending order, the indices of node's GPUs that no
// unreleased allocation holds, whatever the node's status or drain (the
// caller decides whether the node is usable); nil for an unknown node.
func (v *View) FreeGPUs(node string) []int {
	n, ok := v.Node(node)
	if !ok {
		return nil
	}
	held := v.held[node]
	var free []int
	for i := range n.GPUs {
		if _, taken := held[i]; !taken {
			free = append(free, i)
		}
	}
	return free
}

// HeldBy returns the job whose unreleased allocation holds GPU gpu of
// node, if any. A GPU may be held on a node the view does not know (an
// allocation outliving its node's record).
func (v *View) HeldBy(node string, gpu int) (cluster.JobID, bool) {
	id, ok := v.held[node][gpu]
	return id, ok
}

// LastJobID is the highest job ID given so far; the next submit's first
// job gets the one after it.
func (v *View) LastJobID() cluster.JobID { return v.lastJob }
