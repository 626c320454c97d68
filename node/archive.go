package node

import (
	"context"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// Bounds of the archive loop.
const (
	archiveIntervalMax = 30 * time.Second
	archiveIntervalMin = time.Second
)

// archiveDue is the archive loop's pure decision: the cut-off before which
// finished jobs leave the live state (the policy's MinJobAge before now),
// and whether any live job finished before it. ArchiveJobs itself keeps
// those still needed (dependencies, arrays, GPUs not yet released).
func archiveDue(v *fsm.View, now time.Time) (before time.Time, due bool) {
	before = now.Add(-v.Policy().ArchiveAge())
	for _, j := range v.Jobs() {
		if j.State.Terminal() && !j.EndTime.IsZero() && j.EndTime.Before(before) {
			return before, true
		}
	}
	return before, false
}

// archiveLoop, on the leader, moves finished jobs older than MinJobAge to
// the accounting archive.
func (a *Agent) archiveLoop(ctx context.Context) {
	for {
		v := a.state.View()
		if before, due := archiveDue(v, time.Now()); due {
			res, err := a.apply(ctx, fsm.CmdArchiveJobs, fsm.ArchiveJobs{Before: before, Time: time.Now()})
			if err == nil {
				err = res.Err
			}
			if err != nil && ctx.Err() == nil {
				a.log.Warn("archive finished jobs", "err", err)
			}
		}
		wait := min(max(v.Policy().ArchiveAge()/2, archiveIntervalMin), archiveIntervalMax)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Bounds of the output cleanup loop.
const (
	cleanupIntervalMax = 10 * time.Minute
	cleanupIntervalMin = time.Second
)

// outputsToForget is the cleanup loop's pure decision: of the jobs with
// task directories on this node, those to remove at now. A live job keeps
// them; an archived one keeps them for the policy's OutputRetention after
// it ended; one the cluster no longer knows (dropped from a full archive)
// loses them. The caller runs it only on a replica that has caught up, so
// "unknown" cannot mean "not replicated here yet".
func outputsToForget(v *fsm.View, stored []cluster.JobID, now time.Time) []cluster.JobID {
	keep := v.Policy().Retention()
	var out []cluster.JobID
	for _, id := range stored {
		if _, live := v.Job(id); live {
			continue
		}
		if j, archived := v.ArchivedJob(id); archived && now.Sub(j.EndTime) < keep {
			continue
		}
		out = append(out, id)
	}
	return out
}

// cleanupLoop removes the task directories of jobs past their output
// retention, so a node's disk and its restart scan stay bounded. It scans
// at most every tenth of the retention (between a second and ten
// minutes), and wakes on state changes so a new policy takes effect at
// once.
func (a *Agent) cleanupLoop(ctx context.Context) {
	var lastScan time.Time
	for {
		v := a.state.View()
		every := min(max(v.Policy().Retention()/10, cleanupIntervalMin), cleanupIntervalMax)
		now := time.Now()
		if now.Sub(lastScan) >= every && a.caughtUp() && a.state.Diverged() == nil {
			lastScan = now
			a.forgetOutputs(v, now)
		}
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		case <-time.After(max(time.Until(lastScan.Add(every)), cleanupIntervalMin)):
		}
	}
}

func (a *Agent) forgetOutputs(v *fsm.View, now time.Time) {
	stored, err := a.exec.StoredJobs()
	if err != nil {
		a.log.Warn("list task directories", "err", err)
		return
	}
	for _, id := range outputsToForget(v, stored, now) {
		if n, err := a.exec.Forget(id); err != nil {
			a.log.Debug("remove a finished job's task directories", "job", uint64(id), "err", err)
		} else if n > 0 {
			a.log.Info("removed a finished job's task directories", "job", uint64(id), "dirs", n)
		}
	}
}
