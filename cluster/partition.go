package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/slurm"
)

// Partition is a named set of nodes with its own time limits and
// priority, as Slurm's partitions: a job names one with -p (or gets the
// default one), runs only on its nodes, gets its DefaultTime when it asks
// for no limit, and pends with PartitionTimeLimit while it asks for more
// than MaxTime.
type Partition struct {
	Name string `msgpack:"name" json:"name"`
	// Nodes are the partition's node names, ascending and distinct; empty
	// means every node.
	Nodes []string `msgpack:"nodes" json:"nodes"`
	// Default marks the partition jobs go to when they name none.
	Default bool `msgpack:"default" json:"default"`
	// DefaultTime is the limit of a job that asks for none; zero: MaxTime.
	DefaultTime time.Duration `msgpack:"default_time" json:"default_time"`
	// MaxTime is the most a job may ask for; zero: no limit.
	MaxTime time.Duration `msgpack:"max_time" json:"max_time"`
	// Priority is the partition's priority factor (Slurm's
	// PriorityJobFactor), weighted by Weights.Partition.
	Priority int64 `msgpack:"priority" json:"priority"`
	// DefMemPerCPU and DefMemPerGPU (MiB) are the memory a job that asks
	// for none gets: per GPU when it has GPUs and DefMemPerGPU is set,
	// else per CPU; zero: none (the job holds no memory and its cgroup
	// is limited only by the node). DefCPUPerGPU is the CPUs per GPU of
	// a GPU job that asks for neither -c nor --cpus-per-gpu. MaxMemPerNode
	// (MiB) refuses at submit a job asking for more on one node; zero: no
	// limit. As slurm.conf's partition options of the same names.
	DefMemPerCPU  uint64 `msgpack:"def_mem_per_cpu,omitempty" json:"def_mem_per_cpu,omitempty"`
	DefMemPerGPU  uint64 `msgpack:"def_mem_per_gpu,omitempty" json:"def_mem_per_gpu,omitempty"`
	DefCPUPerGPU  int    `msgpack:"def_cpu_per_gpu,omitempty" json:"def_cpu_per_gpu,omitempty"`
	MaxMemPerNode uint64 `msgpack:"max_mem_per_node,omitempty" json:"max_mem_per_node,omitempty"`
}

// Partition bounds.
const (
	MaxPartitions        = 256
	MaxPartitionNodes    = 100000
	ReasonPartitionLimit = "PartitionTimeLimit"
)

// validatePartitions checks the policy's partitions (sorted by name, at
// most one default, limits that agree) and names the first bad field.
func validatePartitions(ps []Partition) error {
	if len(ps) > MaxPartitions {
		return fmt.Errorf("partitions: %d, want at most %d", len(ps), MaxPartitions)
	}
	defaults := 0
	for i, p := range ps {
		where := fmt.Sprintf("partitions[%d] %.64q", i, p.Name)
		if err := policyName(p.Name); err != nil {
			return fmt.Errorf("%s: name: %w", where, err)
		}
		if i > 0 && p.Name <= ps[i-1].Name {
			return fmt.Errorf("%s: name not after %q, want ascending unique names", where, ps[i-1].Name)
		}
		if len(p.Nodes) > MaxPartitionNodes {
			return fmt.Errorf("%s: nodes: %d, want at most %d", where, len(p.Nodes), MaxPartitionNodes)
		}
		for k, n := range p.Nodes {
			if n == "" || len(n) > MaxNodeNameBytes {
				return fmt.Errorf("%s: nodes[%d]: %d bytes, want 1 to %d", where, k, len(n), MaxNodeNameBytes)
			}
			if k > 0 && n <= p.Nodes[k-1] {
				return fmt.Errorf("%s: nodes[%d] %.64q not after %.64q, want ascending unique names", where, k, n, p.Nodes[k-1])
			}
		}
		switch {
		case p.DefaultTime < 0 || p.DefaultTime > MaxPolicyDuration:
			return fmt.Errorf("%s: default_time %s: want 0 to %s", where, p.DefaultTime, MaxPolicyDuration)
		case p.MaxTime < 0 || p.MaxTime > MaxPolicyDuration:
			return fmt.Errorf("%s: max_time %s: want 0 (no limit) to %s", where, p.MaxTime, MaxPolicyDuration)
		case p.MaxTime > 0 && p.DefaultTime > p.MaxTime:
			return fmt.Errorf("%s: default_time %s is above max_time %s", where, p.DefaultTime, p.MaxTime)
		case p.Priority < 0 || p.Priority > MaxPolicyWeight:
			return fmt.Errorf("%s: priority %d: want 0 to %d", where, p.Priority, int64(MaxPolicyWeight))
		case p.DefMemPerCPU > MaxMemPerNodeMiB || p.DefMemPerGPU > MaxMemPerNodeMiB || p.MaxMemPerNode > MaxMemPerNodeMiB:
			return fmt.Errorf("%s: def_mem_per_cpu %d, def_mem_per_gpu %d, max_mem_per_node %d: want each at most %d MiB",
				where, p.DefMemPerCPU, p.DefMemPerGPU, p.MaxMemPerNode, uint64(MaxMemPerNodeMiB))
		case p.DefCPUPerGPU < 0 || p.DefCPUPerGPU > MaxCPUsPerTask:
			return fmt.Errorf("%s: def_cpu_per_gpu %d: want 0 to %d", where, p.DefCPUPerGPU, MaxCPUsPerTask)
		}
		if p.Default {
			defaults++
		}
	}
	if defaults > 1 {
		return fmt.Errorf("partitions: %d marked default, want at most one", defaults)
	}
	return nil
}

