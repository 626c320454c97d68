package consensus

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/shoal-sched/shoal/fsm"
)

// DefaultTimeout bounds a wait on raft (Apply, Barrier, membership changes)
// when the caller's context carries no deadline: long enough for an
// election plus a commit on a LAN, short enough to fail visibly without a
// quorum.
const DefaultTimeout = 10 * time.Second

// Config configures Open.
type Config struct {
	// ID is the raft server ID: the node name, stable for the node's life.
	ID string
	// DataDir is the node's data directory; raft's files live under
	// DataDir/raft.
	DataDir string
	// BindAddr is the host:port to listen on for raft TCP. Port 0 picks a
	// free port; Raft.Addr reports the result.
	BindAddr string
	// AdvertiseAddr is the host:port other servers dial; it defaults to the
	// address actually bound, which must then not be 0.0.0.0 or [::].
	AdvertiseAddr string
	// FSM is the state machine committed entries are applied to.
	FSM *fsm.State
	// Logger receives raft's and this package's logs; nil means
	// slog.Default().
	Logger *slog.Logger
	// Timing holds raft's timeouts; zero fields take DefaultTiming's.
	Timing Timing
	// StreamLayer, when set, replaces plain TCP (BindAddr and
	// AdvertiseAddr are then ignored): it is the seam for mutual TLS.
	StreamLayer raft.StreamLayer
}

// Timing holds raft's timing and snapshot settings.
type Timing struct {
	// HeartbeatTimeout is how long a follower waits without hearing from a
	// leader before it starts an election.
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits before a new election.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader keeps leading without contact
	// with a quorum; it must not exceed HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how long the leader waits with nothing to send
	// before it sends an empty AppendEntries so followers learn the commit
	// index.
	CommitTimeout time.Duration
	// SnapshotThreshold is how many new entries trigger a snapshot.
	SnapshotThreshold uint64
	// SnapshotInterval is how often raft checks the threshold (staggered
	// randomly up to twice this).
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries are kept behind a snapshot, so a
	// briefly lagging follower catches up from the log instead of a full
	// snapshot transfer.
	TrailingLogs uint64
}

// DefaultTiming returns the values for a real network (a LAN: sub-ms
// round trips). The heartbeat timeout is half of raft's own default, so
// that a leader killed outright is replaced in well under a second
// (BENCHMARKS.md, "Failover (issue 15)"); the values are still wide for
// a LAN:
//
//   - The leader heartbeats each follower every 50..100 ms (a random
//     HeartbeatTimeout/10..HeartbeatTimeout/5), from a goroutine of its
//     own that neither the log's fsyncs nor the FSM hold up, and a
//     follower answers heartbeats on the transport's fast path, outside
//     raft's main loop (a slow fsync there does not make it miss one). A
//     follower starts an election only after 500 ms with no message at
//     all (checked at a random 500 ms..1 s tick): five to ten heartbeats
//     lost in a row. Go's GC stops the world for well under a
//     millisecond; a 2-core node saturated by jobs delays a runnable
//     goroutine by tens of milliseconds at worst (CFS's scheduling
//     period); an fsync of a loaded disk takes tens to hundreds of
//     milliseconds but is off the heartbeat path. A pause long enough to
//     lose 500 ms of heartbeats (swapping, a frozen VM, a box overloaded
//     many times over) costs a spurious election, never safety: raft's
//     terms keep the log consistent, pre-vote (on) keeps a server that
//     was cut off from disrupting a leader the others still hear, and the
//     cost is one election (tens of milliseconds) plus the clients'
//     retries.
//   - ElectionTimeout 1 s (raft's default): how long a candidate waits
//     for its votes before it tries again (random 1..2 s). It is not on a
//     failover's path (the survivors' pre-votes and votes take a few
//     milliseconds, see recheck.go); only a split vote waits it out. On a
//     box overloaded many times over (load average 150-340 on 2 cores),
//     500 ms made candidates give up on votes still on their way and try
//     again 23 times in 2 minutes, against 3 with 1 s.
//   - LeaderLeaseTimeout 450 ms: a leader that has heard from no quorum
//     for that long (four to nine heartbeat rounds) steps down. raft
//     wants it <= HeartbeatTimeout, and recheck.go's nudge wants it
//     below. At 250 ms (half of the heartbeat timeout, raft's own ratio)
//     a leader on a box overloaded many times over (load average 50-95
//     on 2 cores) stepped down twice in 2 minutes where the old 500 ms
//     lease held; a lease only decides how soon a leader cut off from its
//     quorum stops taking writes, which is not on a failover's path.
//
// The node lease that fences ranks (README, "Node liveness and fencing")
// is separate and much longer, and its bound does not depend on these: a
// new leader counts a node's silence only from its own election, and a
// deposed leader acknowledges no heartbeat once its leader lease has
// expired, about 450 ms after it lost its quorum, when another can be
// elected 500 ms after at the earliest: a node it still acknowledged
// fences its ranks well inside the bound's 2 s margin. Shorter raft
// timeouts only make a failover eat less of --lease-ttl. Snapshots every 8192 entries keep
// restart replay short while keeping 10240 entries for followers to
// catch up from.
func DefaultTiming() Timing {
	return Timing{
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    1000 * time.Millisecond,
		LeaderLeaseTimeout: 450 * time.Millisecond,
		CommitTimeout:      50 * time.Millisecond,
		SnapshotThreshold:  8192,
		SnapshotInterval:   120 * time.Second,
		TrailingLogs:       10240,
	}
}

