package cluster

import (
	"fmt"
	"time"
)

// GPU is one device on a node. Index is the position the executor exports
// in CUDA_VISIBLE_DEVICES.
type GPU struct {
	Index     int    `msgpack:"index" json:"index"`
	UUID      string `msgpack:"uuid" json:"uuid"`
	Model     string `msgpack:"model" json:"model"`
	MemoryMiB uint64 `msgpack:"memory_mib" json:"memory_mib"`
	// NUMA is the NUMA node the GPU hangs off, -1 when unknown.
	NUMA int `msgpack:"numa" json:"numa"`
	// NVLinkPeers lists indices of GPUs joined to this one by NVLink.
	NVLinkPeers []int `msgpack:"nvlink_peers" json:"nvlink_peers,omitempty"`
}

// Topology is a node's place in the network: its leaf switch, that
// switch's parent, and optionally an NVLink block.
type Topology struct {
	Switch       string `msgpack:"switch" json:"switch"`
	SwitchParent string `msgpack:"switch_parent" json:"switch_parent"`
	Block        string `msgpack:"block" json:"block,omitempty"`
}

// NodeStatus is whether the cluster counts a node as usable.
type NodeStatus string

const (
	NodeUp   NodeStatus = "up"
	NodeDown NodeStatus = "down" // lease expired; its allocations were failed
	NodeLeft NodeStatus = "left" // left gracefully
)

// Node is a node as the FSM records it: what gossip announced, made
// authoritative by a raft command.
type Node struct {
	Name       string `msgpack:"name" json:"name"`
	APIAddr    string `msgpack:"api_addr" json:"api_addr"`
	RaftAddr   string `msgpack:"raft_addr" json:"raft_addr"`
	GossipAddr string `msgpack:"gossip_addr" json:"gossip_addr"`
	GPUs       []GPU  `msgpack:"gpus" json:"gpus"`
	CPUs       int    `msgpack:"cpus" json:"cpus"`
	MemoryMiB  uint64 `msgpack:"memory_mib" json:"memory_mib"`
	// Sockets, CoresPerSocket and ThreadsPerCore are the CPU layout, as
	// slurm.conf's; zero when unknown (then one socket of CPUs cores).
	// With them CPUs is their product. See SocketOf for the numbering.
	Sockets        int        `msgpack:"sockets,omitempty" json:"sockets,omitempty"`
	CoresPerSocket int        `msgpack:"cores_per_socket,omitempty" json:"cores_per_socket,omitempty"`
	ThreadsPerCore int        `msgpack:"threads_per_core,omitempty" json:"threads_per_core,omitempty"`
	Topology       Topology   `msgpack:"topology" json:"topology"`
	Version        string     `msgpack:"version" json:"version"`
	Status         NodeStatus `msgpack:"status" json:"status"`
	// Drain keeps new jobs off the node; running ones finish.
	Drain       bool      `msgpack:"drain" json:"drain"`
	DrainReason string    `msgpack:"drain_reason" json:"drain_reason,omitempty"`
	StatusTime  time.Time `msgpack:"status_time" json:"status_time"`

	// Features are the node's labels (the agent's --features) that a
	// job's Constraint matches, as Slurm's node features.
	Features []string `msgpack:"features" json:"features,omitempty"`

	CreateIndex uint64 `msgpack:"create_index" json:"create_index"`
	ModifyIndex uint64 `msgpack:"modify_index" json:"modify_index"`
}

// Clone returns a deep copy of n.
func (n *Node) Clone() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Features = append([]string(nil), n.Features...)
	c.GPUs = make([]GPU, len(n.GPUs))
	for i, g := range n.GPUs {
		g.NVLinkPeers = append([]int(nil), g.NVLinkPeers...)
		c.GPUs[i] = g
	}
	return &c
}

// MaxCPUsPerNode bounds a node's CPUs (its bitsets stay small).
const MaxCPUsPerNode = 1 << 16

// ValidateLayout checks a node's CPU layout: none (all zero), or sockets,
// cores per socket and threads per core all set with cpus their product.
func ValidateLayout(cpus, sockets, cores, threads int) error {
	if sockets == 0 && cores == 0 && threads == 0 {
		return nil
	}
	switch {
	case sockets < 1 || cores < 1 || threads < 1:
		return fmt.Errorf("sockets %d, cores_per_socket %d, threads_per_core %d: want all three 1 or more, or all 0 (no layout)", sockets, cores, threads)
	case sockets > MaxCPUsPerNode || cores > MaxCPUsPerNode || threads > MaxCPUsPerNode || sockets*cores*threads != cpus:
		return fmt.Errorf("sockets %d x cores_per_socket %d x threads_per_core %d: want their product to be cpus %d", sockets, cores, threads, cpus)
	}
	return nil
}

// SocketOf returns the socket of CPU position p, the NUMA node that GPUs
// on that socket report (GPU.NUMA). Positions number the hardware threads
// as Linux does on most servers: first thread 0 of every core, socket by
// socket, then thread 1 of every core in the same order, and so on; so
// position p is on socket (p mod (Sockets*CoresPerSocket)) /
// CoresPerSocket. A node with no layout has one socket, 0.
func (n *Node) SocketOf(p int) int {
	cores := n.Sockets * n.CoresPerSocket
	if n.Sockets <= 1 || n.CoresPerSocket <= 0 || p < 0 {
		return 0
	}
	return (p % cores) / n.CoresPerSocket
}

// Schedulable reports whether new work may be placed on the node.
func (n *Node) Schedulable() bool { return n.Status == NodeUp && !n.Drain }

// MaxNodeNameLen bounds a node name: it must fit a DNS label, since it is
// a task's host name and a DNS name in the node's certificate.
const MaxNodeNameLen = 63

// ValidNodeName reports whether s can name a node: 1 to 63 letters, digits
// and "-_.", starting with a letter or digit.
func ValidNodeName(s string) bool {
	if len(s) == 0 || len(s) > MaxNodeNameLen {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case (r == '-' || r == '_' || r == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}
