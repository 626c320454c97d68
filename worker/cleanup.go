package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Bounds of the output cleanup loop.
const (
	cleanupIntervalMax = 10 * time.Minute
	cleanupIntervalMin = time.Second
)

// JobRecords is the replica's record of jobs as the cleanup plan reads
// it (an fsm.View): the live jobs and the archive.
type JobRecords interface {
	Job(id cluster.JobID) (*cluster.Job, bool)
	ArchivedJob(id cluster.JobID) (*cluster.Job, bool)
}

// OutputsToForget is the cleanup loop's decision: of the jobs with task
// directories on this node (stored), those to remove at now. A live job
// keeps them; an archived one keeps them for retention (the policy's
// OutputRetention) after it ended; one the cluster no longer knows
// (dropped from a full archive) loses them. The caller asks only of a
// replica that has caught up, so "unknown" cannot mean "not replicated
// here yet".
func OutputsToForget(jobs JobRecords, retention time.Duration, stored []cluster.JobID, now time.Time) []cluster.JobID {
	var out []cluster.JobID
	for _, id := range stored {
		if _, live := jobs.Job(id); live {
			continue
		}
		if j, archived := jobs.ArchivedJob(id); archived && now.Sub(j.EndTime) < retention {
			continue
		}
		out = append(out, id)
	}
	return out
}

// PartialOutputsToForget is OutputsToForget on a worker, whose view
// (from its server) holds only the jobs that still hold this node and no
// archive: a job's directories go once it has been out of that view for
// retention. gone remembers since when each stored job was out of it and
// is updated in place; the loop keeps it in memory, so after a restart
// the retention counts again from the restart (later, never sooner).
func PartialOutputsToForget(jobs JobRecords, retention time.Duration, stored []cluster.JobID, gone map[cluster.JobID]time.Time, now time.Time) []cluster.JobID {
	var out []cluster.JobID
	seen := make(map[cluster.JobID]bool, len(stored))
	for _, id := range stored {
		seen[id] = true
		if _, live := jobs.Job(id); live {
			delete(gone, id)
			continue
		}
		since, ok := gone[id]
		if !ok {
			gone[id] = now
			continue
		}
		if now.Sub(since) >= retention {
			out = append(out, id)
		}
	}
	for id := range gone {
		if !seen[id] {
			delete(gone, id)
		}
	}
	return out
}

// CleanupEvery is how often the task directories are scanned under an
// output retention: a tenth of it, between a second and ten minutes.
func CleanupEvery(retention time.Duration) time.Duration {
	return min(max(retention/10, cleanupIntervalMin), cleanupIntervalMax)
}

// Retained is the replica as the cleanup loop reads it at one moment.
type Retained struct {
	Jobs JobRecords
	// Retention is the policy's OutputRetention.
	Retention time.Duration
	// Trusted says the replica can tell a job it does not know from one
	// it has not heard of yet: it has caught up and not diverged (on a
	// worker: it has received a view from its server).
	Trusted bool
	// Partial says Jobs is a worker's view: only the jobs that hold this
	// node, no archive (PartialOutputsToForget decides).
	Partial bool
	// Changed is closed at the replica's next change.
	Changed <-chan struct{}
}

// Replica is where the cleanup loop reads the jobs.
type Replica interface {
	Retained() Retained
}

// Outputs are the task directories the executor keeps on this node.
type Outputs interface {
	// StoredJobs lists the jobs with task directories here.
	StoredJobs() ([]cluster.JobID, error)
	// Forget removes job's task directories and says how many.
	Forget(job cluster.JobID) (int, error)
}

// Timer is the clock a loop reads and waits on.
type Timer interface {
	Now() time.Time
	// After delivers once, after d.
	After(d time.Duration) <-chan time.Time
}

// Cleaner is the worker's output cleanup loop: it removes the task
// directories of jobs past their output retention (OutputsToForget
// decides), so a node's disk and its restart scan stay bounded. It scans
// at most every CleanupEvery, and wakes on the replica's changes so a new
// policy takes effect at once.
type Cleaner struct {
	Replica Replica
	Outputs Outputs
	Clock   Timer
	Log     *slog.Logger
}

// Run cleans up until ctx ends.
func (c Cleaner) Run(ctx context.Context) {
	var lastScan time.Time
	gone := map[cluster.JobID]time.Time{} // a worker's (PartialOutputsToForget)
	for {
		r := c.Replica.Retained()
		every := CleanupEvery(r.Retention)
		if now := c.Clock.Now(); now.Sub(lastScan) >= every && r.Trusted {
			lastScan = now
			if !r.Partial {
				clear(gone) // a server again: its replica knows the ends
			}
			c.Round(r, gone, now)
		}
		select {
		case <-ctx.Done():
			return
		case <-r.Changed:
		case <-c.Clock.After(max(lastScan.Add(every).Sub(c.Clock.Now()), cleanupIntervalMin)):
		}
	}
}

// Round scans the task directories once, at now, and removes those
// OutputsToForget names (PartialOutputsToForget on a worker's view, with
// gone carried between rounds).
func (c Cleaner) Round(r Retained, gone map[cluster.JobID]time.Time, now time.Time) {
	stored, err := c.Outputs.StoredJobs()
	if err != nil {
		c.Log.Warn("list task directories", "err", err)
		return
	}
	forget := OutputsToForget(r.Jobs, r.Retention, stored, now)
	if r.Partial {
		forget = PartialOutputsToForget(r.Jobs, r.Retention, stored, gone, now)
	}
	for _, id := range forget {
		if n, err := c.Outputs.Forget(id); err != nil {
			c.Log.Debug("remove a finished job's task directories", "job", uint64(id), "err", err)
		} else if n > 0 {
			c.Log.Info("removed a finished job's task directories", "job", uint64(id), "dirs", n)
		}
	}
}
