package node

import (
	"context"
	"time"

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
