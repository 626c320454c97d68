package cluster

import "github.com/shoal-sched/shoal/slurm"

// DependencyFromSlurm returns a parsed --dependency as the FSM records it:
// "ID_*" and a bare array id both mean every element.
func DependencyFromSlurm(d slurm.Dependency) *Dependency {
	out := &Dependency{Any: d.Any, Conditions: make([]DepCondition, len(d.Conditions))}
	for i, c := range d.Conditions {
		cc := DepCondition{Type: c.Type}
		for _, j := range c.Jobs {
			task := j.Task
			if j.AllTasks {
				task = -1
			}
			cc.Jobs = append(cc.Jobs, DepJob{ID: JobID(j.ID), Task: task, Delay: j.Delay})
		}
		out.Conditions[i] = cc
	}
	return out
}

// ArrayFromSlurm returns a parsed --array as a submit carries it.
func ArrayFromSlurm(a slurm.Array) *ArraySpec {
	return &ArraySpec{Indices: append([]int(nil), a.Indices...), Throttle: a.Throttle}
}
