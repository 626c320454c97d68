package slurmcli

import (
	"bytes"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

func TestGPUUsageOutputs(t *testing.T) {
	j := api.Job{ID: 5, Tasks: []api.Task{
		{Node: "n1", GPUUsage: &cluster.GPUUsage{Samples: 10, MeanUtil: 0.2, PeakUtil: 0.5, MeanMemBytes: 1 << 30, PeakMemBytes: 3 << 30}},
		{Node: "n2", GPUUsage: &cluster.GPUUsage{Samples: 10, MeanUtil: 0.6, PeakUtil: 0.9, MeanMemBytes: 3 << 30, PeakMemBytes: 4 << 30}},
		{Node: "n3"}, // not sampled: left out of the means
	}}
	for _, tc := range []struct {
		row  sacctRow
		peak bool
		want string
	}{
		{sacctRow{job: j}, false, "gres/gpumem=2048M,gres/gpuutil=40"},
		{sacctRow{job: j}, true, "gres/gpumem=4096M,gres/gpuutil=90"},
		{sacctRow{job: j, batch: true}, false, ""},
		{sacctRow{job: j, step: &api.Step{}}, true, ""},
		{sacctRow{job: api.Job{Tasks: []api.Task{{Node: "n1"}}}}, false, ""},
	} {
		if got := gpuTRES(tc.row, tc.peak); got != tc.want {
			t.Errorf("gpuTRES(batch %v, step %v, peak %v) = %q, want %q", tc.row.batch, tc.row.step != nil, tc.peak, got, tc.want)
		}
	}
	var b bytes.Buffer
	PrintGPUUsage(&b, j)
	want := "   GPUUsage[n1]=util:mean=20%,peak=50% mem:mean=1024M,peak=3072M samples=10\n" +
		"   GPUUsage[n2]=util:mean=60%,peak=90% mem:mean=3072M,peak=4096M samples=10\n"
	if b.String() != want {
		t.Errorf("PrintGPUUsage:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestPrintResizes(t *testing.T) {
	var b bytes.Buffer
	PrintResizes(&b, api.Job{Resizes: []api.Resize{
		{Time: "2026-11-25T10:00:00Z", Cause: "grow", Node: "n3", NumNodes: 3},
		{Time: "2026-11-25T10:05:00Z", Cause: "shrink", Node: "n2", NumNodes: 2},
	}})
	want := "   Resize=2026-11-25T10:00:00Z grow Node=n3 NumNodes=3\n   Resize=2026-11-25T10:05:00Z shrink Node=n2 NumNodes=2\n"
	if b.String() != want {
		t.Errorf("PrintResizes wrote\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	PrintResizes(&b, api.Job{})
	if b.Len() != 0 {
		t.Errorf("a job that never resized: %q; want nothing", b.String())
	}
}
