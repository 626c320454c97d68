// Package httpapi is the agent's HTTP API: who a request acts for
// (authentication: Unix socket peer credentials, mTLS node identity, user
// tokens), leader forwarding of writes that reach a follower, the read
// floor and blocking reads (?index=&wait=, X-Shoal-Index), the rendering
// of records and answers as JSON, the decoding of request bodies, and the
// one table that maps a refusal (a sentinel error, see cluster.ErrInvalid
// and its siblings) to the status the API answers with.
//
// It owns only HTTP: it knows nothing of scheduling, placement or the
// replicated state machine's rules, and it must never decide anything
// about jobs or nodes. It calls the agent through plain Go values and
// interfaces declared where they are used; the code it calls (the leader's
// and the worker's) returns plain errors wrapped around sentinels and never
// an HTTP type.
//
// The agent (package agent) composes it: it builds a Server from its
// Roles, one small interface per group of routes, declared beside those
// routes, each served by the agent's component whose role it is:
//
//   - Cluster (server.go): forwarding, the read floor, blocking reads, a
//     worker's reads, the leader-only checks; the agent's core.
//   - Authority (caller.go): what proves a caller (the TLS peer, the
//     token state); securityAPI.
//   - Info (reads.go, follow.go): this agent's status, the leader, the
//     gossip members (as api.Member), a worker's follow query; core.
//   - Queue (jobs.go): submits, job reads, queue operations, steps,
//     signals; apiBackend.
//   - Admin (admin.go): node records, drains, the policy, priorities and
//     fair share, switch reports, stopping this agent; apiBackend.
//   - Security (security.go): joins, renewals, revocations, user and join
//     tokens, the gossip keyring, the CA offer; securityAPI.
//   - Relays (relays.go, pty.go, bcast.go): a job's output and GPU
//     series, terminals, stdin, PMIx fences, sbcast; relayAPI.
//   - Internal (internal.go): the nodes' heartbeats, task reports, leaves
//     and drains at stop; leaderSide.
//
// They take and return plain values, the caller as a cluster.Identity
// (Caller.Who), and marked errors; a test fakes only the roles its routes
// reach. Routes serves every path itself except the two the agent hands
// in (Handlers: metrics and the web view).
//
// What it imports of Shoal, and why: api (the wire types), cluster (the
// records it renders, identities, the sentinels), slurm (ParseJobID: one
// parser of job ids) and pki (checking a user token, a renewal's CSR and
// certificate). Never placement, leader, worker or exec: what decides
// lives behind the roles; nor fsm, consensus or gossip, so neither raft
// nor memberlist is among its dependencies: the sentinels its status
// table maps that fsm and consensus return (fsm.ErrLimit,
// fsm.ErrDiverged, fsm.ErrUnsupportedByCluster, consensus.ErrNotLeader)
// are cluster's (cluster.ErrLimit and its siblings) under another name,
// and Info hands over the gossip members already rendered.
//
// Contracts that are not obvious:
//
//   - An error's status is that of the outermost cluster.Mark in its chain;
//     an unmarked error forwarded from the leader (*api.StatusError) keeps
//     the leader's status; any other error is looked up in the table with
//     errors.Is, and what matches nothing is a 500.
//   - The message of an error is sent as it is: marking never changes it.
//   - Identity comes only from what the sender cannot forge (ResolveCaller);
//     writes need a proven caller, and a follower passes them on to the
//     leader with the caller's identity and api.HeaderForwardedBy.
//   - A read through an agent never shows a state older than a write that
//     agent acknowledged (the read floor).
package httpapi
