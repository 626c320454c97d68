// Package api holds Shoal's HTTP wire types and the Go client that the CLI,
// other agents and tests use to talk to an agent.
//
// The JSON shapes here are a published contract (README, "Output
// contract"): fields may be added, never renamed or removed. Times are
// RFC 3339 strings, empty when not yet reached, so shell tools can parse
// them without knowing Go's zero time.
//
// The client reaches an agent over its Unix socket ("unix:///path") or
// TCP ("http://host:port"). It sends a request again on its own only
// across a leader change, and only when that cannot make it act twice
// (retry.go): any write an agent refused before proposing it, and an
// Idempotent write (cancel, hold, drain; a submit, an srun step, a
// signal, a requeue or a relative time limit with its request id) whose
// outcome the change left unknown. Each client
// method says which its write is.
package api
