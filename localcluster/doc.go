// Package localcluster runs a Shoal cluster of real agent processes on one
// machine: each agent is a `shoal agent` process with its own data dir and
// its own ports on a loopback address. `shoal dev` and the integration
// tests use it; nothing in the agent itself depends on it.
//
// It owns the processes it starts: Stop ends them all (SIGTERM, then
// SIGKILL after a grace), and Kill, Pause and Restart act on one, so tests
// can inject process faults (kill -9, SIGSTOP) against real agents.
package localcluster
