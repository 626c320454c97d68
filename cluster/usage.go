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

// GPUUsage is what a job's GPUs on one node did while it ran, from the
// node agent's samples (a sample every --gpu-sample-interval).
type GPUUsage struct {
	Samples int `msgpack:"samples" json:"samples"`
	// MeanUtil is the utilization (0 to 1) averaged over the samples and
	// the job's GPUs; PeakUtil the highest of one GPU in one sample.
	MeanUtil float64 `msgpack:"mean_util" json:"mean_util"`
	PeakUtil float64 `msgpack:"peak_util" json:"peak_util"`
	// MeanMemBytes and PeakMemBytes are the memory in use on the job's
	// GPUs together, averaged over the samples and at most.
	MeanMemBytes uint64 `msgpack:"mean_mem_bytes" json:"mean_mem_bytes"`
	PeakMemBytes uint64 `msgpack:"peak_mem_bytes" json:"peak_mem_bytes"`
}

// Add returns u with one more sample: the utilization of each of the
// job's GPUs and the memory they used together. A sample of no GPUs
// leaves u as it is.
func (u GPUUsage) Add(utils []float64, memBytes uint64) GPUUsage {
	if len(utils) == 0 {
		return u
	}
	var sum float64
	for _, x := range utils {
		sum += x
		u.PeakUtil = max(u.PeakUtil, x)
	}
	n := float64(u.Samples)
	u.MeanUtil = (u.MeanUtil*n + sum/float64(len(utils))) / (n + 1)
	u.MeanMemBytes = uint64((float64(u.MeanMemBytes)*n + float64(memBytes)) / (n + 1))
	u.PeakMemBytes = max(u.PeakMemBytes, memBytes)
	u.Samples++
	return u
}
