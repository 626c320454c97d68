package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func at(h float64) string { return api.FormatTime(t0.Add(time.Duration(h * float64(time.Hour)))) }

func task(node string, gpus int, g *cluster.GPUUsage) api.Task {
	t := api.Task{Node: node, GPUUsage: g}
	for i := range gpus {
		t.GPUs = append(t.GPUs, i)
	}
	return t
}

func TestCompute(t *testing.T) {
	busy := &cluster.GPUUsage{Samples: 10, MeanUtil: 0.8, PeakUtil: 1}
	idle := &cluster.GPUUsage{Samples: 10, MeanUtil: 0.02, PeakUtil: 0.05}
	jobs := []api.Job{
		// 2 nodes x 4 GPUs for 2 h inside the period, busy: 16 GPU-hours.
		{ID: 1, User: "ada", Account: "ml", State: "COMPLETED", SubmitTime: at(0.5), StartTime: at(1), EndTime: at(3),
			Tasks: []api.Task{task("n1", 4, busy), task("n2", 4, busy)}},
		// 1 GPU for 4 h, 2 of them before the period: 2 GPU-hours, idle.
		{ID: 2, User: "bob", State: "FAILED", SubmitTime: at(-3), StartTime: at(-2), EndTime: at(2),
			Tasks: []api.Task{task("n3", 1, idle)}},
		// Still running at now (hour 5), unsampled: 2 GPUs x 1 h.
		{ID: 3, User: "ada", Account: "ml", State: "RUNNING", SubmitTime: at(3.5), StartTime: at(4),
			Tasks: []api.Task{task("n1", 2, nil)}},
		// Pending: nothing.
		{ID: 4, User: "bob", State: "PENDING", SubmitTime: at(4)},
		// Idle on one node, unsampled on the other: not flagged.
		{ID: 5, User: "cy", State: "CANCELLED", SubmitTime: at(1), StartTime: at(1), EndTime: at(2),
			Tasks: []api.Task{task("n4", 1, idle), task("n5", 1, nil)}},
	}
	r := Compute(jobs, t0, t0.Add(6*time.Hour), t0.Add(5*time.Hour))
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("GPU-hours", r.GPUHours, 16+2+2+2)
	// Sampled: job 1's 16 at 0.8, job 2's 2 at 0.02, job 5's sampled half (1) at 0.02.
	near("sampled GPU-hours", r.SampledGPUHours, 19)
	near("utilization", r.Utilization, (16*0.8+2*0.02+1*0.02)/19)
	if len(r.Users) != 3 || r.Users[0].Name != "ada" || r.Users[0].Jobs != 2 {
		t.Errorf("users = %+v; want ada first with 2 jobs", r.Users)
	}
	near("ada's GPU-hours", r.Users[0].GPUHours, 18)
	near("ada's utilization", r.Users[0].Utilization, 0.8)
	if r.Accounts[0].Name != "ml" || r.Accounts[1].Name != "(none)" {
		t.Errorf("accounts = %+v; want ml, then (none)", r.Accounts)
	}
	// Started in the period: jobs 1 (0.5 h), 3 (0.5 h), 5 (0 h).
	if r.Wait.Jobs != 3 || r.Wait.P50 != 1800 || r.Wait.Max != 1800 {
		t.Errorf("wait = %+v; want 3 jobs, p50 and max 30 min", r.Wait)
	}
	if want := map[string]int{"COMPLETED": 1, "FAILED": 1, "CANCELLED": 1}; len(r.States) != 3 ||
		r.States["COMPLETED"] != 1 || r.States["FAILED"] != 1 || r.States["CANCELLED"] != 1 {
		t.Errorf("states = %v; want %v", r.States, want)
	}
	if len(r.Idle) != 1 || r.Idle[0].ID != "2" || r.Idle[0].PeakUtil != 0.05 {
		t.Errorf("idle = %+v; want job 2 only", r.Idle)
	}
	var b bytes.Buffer
	Print(&b, r)
	for _, want := range []string{"GPU-hours allocated: 22.00", "utilization of allocated GPUs: 67.7%", "ada", "(none)", "FAILED 1", "under 10%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestComputeEmpty(t *testing.T) {
	r := Compute(nil, t0, t0.Add(time.Hour), t0.Add(time.Hour))
	if r.GPUHours != 0 || r.Wait.Jobs != 0 || len(r.Idle) != 0 || r.Users == nil {
		t.Errorf("empty report = %+v", r)
	}
	var b bytes.Buffer
	Print(&b, r)
	if !strings.Contains(b.String(), "not sampled") {
		t.Errorf("empty report printed:\n%s", b.String())
	}
}
