// Package consensus runs Shoal's Raft log: it owns hashicorp/raft, its
// stores (raft-boltdb/v2 for the log and stable store, a file snapshot
// store), the transport (plain TCP, or mutual TLS through NewTLSStream and
// the raft.StreamLayer seam in Config), bootstrap, leadership notifications, and the planning of
// voter and non-voter membership from gossip.
//
// # What it owns and what it never touches
//
// Everything under <DataDir>/raft belongs to this package: raft.db (the log
// and the stable store in one bbolt file) and snapshots/ (the two newest
// snapshots are kept). Nothing else may open those files while a *Raft is
// open; bbolt's file lock enforces it, and Open gives up after
// boltOpenTimeout rather than hang behind another agent on the same
// directory.
//
// The package adapts raft.FSM to *fsm.State and nothing more: it hands
// every committed command entry to State.Apply with its raft index, takes
// snapshots as State.Snapshot bytes and restores them with State.Restore.
// It never decodes commands, never reads the FSM's contents, and never
// decides what to propose; the agent (package agent) does that. It knows
// nothing of gossip either: PlanVoters and BootstrapSet take plain values
// the caller gathered from gossip, and are pure (no clock, no I/O), so the
// leader's reconcile loop is gather (gossip + Servers) → PlanVoters →
// ApplyChanges.
//
// # Results and errors
//
// Apply returns two kinds of failure separately. The error is about
// consensus: ErrNotLeader (as *NotLeaderError naming the leader, so the
// caller can forward), ErrShutdown, or the context's error. The
// fsm.Result's Err is the state machine's verdict on a committed entry.
// When the error wraps raft.ErrLeadershipLost or the context expired after
// the entry was handed to raft, the entry may or may not commit: callers
// retry only commands the FSM deduplicates (SubmitJob carries a request
// id for that reason).
//
// # Timeouts and why
//
// DefaultTiming (500ms heartbeat timeout, 1s election timeout, 450ms
// leader lease, 50ms commit timeout) is for a LAN:
// config.go says why it tolerates GC pauses, a busy node and slow fsyncs
// without needless elections, and why the node lease that fences tasks
// does not depend on it. A leader killed outright is replaced in under a
// second: besides the shorter timeouts, a follower asked for a vote by a
// peer re-checks its own leader at once (recheck.go) rather than at its
// timer's random next tick. FastTiming (300ms/300ms/150ms) is for
// loopback only: tests and `shoal dev`.
//
// Every operation that waits on raft takes its bound from the context's
// deadline, or DefaultTimeout (10s) when the context has none: long
// enough for an election plus a commit on a LAN, short enough that a
// client sees a clear error instead of a hang when there is no quorum.
//
// # Leadership notifications
//
// raft blocks its main loop on Config.NotifyCh when nobody reads it. This
// package reads that channel in one forwarding goroutine that queues
// changes (up to leaderBacklog, then coalesces to the latest value) and
// offers them on LeaderCh in order, so a slow consumer never stalls raft.
// A consumer that sees true twice in a row must treat it as "lost and
// regained" (stop leader work, then start it again); the channel is
// closed by Shutdown, which also means leadership is gone.
package consensus
