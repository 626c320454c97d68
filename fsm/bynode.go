package fsm

import (
	"sync"

	"github.com/shoal-sched/shoal/cluster"
)

// byNode indexes a view's jobs by the nodes they hold. It is built on the
// first JobsOn call and shared by every reader of the view: a server
// answering the follow queries of many workers scans the jobs once per
// applied entry, not once per worker.
type byNode struct {
	once sync.Once
	jobs map[string][]*cluster.Job
}

// JobsOn returns the jobs that hold node: those whose allocation names
// it (its latest entry, as cluster.Allocation.Find) and has not released
// it, in ascending ID order. Callers must not mutate the slice or the
// jobs.
func (v *View) JobsOn(node string) []*cluster.Job {
	v.byNode.once.Do(func() { v.byNode.jobs = indexJobsByNode(v.jobs) })
	js := v.byNode.jobs[node]
	return js[:len(js):len(js)]
}

// indexJobsByNode maps each node to the jobs holding it (see JobsOn);
// jobs come in ascending ID order, so each list is too.
func indexJobsByNode(jobs []*cluster.Job) map[string][]*cluster.Job {
	idx := map[string][]*cluster.Job{}
	for _, j := range jobs {
		if j.Alloc == nil {
			continue
		}
		for i, na := range j.Alloc.Nodes {
			if na.Released || j.Alloc.Find(na.Node) != i {
				continue // released, or not the node's entry Find names
			}
			idx[na.Node] = append(idx[na.Node], j)
		}
	}
	return idx
}
