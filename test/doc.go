// Package test holds Shoal's integration tests: real `shoal agent`
// processes on loopback (real raft on disk, real memberlist, real ranks),
// driven through the real CLI, with process faults (kill -9, restarts).
// The chaos harness and its checker will live beside them.
package test
