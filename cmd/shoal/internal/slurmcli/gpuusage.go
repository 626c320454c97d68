package slurmcli

import (
	"fmt"
	"io"

	"github.com/shoal-sched/shoal/api"
)

// PrintGPUUsage writes what the job's GPUs did on each node that sampled
// them (`shoal job`, after PrintJob): mean and peak utilization and
// memory, as last recorded. Nothing for a job whose GPUs were not sampled.
func PrintGPUUsage(w io.Writer, j api.Job) {
	for _, t := range j.Tasks {
		g := t.GPUUsage
		if g == nil || g.Samples == 0 {
			continue
		}
		fmt.Fprintf(w, "   GPUUsage[%s]=util:mean=%.0f%%,peak=%.0f%% mem:mean=%dM,peak=%dM samples=%d\n",
			t.Node, g.MeanUtil*100, g.PeakUtil*100, g.MeanMemBytes>>20, g.PeakMemBytes>>20, g.Samples)
	}
}

// PrintResizes writes an elastic job's size changes after PrintJob's
// fields, one line each in the same style (`shoal job`; scontrol has only
// the last, ResizeTime=): when, grow or shrink, the node, the node count
// after.
func PrintResizes(w io.Writer, j api.Job) {
	for _, r := range j.Resizes {
		fmt.Fprintf(w, "   Resize=%s %s Node=%s NumNodes=%d\n", r.Time, r.Cause, r.Node, r.NumNodes)
	}
}