// FastTiming returns values for loopback only (tests and `shoal dev`):
// elections finish in well under a second, and the 10ms commit timeout
// keeps followers' applied index close behind the leader's. It is too
// tight for a real network, where packet delay and pauses would cause
// spurious elections.
func FastTiming() Timing {
	return Timing{
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond,
		CommitTimeout:      10 * time.Millisecond,
		SnapshotThreshold:  1024,
		SnapshotInterval:   5 * time.Second,
		TrailingLogs:       1024,
	}
}

// withDefaults fills t's zero fields from DefaultTiming.
func (t Timing) withDefaults() Timing {
	d := DefaultTiming()
	t.HeartbeatTimeout = cmp.Or(t.HeartbeatTimeout, d.HeartbeatTimeout)
	t.ElectionTimeout = cmp.Or(t.ElectionTimeout, d.ElectionTimeout)
	t.LeaderLeaseTimeout = cmp.Or(t.LeaderLeaseTimeout, min(d.LeaderLeaseTimeout, t.HeartbeatTimeout))
	t.CommitTimeout = cmp.Or(t.CommitTimeout, d.CommitTimeout)
	t.SnapshotThreshold = cmp.Or(t.SnapshotThreshold, d.SnapshotThreshold)
	t.SnapshotInterval = cmp.Or(t.SnapshotInterval, d.SnapshotInterval)
	t.TrailingLogs = cmp.Or(t.TrailingLogs, d.TrailingLogs)
	return t
}

// ErrConfig is wrapped by Open's errors for an invalid Config.
var ErrConfig = errors.New("invalid consensus config")

func (c Config) validate() error {
	switch {
	case c.ID == "":
		return fmt.Errorf("%w: ID is empty, want the node name", ErrConfig)
	case c.DataDir == "":
		return fmt.Errorf("%w: DataDir is empty", ErrConfig)
	case c.StreamLayer == nil && c.BindAddr == "":
		return fmt.Errorf("%w: BindAddr is empty, want host:port", ErrConfig)
	case c.FSM == nil:
		return fmt.Errorf("%w: FSM is nil", ErrConfig)
	}
	t := c.Timing
	if t.LeaderLeaseTimeout > t.HeartbeatTimeout {
		return fmt.Errorf("%w: Timing.LeaderLeaseTimeout %s exceeds HeartbeatTimeout %s",
			ErrConfig, t.LeaderLeaseTimeout, t.HeartbeatTimeout)
	}
	return nil
}

// raftConfig builds raft's configuration from ours.
func (c Config) raftConfig(logger *hclogAdapter, notify chan<- bool) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.ID)
	rc.HeartbeatTimeout = c.Timing.HeartbeatTimeout
	rc.ElectionTimeout = c.Timing.ElectionTimeout
	rc.LeaderLeaseTimeout = c.Timing.LeaderLeaseTimeout
	rc.CommitTimeout = c.Timing.CommitTimeout
	rc.SnapshotThreshold = c.Timing.SnapshotThreshold
	rc.SnapshotInterval = c.Timing.SnapshotInterval
	rc.TrailingLogs = c.Timing.TrailingLogs
	// Group commit: raft's leader loop already takes every apply that is
	// waiting (up to MaxAppendEntries, 64) into one log write and one
	// AppendEntries; BatchApplyCh buffers its apply channel to that size,
	// so concurrent submits queue while a write is under way instead of
	// each waiting for the loop to take it. Safe: entries keep their
	// order (one channel, one reader), each still commits and answers on
	// its own future, and a future's enqueue timeout still bounds the
	// wait; what it costs is at most 64 queued futures of memory.
	rc.BatchApplyCh = true
	rc.Logger = logger
	rc.NotifyCh = notify
	// A server removed from the configuration stays up as a follower that
	// holds no vote, so the leader can add it back (as a non-voter) when it
	// reappears, without restarting the agent.
	rc.ShutdownOnRemove = false
	return rc
}
