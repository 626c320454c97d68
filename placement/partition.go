package placement

import "github.com/shoal-sched/shoal/cluster"

// Partitions restrict where a job runs: Request.Partition names one of
// the partitions the View was given (WithPartitions), and the job may use
// only its nodes. A partition that names every node, or none (all), costs
// nothing; a job in one that restricts is placed like a job with a node
// set: by a scan of its eligible nodes.

// partInfo is one partition as the View sees it: which of its nodes it
// holds, by node index, unless it holds them all.
type partInfo struct {
	all bool
	in  []bool // by node index; nil when all
}

// WithPartitions returns v knowing the queue policy's partitions; jobs
// naming another partition, or none, are not restricted. It changes v and
// returns it, for chaining after NewView; call it before any Place.
func (v *View) WithPartitions(ps []cluster.Partition) *View {
	if len(ps) == 0 {
		return v
	}
	v.parts = make(map[string]partInfo, len(ps))
	for _, pt := range ps {
		info := partInfo{all: len(pt.Nodes) == 0}
		if !info.all {
			info.in = make([]bool, len(v.nodes))
			n := 0
			for i := range v.nodes {
				if pt.Has(v.nodes[i].node.Name) {
					info.in[i] = true
					n++
				}
			}
			if n == len(v.nodes) {
				info = partInfo{all: true}
			}
		}
		v.parts[pt.Name] = info
	}
	return v
}

// restricts reports whether partition name keeps jobs off some node.
func (v *View) restricts(name string) bool {
	if name == "" || v.parts == nil {
		return false
	}
	p, ok := v.parts[name]
	return ok && !p.all
}

// inPartition reports whether node ni may take a job of partition name.
func (v *View) inPartition(ni int, name string) bool {
	if name == "" || v.parts == nil {
		return true
	}
	p, ok := v.parts[name]
	return !ok || p.all || p.in[ni]
}
