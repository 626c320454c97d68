// Package fsm is Shoal's replicated state machine: the job queue, every
// allocation, and the node table, changed only by applying committed log
// entries (the command types in command.go) in index order.
//
// What it owns: the command format and its deterministic Apply; the
// canonical snapshot format (Snapshot/Restore); the running hash and the
// snapshot digest that replicas compare (DESIGN invariant 5); immutable
// read views with a change channel for blocking queries.
//
// What it must never touch: clocks, randomness, files, the network,
// goroutines, raft or memberlist. Time enters only through the leader's
// stamp in each command. purity_test.go enforces this. The consensus layer
// adapts State to raft.FSM; fsm imports only the standard library, msgpack
// and the domain types in package cluster.
//
// Contracts that are not obvious:
//
//   - Apply is called from one goroutine with strictly increasing indexes
//     (starting at 1). Every entry, even one refused, advances the index
//     and the running hash: sum_i = sha256(sum_{i-1} || be64(index) ||
//     data). A non-increasing index, empty data, an unknown type byte or an
//     undecodable body marks the replica diverged (Diverged, ErrDiverged);
//     the caller must then stop serving reads and give up leadership. A
//     refused command (Result.Err without ErrDiverged) is normal: every
//     replica refuses it identically and nothing changed.
//   - Records are copy-on-write. A *cluster.Job or *cluster.Node reachable
//     from a View is shared with the State and with other views and is
//     never modified after it was stored: callers must not mutate it (clone
//     first). This supersedes the "copy the reader owns" remark in package
//     cluster, which would cost a deep copy of the whole state per view.
//   - GPUs stay held by an allocation until its NodeAlloc is Released (a
//     TaskExited report or NodeDown), even after the job turned terminal;
//     Allocate refuses any decision naming a held GPU (DESIGN invariant 1).
//   - Stored records are canonical: empty slices are stored as nil, so
//     identical histories give identical snapshot bytes whether a replica
//     applied the log or restored a snapshot.
//   - Log bodies and snapshots are checked for well-formed msgpack whose
//     declared lengths fit in the input before they are decoded: msgpack
//     v5.4.1 otherwise allocates whatever length a hostile header claims.
package fsm
