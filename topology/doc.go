// Package topology finds a node's place in the network by itself, so that
// an operator need not write it: the leaf switch from LLDP (lldpd's view of
// the neighbour on the interface that carries the cluster's traffic), the
// leaf's parent from the InfiniBand fabric (ibnetdiscover), and the NVLink
// domain (a block) from NVML's GPU fabric information.
//
// It owns the parsers of those tools' outputs (pure, fuzzed), the Sources
// that run the tools, and Merge, the pure rule that combines what the
// sources found with what the operator configured (--switch,
// --switch-parent, --block, topology.conf), field by field, the operator
// winning; and Discoverer, the loop that runs the sources now and then and
// announces the merged place through a Place the agent (package agent)
// implements over its gossip. The leader builds the switch tree from the
// places the nodes announce (cluster.LeafParents).
package topology
