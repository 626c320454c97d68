// Package cluster holds Shoal's domain types: jobs and their resource
// requests, nodes and their GPUs, and allocations. It is plain data with
// no dependencies beyond the standard library, so every other package —
// fsm, placement, gossip, exec, node — can share it without import cycles.
//
// The types are encoded with msgpack in the Raft log and in snapshots, so
// field names are part of the on-disk format: add fields, never rename or
// renumber them. Times are carried as time.Time values that were stamped by
// the leader; nothing here reads a clock.
package cluster