// Partition returns the partition named name.
func (p *Policy) Partition(name string) (*Partition, bool) {
	if p == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(p.Partitions, name, func(x Partition, n string) int { return cmp.Compare(x.Name, n) })
	if !ok {
		return nil, false
	}
	return &p.Partitions[i], true
}

// DefaultPartition returns the partition jobs that name none go to.
func (p *Policy) DefaultPartition() (*Partition, bool) {
	if p == nil {
		return nil, false
	}
	for i := range p.Partitions {
		if p.Partitions[i].Default {
			return &p.Partitions[i], true
		}
	}
	return nil, false
}

// Has reports whether node is in the partition.
func (pt *Partition) Has(node string) bool {
	if len(pt.Nodes) == 0 {
		return true
	}
	_, ok := slices.BinarySearch(pt.Nodes, node)
	return ok
}

// Limit is the time limit a job asking for limit gets in the partition:
// its DefaultTime (else MaxTime) when it asks for none.
func (pt *Partition) Limit(limit time.Duration) time.Duration {
	if limit > 0 {
		return limit
	}
	if pt.DefaultTime > 0 {
		return pt.DefaultTime
	}
	return pt.MaxTime
}

// OverLimit reports whether a job with this (already defaulted) limit
// asks for more than the partition allows.
func (pt *Partition) OverLimit(limit time.Duration) bool {
	return pt.MaxTime > 0 && (limit <= 0 || limit > pt.MaxTime)
}

// ResolvePartition returns the partition a spec runs in, and the spec
// with its partition named and its time limit defaulted. With no
// partitions configured, a spec's -p names nothing and is kept as it is.
func (p *Policy) ResolvePartition(spec Spec) (Spec, *Partition, error) {
	if p == nil || len(p.Partitions) == 0 {
		return spec, nil, nil
	}
	var pt *Partition
	if spec.Request.Partition == "" {
		d, ok := p.DefaultPartition()
		if !ok {
			return spec, nil, fmt.Errorf("partition: none given and no default partition; want one of %s", p.partitionNames())
		}
		pt = d
	} else {
		var ok bool
		if pt, ok = p.Partition(spec.Request.Partition); !ok {
			return spec, nil, fmt.Errorf("partition %.64q: no such partition; want one of %s", spec.Request.Partition, p.partitionNames())
		}
	}
	spec.Request.Partition = pt.Name
	spec.Request.TimeLimit = pt.Limit(spec.Request.TimeLimit)
	spec.Request = pt.resourceDefaults(spec.Request)
	if r := spec.Request; pt.MaxMemPerNode > 0 && !r.WholeMem() && r.MemPerNode() > pt.MaxMemPerNode {
		return spec, nil, fmt.Errorf("memory per node %d MiB: partition %s allows at most %d (MaxMemPerNode)", r.MemPerNode(), pt.Name, pt.MaxMemPerNode)
	}
	return spec, pt, nil
}

// resourceDefaults fills what r leaves to the partition: CPUs per GPU
// (DefCPUPerGPU) when r asks for neither -c above 1 nor --cpus-per-gpu,
// and memory (DefMemPerGPU for a GPU job, else DefMemPerCPU) when r asks
// for none. -c 1 is every job's default by the time the FSM sees it, so
// an explicit -c 1 counts as none, where Slurm would keep it.
func (pt *Partition) resourceDefaults(r Request) Request {
	if pt.DefCPUPerGPU > 0 && r.GPUsPerNode > 0 && r.CPUsPerGPU == 0 && r.CPUsPerTask <= 1 {
		r.CPUsPerGPU = pt.DefCPUPerGPU
	}
	if r.MemPerNodeMiB > 0 || r.MemPerCPUMiB > 0 || r.MemPerGPUMiB > 0 || r.WholeMem() {
		return r
	}
	switch {
	case pt.DefMemPerGPU > 0 && r.GPUsPerNode > 0:
		r.MemPerGPUMiB = pt.DefMemPerGPU
	case pt.DefMemPerCPU > 0:
		r.MemPerCPUMiB = pt.DefMemPerCPU
	}
	return r
}

