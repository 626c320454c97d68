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
// The agent (package agent) composes it: it builds a Server with itself as
// the Backend (the leader's and the worker's side: JobWrites, JobReads,
// Queue, Admin, Terminals, Internal, ...), which take and return plain
// values, the caller as a cluster.Identity (Caller.Who), and marked
// errors. Routes serves every path itself except the two the agent hands
// in (Handlers: metrics and the web view).
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
