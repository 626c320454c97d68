// Package pki owns the cluster's public-key infrastructure: the cluster CA,
// node certificates and their requests (CSRs), where they live in a data
// dir, the gossip encryption key, and the TLS configurations every
// node-to-node connection (raft, the node-to-node HTTP API) and the HTTP API
// on TCP use.
//
// A node's identity is its name, written into its certificate three ways:
// the subject's common name, a DNS name, and the URI shoal://node/NAME. The
// URI is what is checked: only a certificate that chains to the cluster CA,
// carries both client and server auth, and has exactly one such URI is a
// node certificate. Connections between nodes verify the chain themselves
// (nodes dial each other by IP, so there is no host name to check) and then
// compare the name with the node they meant to reach, when they know it.
//
// Everything here is TLS 1.3 only, with ECDSA P-256 keys. The package
// touches the file system only in the functions that say so (Load*, Write*,
// Init*); the rest is pure apart from key generation's randomness.
package pki
