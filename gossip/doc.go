// Package gossip wraps hashicorp/memberlist for Shoal. It owns cluster
// discovery and failure detection: who is alive, at which gossip address,
// and what each node announces about itself (Meta: API and raft addresses,
// a GPU summary, topology labels, version, the protocol version it
// speaks, bootstrap intent).
//
// Gossip carries who is alive and what each node has; Raft carries what is
// decided. This package must never touch raft, the FSM or job state, and
// nothing it reports is authoritative: the leader turns gossip events into
// raft commands. It may import only the standard library, memberlist, msgpack
// and the cluster domain types.
//
// Contracts that are not obvious:
//
//   - Meta is msgpack with one- or two-letter keys and must fit
//     memberlist's 512-byte NodeMeta limit. Validate bounds every string
//     (MaxAddrLen and friends) so the worst case is known to fit; the keys
//     are a wire format shared by every version in a cluster.
//   - memberlist invokes our delegates from its own goroutines while
//     holding its node lock. They never block: Events is a buffered
//     channel, and an event that does not fit is dropped, counted
//     (Dropped) and logged at warn. Readers that must not miss a change
//     should treat Events as a hint and re-read Members.
//   - Members is built from those callbacks, not from memberlist's node
//     table (reading that table's fields races with memberlist). As a
//     consequence suspicion is not visible: a suspect node stays alive
//     until memberlist declares it failed. Each callback does O(1) work
//     (every node sees every other node's join, so anything per member
//     there is O(N²) per node as a cluster forms); the sorted list
//     Members returns is rebuilt only after a change, and Member and
//     NumMembers answer without it.
//   - Failed members are dialled again (a push/pull) to heal one-way
//     partitions; the alive members share those dials, so the cluster
//     dials each failed member about once a round, not once per node.
//   - A node's undecodable metadata is logged and shown as the zero Meta;
//     nothing here panics on bytes from the network.
//   - memberlist's own log lines ("[WARN] memberlist: ...") are parsed into
//     slog records at the matching level; nothing is written to stderr.
//   - Join reports ErrNameConflict when, during the join, memberlist tells
//     us (ConflictDelegate) that a live node with our name exists at a
//     different address. Later conflicts are only logged.
//   - Shutdown without Leave makes the others declare this node failed;
//     Leave then Shutdown makes them mark it left. memberlist v0.5.4 does
//     not say which of the two a departure was, so Leave first gossips a
//     leave intent (a user message: type byte, then msgpack) and waits for
//     it to be sent; a node holding a fresh intent when memberlist reports
//     the departure calls it a leave. A node that missed the intent reports
//     a failure: the difference is advisory, never a safety signal.
package gossip
