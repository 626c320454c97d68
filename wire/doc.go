// Package wire decodes msgpack from untrusted bytes — raft log entries,
// snapshots, gossip metadata and messages — without trusting the lengths
// the bytes declare.
//
// msgpack v5.4.1 preallocates a slice to whatever length its header
// claims (its allocation-limit flag is tested with != 1 and so is never
// honoured), so an 8-byte message can make it allocate gigabytes, a fault
// recover cannot catch. Decode first walks the bytes and refuses any
// container or string longer than what is left, nesting deeper than
// MaxNesting, malformed codes and trailing bytes; only then does msgpack
// decode them. Encoding needs no guard: use msgpack directly.
//
// wire imports nothing of Shoal's, so every package may use it.
package wire
