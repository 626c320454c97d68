package fsm

import (
	"cmp"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
)

// PartialView is a view of part of the state at index: the jobs and nodes
// a server sent a worker outside the raft configuration (package node's
// follow), the policy and the security state. It answers Jobs, Job,
// Nodes, Node, Policy and Security for what it holds and nothing else; changed is closed once a newer one
// replaces it. The records become the view's: callers must not mutate
// them afterwards.
func PartialView(index uint64, jobs []*cluster.Job, nodes []*cluster.Node, policy *cluster.Policy, security *cluster.Security, changed <-chan struct{}) *View {
	jobs = slices.Clone(jobs)
	slices.SortFunc(jobs, func(a, b *cluster.Job) int { return cmp.Compare(a.ID, b.ID) })
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b *cluster.Node) int { return cmp.Compare(a.Name, b.Name) })
	return &View{Index: index, jobs: jobs, nodes: nodes, policy: policy, security: security, changed: changed}
}
