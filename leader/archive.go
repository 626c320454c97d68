package leader

import (
	"context"
	"log/slog"
	"time"

	"github.com/shoal-sched/shoal/fsm"
)

// Bounds of the archive loop.
const (
	archiveIntervalMax = 30 * time.Second
	archiveIntervalMin = time.Second
)

// ArchiveDue is the archive loop's decision: the cut-off before which
// finished jobs leave the live state (the policy's MinJobAge before now),
// and whether any live job finished before it. ArchiveJobs itself keeps
// those still needed (dependencies, arrays, GPUs not yet released).
func ArchiveDue(v *fsm.View, now time.Time) (before time.Time, due bool) {
	before = now.Add(-v.Policy().ArchiveAge())
	for _, j := range v.Jobs() {
		if j.State.Terminal() && !j.EndTime.IsZero() && j.EndTime.Before(before) {
			return before, true
		}
	}
	return before, false
}

// Archiver is the leader's archive loop: it moves finished jobs older
// than MinJobAge to the accounting archive (ArchiveDue decides when),
// looking again every half MinJobAge (between a second and 30 seconds),
// and ages the request id table (PlanArchive decides). It runs while this
// node leads.
type Archiver struct {
	State   State
	Propose Proposer
	Clock   Clock
	Log     *slog.Logger
	// Gate is the protocol gate on proposing an entry of type t that
	// needs protocol need: it returns nil when every server speaks it.
	Gate func(ctx context.Context, t fsm.CmdType, need int) error
}

// PlanArchive is the archive loop's decision at now: the ArchiveJobs to
// propose, and whether to propose it — when a finished job is due to
// leave the live state (ArchiveDue), or when a request id is due to be
// stamped or forgotten (fsm.View.RequestIDsDue), so ids age on an idle
// cluster too. The entry asks the FSM to age the ids (ForgetRequests)
// only where gate lets it through: a server older than protocol 7 would
// keep the ids the others forget. It is pure but for gate.
func PlanArchive(v *fsm.View, now time.Time, gate func(t fsm.CmdType, need int) error) (fsm.ArchiveJobs, bool) {
	before, due := ArchiveDue(v, now)
	c := fsm.ArchiveJobs{Before: before, Time: now, ForgetRequests: true}
	if gate(fsm.CmdArchiveJobs, fsm.Needs(fsm.CmdArchiveJobs, c)) != nil {
		c.ForgetRequests = false
	}
	return c, due || c.ForgetRequests && v.RequestIDsDue(now)
}

// Run archives until ctx ends.
func (a Archiver) Run(ctx context.Context) {
	for {
		v := a.State.View()
		now := a.Clock.Now()
		gate := func(t fsm.CmdType, need int) error { return a.Gate(ctx, t, need) }
		if c, due := PlanArchive(v, now, gate); due {
			res, err := a.Propose.Apply(ctx, fsm.CmdArchiveJobs, c)
			if err == nil {
				err = res.Err
			}
			if err != nil && ctx.Err() == nil {
				a.Log.Warn("archive finished jobs and age request ids", "err", err)
			}
		}
		wait := min(max(v.Policy().ArchiveAge()/2, archiveIntervalMin), archiveIntervalMax)
		select {
		case <-ctx.Done():
			return
		case <-a.Clock.After(wait):
		}
	}
}
