package cluster

import "time"

// Usage is what one node's share of a job (or of a step) used, as the
// node's kernel counted it for the task's cgroup: Slurm's MaxRSS, AveRSS,
// UserCPU and SystemCPU of a step on a node. A record is never changed
// once stored; nil where the node could not count (no cgroups, an older
// agent, a lost task).
type Usage struct {
	// MaxRSS is the most memory the task held at once, in bytes.
	MaxRSS uint64 `msgpack:"max_rss" json:"max_rss"`
	// AveRSS is the average of the task's memory sampled while it ran,
	// in bytes; 0 when it ended before the first sample.
	AveRSS    uint64        `msgpack:"ave_rss,omitempty" json:"ave_rss,omitempty"`
	UserCPU   time.Duration `msgpack:"user_cpu" json:"user_cpu"`
	SystemCPU time.Duration `msgpack:"system_cpu" json:"system_cpu"`
}

// TotalCPU is user and system CPU time together (sacct's TotalCPU).
func (u *Usage) TotalCPU() time.Duration { return u.UserCPU + u.SystemCPU }