func (p *Policy) partitionNames() string {
	names := make([]string, len(p.Partitions))
	for i, pt := range p.Partitions {
		names[i] = pt.Name
	}
	return strings.Join(names, ", ")
}

// PartitionFile is one partition in a PolicyFile: nodes as a Slurm
// hostlist ("n[01-16]"; absent: every node), times in Slurm's --time
// forms ("1-00:00:00", "UNLIMITED"; absent: none).
type PartitionFile struct {
	Nodes       string `json:"nodes,omitempty"`
	Default     bool   `json:"default,omitempty"`
	DefaultTime string `json:"default_time,omitempty"`
	MaxTime     string `json:"max_time,omitempty"`
	Priority    int64  `json:"priority,omitempty"`
	// Memory sizes in Slurm's forms ("4096", "4G"); CPUs a count.
	DefMemPerCPU  string `json:"def_mem_per_cpu,omitempty"`
	DefMemPerGPU  string `json:"def_mem_per_gpu,omitempty"`
	DefCPUPerGPU  int    `json:"def_cpu_per_gpu,omitempty"`
	MaxMemPerNode string `json:"max_mem_per_node,omitempty"`
}

// partitionsFromFile reads a policy file's partitions, sorted by name.
func partitionsFromFile(fs map[string]PartitionFile) ([]Partition, error) {
	if len(fs) > MaxPartitions {
		return nil, fmt.Errorf("partitions: %d, want at most %d", len(fs), MaxPartitions)
	}
	var out []Partition
	for name, f := range fs {
		pt := Partition{Name: name, Default: f.Default, Priority: f.Priority, DefCPUPerGPU: f.DefCPUPerGPU}
		for _, m := range []struct {
			field string
			in    string
			out   *uint64
		}{{"def_mem_per_cpu", f.DefMemPerCPU, &pt.DefMemPerCPU}, {"def_mem_per_gpu", f.DefMemPerGPU, &pt.DefMemPerGPU}, {"max_mem_per_node", f.MaxMemPerNode, &pt.MaxMemPerNode}} {
			if m.in == "" {
				continue
			}
			v, err := slurm.ParseMemory(m.in)
			if err != nil {
				return nil, fmt.Errorf("partitions.%s.%s: %w", name, m.field, err)
			}
			*m.out = v
		}
		if f.Nodes != "" {
			nodes, err := slurm.ExpandHostlist(f.Nodes)
			if err != nil {
				return nil, fmt.Errorf("partitions.%s.nodes: %w", name, err)
			}
			slices.Sort(nodes)
			pt.Nodes = slices.Compact(nodes)
		}
		for _, t := range []struct {
			field string
			in    string
			out   *time.Duration
		}{{"default_time", f.DefaultTime, &pt.DefaultTime}, {"max_time", f.MaxTime, &pt.MaxTime}} {
			if t.in == "" {
				continue
			}
			d, err := slurm.ParseTime(t.in)
			if err != nil {
				return nil, fmt.Errorf("partitions.%s.%s: %w", name, t.field, err)
			}
			*t.out = d
		}
		out = append(out, pt)
	}
	slices.SortFunc(out, func(a, b Partition) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// partitionsToFile is the inverse of partitionsFromFile.
func partitionsToFile(ps []Partition) map[string]PartitionFile {
	if len(ps) == 0 {
		return nil
	}
	out := make(map[string]PartitionFile, len(ps))
	for _, pt := range ps {
		f := PartitionFile{Default: pt.Default, Priority: pt.Priority, DefCPUPerGPU: pt.DefCPUPerGPU}
		for _, m := range []struct {
			in  uint64
			out *string
		}{{pt.DefMemPerCPU, &f.DefMemPerCPU}, {pt.DefMemPerGPU, &f.DefMemPerGPU}, {pt.MaxMemPerNode, &f.MaxMemPerNode}} {
			if m.in > 0 {
				*m.out = fmt.Sprintf("%dM", m.in)
			}
		}
		if len(pt.Nodes) > 0 {
			f.Nodes = slurm.CompressHostlist(pt.Nodes)
		}
		if pt.DefaultTime > 0 {
			f.DefaultTime = slurm.FormatTime(pt.DefaultTime)
		}
		if pt.MaxTime > 0 {
			f.MaxTime = slurm.FormatTime(pt.MaxTime)
		}
		out[pt.Name] = f
	}
	return out
}
