package fsm

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// MaxArchiveLimit bounds the accounting archive whatever the policy says.
const MaxArchiveLimit = 10000000

// ArchiveJobs moves every job that finished before Before from the live
// state into the accounting archive (Slurm's MinJobAge, then its
// accounting database): sacct still finds it, the queue and every
// scheduling pass no longer carry it, and snapshots stay small. A finished
// job stays live while a live job depends on it, while its array has live
// elements, or while a node still holds its GPUs. The archive keeps the
// newest policy ArchiveMax records (by job id), compacted (no environment,
// no script).
//
// With ForgetRequests (protocol 7) it also ages the request id table
// (submits', steps', signals', requeues', updates'): an id not seen by an
// earlier ForgetRequests is stamped with Time, and one stamped more than
// cluster.RequestIDRetention before Time is forgotten — a submit's only
// once its job has left the live state too, as its id may be the user's
// own (ridAging). Shoal's clients send a write again only within about a
// minute of its first copy, so no copy of theirs can still arrive, and
// without this the table would grow with every request for the
// cluster's life. Stamping here rather than when an id is recorded keeps
// what a protocol 6 replica records the same.
type ArchiveJobs struct {
	Before         time.Time `msgpack:"before"`
	Time           time.Time `msgpack:"time"`
	ForgetRequests bool      `msgpack:"forget_requests,omitempty"`
}

func (s *State) archiveJobs(c ArchiveJobs) Result {
	if c.ForgetRequests && c.Time.IsZero() {
		return Result{Err: fmt.Errorf("archive jobs: %w: forget_requests with no time", ErrInvalid)}
	}
	keep, moved := archivePlan(s.jobs, c.Before)
	if len(moved) > 0 {
		s.moveToArchive(keep, moved)
	}
	if c.ForgetRequests {
		s.forgetRequests(c.Time)
	}
	return Result{}
}

// moveToArchive makes keep the live jobs and adds moved, compacted, to the
// archive, which keeps the newest policy ArchiveLimit records.
func (s *State) moveToArchive(keep, moved []*cluster.Job) {
	archive := make([]*cluster.Job, 0, len(s.archive)+len(moved))
	archive = append(archive, s.archive...)
	for _, j := range moved {
		archive = append(archive, compactJob(j))
	}
	slices.SortFunc(archive, func(a, b *cluster.Job) int { return cmp.Compare(a.ID, b.ID) })
	if limit := s.policy.ArchiveLimit(); len(archive) > limit {
		archive = archive[len(archive)-limit:] // the oldest records go
	}
	s.archive = nilIfEmpty(archive)
	s.jobs = nilIfEmpty(keep)
}

// forgetRequests ages the request id table at now (ridAging): the ids
// not seen before are stamped with now, those stamped more than
// cluster.RequestIDRetention before it are dropped (a submit's once its
// job has left the live state too). The table is rebuilt only when one
// changes (an entry proposed for a job stuck due for the archive finds
// none, and copies nothing).
func (s *State) forgetRequests(now time.Time) {
	live := func(id cluster.JobID) bool { _, j := s.job(id); return j != nil }
	table := s.rids.freeze()
	if !table.agingDue(now, live) {
		return
	}
	kept := make([]ridPair, 0, len(table.base)+len(table.tail))
	for p := range table.all() { // into a map: the order does not matter
		stamp, forget := ridAging(p, now, live)
		if forget {
			continue
		}
		if stamp {
			p.At = now
		}
		kept = append(kept, p)
	}
	s.rids = newRIDTable(kept)
}

// archivePlan splits jobs into those that stay live and those that may be
// archived at before. It is pure and keeps the order of jobs.
func archivePlan(jobs []*cluster.Job, before time.Time) (keep, moved []*cluster.Job) {
	needed := map[cluster.JobID]bool{}    // named by a live job's dependency
	liveArray := map[cluster.JobID]bool{} // arrays with a live element
	for _, j := range jobs {
		if j.State.Terminal() {
			continue
		}
		if j.Array != nil {
			liveArray[j.Array.JobID] = true
		}
		if d := j.Spec.Dependency; d != nil {
			for _, cond := range d.Conditions {
				for _, dj := range cond.Jobs {
					needed[dj.ID] = true
				}
			}
		}
	}
	for _, j := range jobs {
		if archivable(j, before, needed, liveArray) {
			moved = append(moved, j)
		} else {
			keep = append(keep, j)
		}
	}
	return keep, moved
}

func archivable(j *cluster.Job, before time.Time, needed, liveArray map[cluster.JobID]bool) bool {
	if !j.State.Terminal() || j.EndTime.IsZero() || !j.EndTime.Before(before) {
		return false
	}
	if needed[j.ID] {
		return false
	}
	if j.Array != nil && (liveArray[j.Array.JobID] || needed[j.Array.JobID]) {
		return false
	}
	if j.Alloc != nil {
		for _, n := range j.Alloc.Nodes {
			if !n.Released {
				return false
			}
		}
	}
	return true
}

// compactJob is the archived record of j: what accounting shows, without
// the environment and the script.
func compactJob(j *cluster.Job) *cluster.Job {
	c := j.Clone()
	c.Spec.Env = nil
	if c.Spec.Batch != nil {
		c.Spec.Batch.Script, c.Spec.Batch.Args = "", nil
	}
	for i := range c.Steps {
		c.Steps[i].Spec.Env = nil
	}
	c.Signals = nil
	canonJob(c)
	return c
}

// validateArchive checks a snapshot's archive as ArchiveJobs leaves it.
func validateArchive(archive []*cluster.Job, lastJob cluster.JobID) error {
	if len(archive) > MaxArchiveLimit {
		return fmt.Errorf("%d records, want at most %d", len(archive), MaxArchiveLimit)
	}
	for i, j := range archive {
		switch {
		case j == nil:
			return fmt.Errorf("[%d]: nil", i)
		case j.ID == 0 || j.ID > lastJob:
			return fmt.Errorf("[%d]: id %d, want 1 to last job id %d", i, j.ID, lastJob)
		case i > 0 && j.ID <= archive[i-1].ID:
			return fmt.Errorf("[%d]: id %d after %d, want ascending unique ids", i, j.ID, archive[i-1].ID)
		case !j.State.Terminal():
			return fmt.Errorf("[%d]: job %d is %s, want a finished job", i, j.ID, j.State)
		}
		canonJob(j)
	}
	return nil
}

// Archived returns the archived jobs in ascending ID order. Callers must
// not mutate the slice or the jobs.
func (v *View) Archived() []*cluster.Job { return v.archive[:len(v.archive):len(v.archive)] }

// ArchivedJob returns archived job id.
func (v *View) ArchivedJob(id cluster.JobID) (*cluster.Job, bool) {
	return jobIn(v.archive, id)
}
