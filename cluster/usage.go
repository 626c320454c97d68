package cluster

import (
	"slices"
	"time"
)

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

// GPUPoint is a job's GPU use on one node over a stretch of its run:
// Samples consecutive samples from Time on, their utilization averaged
// over the samples and the job's GPUs (0 to 1), and the memory they used
// together, averaged.
type GPUPoint struct {
	Time     time.Time `json:"time"`
	Samples  int       `json:"samples"`
	Util     float64   `json:"util"`
	MemBytes uint64    `json:"mem_bytes"`
}

// MaxGPUPoints bounds a GPUSeries: when a sample would make one more
// point, neighbouring points merge pairwise instead, so a series covers
// the whole run, however long, at a resolution that halves as it grows.
const MaxGPUPoints = 240

// GPUSeries is a job's GPU use on one node over time, as the node's agent
// samples it: not replicated (the summary is GPUUsage), kept while the job
// is live. Each point holds Every samples, the last at most Every.
type GPUSeries struct {
	Every  int        `json:"every"`
	Points []GPUPoint `json:"points"`
}

// Add returns s with one more sample taken at t: the utilization of each
// of the job's GPUs and the memory they used together. A sample of no
// GPUs leaves s as it is. Pure: s's points are not modified in place.
func (s GPUSeries) Add(t time.Time, utils []float64, memBytes uint64) GPUSeries {
	if len(utils) == 0 {
		return s
	}
	var sum float64
	for _, x := range utils {
		sum += x
	}
	p := GPUPoint{Time: t, Samples: 1, Util: sum / float64(len(utils)), MemBytes: memBytes}
	s.Every = max(s.Every, 1)
	pts := slices.Clone(s.Points)
	if n := len(pts); n > 0 && pts[n-1].Samples < s.Every {
		pts[n-1] = mergeGPUPoints(pts[n-1], p)
	} else {
		pts = append(pts, p)
	}
	if len(pts) > MaxGPUPoints {
		half := make([]GPUPoint, 0, (len(pts)+1)/2)
		for i := 0; i < len(pts); i += 2 {
			if i+1 < len(pts) {
				half = append(half, mergeGPUPoints(pts[i], pts[i+1]))
			} else {
				half = append(half, pts[i])
			}
		}
		pts = half
		s.Every *= 2
	}
	s.Points = pts
	return s
}

// mergeGPUPoints is a followed by b as one point, weighted by samples.
func mergeGPUPoints(a, b GPUPoint) GPUPoint {
	n := float64(a.Samples + b.Samples)
	return GPUPoint{
		Time:     a.Time,
		Samples:  a.Samples + b.Samples,
		Util:     (a.Util*float64(a.Samples) + b.Util*float64(b.Samples)) / n,
		MemBytes: uint64((float64(a.MemBytes)*float64(a.Samples) + float64(b.MemBytes)*float64(b.Samples)) / n),
	}
}
