package slurm

import "github.com/shoal-sched/shoal/cluster"

// Cluster returns the dependency as the FSM records it: "ID_*" and a bare
// array id both mean every element.
func (d Dependency) Cluster() *cluster.Dependency {
	out := &cluster.Dependency{Any: d.Any, Conditions: make([]cluster.DepCondition, len(d.Conditions))}
	for i, c := range d.Conditions {
		cc := cluster.DepCondition{Type: c.Type}
		for _, j := range c.Jobs {
			task := j.Task
			if j.AllTasks {
				task = -1
			}
			cc.Jobs = append(cc.Jobs, cluster.DepJob{ID: cluster.JobID(j.ID), Task: task, Delay: j.Delay})
		}
		out.Conditions[i] = cc
	}
	return out
}

// Cluster returns the array as a submit carries it.
func (a Array) Cluster() *cluster.ArraySpec {
	return &cluster.ArraySpec{Indices: append([]int(nil), a.Indices...), Throttle: a.Throttle}
}
