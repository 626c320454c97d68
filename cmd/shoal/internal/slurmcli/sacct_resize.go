package slurmcli

import (
	"slices"

	"github.com/shoal-sched/shoal/api"
)

// resizeRecords returns an elastic job's accounting records as Slurm's
// slurmdbd keeps them for a resized job (job_pre_resize_acctg and
// job_post_resize_acctg, 22.05): each size change ends the record the
// job had (state RESIZING, its end the resize time) and starts a new one
// of the same job id whose submit and start times are the resize time,
// with the nodes it has from then on. The records come oldest first; the
// last is the job as it is now. A job that never resized has one record,
// itself. Only the job's own fields change between records (nodes,
// times, state, exit code and the tasks of the record's nodes); steps
// belong to the last record.
//
// The nodes of each earlier record are found by undoing the resizes from
// the nodes the job has now (a grow added its node, a shrink removed
// it). When the oldest resizes were dropped (cluster.MaxResizes), the
// first record kept starts at the job's start.
func resizeRecords(j api.Job) []api.Job {
	if len(j.Resizes) == 0 || j.StartTime == "" {
		return []api.Job{j}
	}
	recs := make([]api.Job, len(j.Resizes)+1)
	nodes := slices.Clone(j.Nodes)
	last := j
	last.SubmitTime, last.StartTime = j.Resizes[len(j.Resizes)-1].Time, j.Resizes[len(j.Resizes)-1].Time
	last.Tasks = slices.DeleteFunc(slices.Clone(j.Tasks), func(t api.Task) bool { return !slices.Contains(nodes, t.Node) })
	recs[len(j.Resizes)] = last
	for k := len(j.Resizes) - 1; k >= 0; k-- {
		r := j.Resizes[k]
		switch r.Cause {
		case "grow":
			nodes = slices.DeleteFunc(nodes, func(n string) bool { return n == r.Node })
		case "shrink":
			if !slices.Contains(nodes, r.Node) {
				nodes = append(nodes, r.Node)
			}
		}
		rec := j
		rec.State, rec.Reason, rec.ExitCode = "RESIZING", "", 0
		rec.Nodes = slices.Clone(nodes)
		// In rank order, as the allocation lists them (its tasks keep the
		// nodes it lost).
		slices.SortStableFunc(rec.Nodes, func(a, b string) int { return rank(j, a) - rank(j, b) })
		rec.NumNodes = len(rec.Nodes)
		rec.EndTime = r.Time
		if k > 0 {
			rec.SubmitTime, rec.StartTime = j.Resizes[k-1].Time, j.Resizes[k-1].Time
		}
		rec.Steps = nil
		rec.Tasks = slices.DeleteFunc(slices.Clone(j.Tasks), func(t api.Task) bool { return !slices.Contains(nodes, t.Node) })
		recs[k] = rec
	}
	return recs
}

// rank is node's position in j's allocation (its tasks, in rank order,
// lost nodes included); len(j.Tasks) when it is not there.
func rank(j api.Job, node string) int {
	if i := slices.IndexFunc(j.Tasks, func(t api.Task) bool { return t.Node == node }); i >= 0 {
		return i
	}
	return len(j.Tasks)
}
