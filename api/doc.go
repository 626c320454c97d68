// Package api holds Shoal's HTTP wire types and the Go client that the CLI,
// other agents and tests use to talk to an agent.
//
// The JSON shapes here are a published contract (README, "Output
// contract"): fields may be added, never renamed or removed. Times are
// RFC 3339 strings, empty when not yet reached, so shell tools can parse
// them without knowing Go's zero time.
//
// The client reaches an agent over its Unix socket ("unix:///path") or
// TCP ("http://host:port"). It never retries on its own except where a
// request id makes the retry safe (Submit).
package api
