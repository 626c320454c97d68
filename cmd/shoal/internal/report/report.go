// Package report computes `shoal report`: what the cluster's GPUs did
// over a period, from the job records the API returns (live and
// archived). Compute is pure: the records, the period and the clock come
// in, the report comes out; the command only fetches and prints.
package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// IdleThreshold is the utilization under which a job that held GPUs for
// its whole run is flagged: its peak, on every node that sampled it.
const IdleThreshold = 0.10

// Report is what the cluster's GPUs did from Start to End.
type Report struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// GPUHours is every job's GPUs times the part of its run inside the
	// period.
	GPUHours float64 `json:"gpu_hours"`
	// Utilization is the mean utilization of the allocated GPUs, weighted
	// by GPU-hours, over the jobs whose GPUs were sampled; SampledGPUHours
	// is the GPU-hours it covers.
	Utilization     float64 `json:"utilization"`
	SampledGPUHours float64 `json:"sampled_gpu_hours"`
	Users           []Usage `json:"users"`
	Accounts        []Usage `json:"accounts"`
	// Wait is the queue wait (start minus submit) of the jobs that
	// started in the period.
	Wait WaitStats `json:"wait"`
	// States counts the jobs that ended in the period by final state.
	States map[string]int `json:"states"`
	// Idle lists the jobs that held GPUs at under IdleThreshold for their
	// whole run (peak, on every node sampled), ended or running.
	Idle []IdleJob `json:"idle"`
}

// Usage is one user's or account's share.
type Usage struct {
	Name        string  `json:"name"`
	GPUHours    float64 `json:"gpu_hours"`
	Jobs        int     `json:"jobs"`
	Utilization float64 `json:"utilization"` // -1: none of its GPUs sampled
}

// WaitStats are percentiles of the queue wait, in seconds.
type WaitStats struct {
	Jobs int     `json:"jobs"`
	P50  float64 `json:"p50_s"`
	P90  float64 `json:"p90_s"`
	P99  float64 `json:"p99_s"`
	Max  float64 `json:"max_s"`
}

// IdleJob is a job flagged for leaving its GPUs idle.
type IdleJob struct {
	ID       string  `json:"id"`
	User     string  `json:"user"`
	Name     string  `json:"name"`
	State    string  `json:"state"`
	GPUs     int     `json:"gpus"`
	GPUHours float64 `json:"gpu_hours"`
	MeanUtil float64 `json:"mean_util"`
	PeakUtil float64 `json:"peak_util"`
}

// acc sums one user's or account's GPU-hours and sampled utilization.
type acc struct {
	gpuHours, sampledHours, utilHours float64
	jobs                              int
}

// Compute reports on jobs from start to end; now ends the runs still
// going. Jobs whose times do not parse are skipped (the API writes
// RFC 3339).
func Compute(jobs []api.Job, start, end, now time.Time) Report {
	r := Report{Start: start, End: end, States: map[string]int{}}
	users, accounts := map[string]*acc{}, map[string]*acc{}
	var waits []float64
	var utilHours float64
	for _, j := range jobs {
		submit, _ := parse(j.SubmitTime)
		started, okStart := parse(j.StartTime)
		ended, okEnd := parse(j.EndTime)
		if okEnd && !ended.Before(start) && ended.Before(end) && cluster.JobState(j.State).Terminal() {
			r.States[j.State]++
		}
		if !okStart {
			continue
		}
		if !started.Before(start) && started.Before(end) && !submit.IsZero() {
			waits = append(waits, started.Sub(submit).Seconds())
		}
		runEnd := now
		if okEnd {
			runEnd = ended
		}
		from, to := started, runEnd
		if from.Before(start) {
			from = start
		}
		if to.After(end) {
			to = end
		}
		overlap := to.Sub(from)
		gpus := 0
		for _, t := range j.Tasks {
			gpus += len(t.GPUs)
		}
		if overlap <= 0 || gpus == 0 {
			continue
		}
		hours := overlap.Hours() * float64(gpus)
		r.GPUHours += hours
		mean, peak, sampled, all := jobUtil(j)
		for _, a := range []*acc{get(users, j.User), get(accounts, cmp.Or(j.Account, "(none)"))} {
			a.gpuHours += hours
			a.jobs++
			if sampled > 0 {
				a.sampledHours += hours * sampled
				a.utilHours += hours * sampled * mean
			}
		}
		if sampled > 0 {
			r.SampledGPUHours += hours * sampled
			utilHours += hours * sampled * mean
		}
		if all && peak < IdleThreshold {
			r.Idle = append(r.Idle, IdleJob{ID: cmp.Or(j.JobIDString, fmt.Sprint(j.ID)), User: j.User, Name: j.Name,
				State: j.State, GPUs: gpus, GPUHours: hours, MeanUtil: mean, PeakUtil: peak})
		}
	}
	if r.SampledGPUHours > 0 {
		r.Utilization = utilHours / r.SampledGPUHours
	}
	r.Users, r.Accounts = ranked(users), ranked(accounts)
	r.Wait = waitStats(waits)
	slices.SortFunc(r.Idle, func(a, b IdleJob) int { return cmp.Compare(b.GPUHours, a.GPUHours) })
	return r
}

// jobUtil is a job's GPU utilization over its sampled nodes, weighted by
// their GPUs: the mean, the highest peak, the share of its GPUs sampled,
// and whether all were.
func jobUtil(j api.Job) (mean, peak, sampled float64, all bool) {
	var gpus, sampledGPUs int
	for _, t := range j.Tasks {
		gpus += len(t.GPUs)
		if g := t.GPUUsage; g != nil && g.Samples > 0 && len(t.GPUs) > 0 {
			sampledGPUs += len(t.GPUs)
			mean += g.MeanUtil * float64(len(t.GPUs))
			peak = max(peak, g.PeakUtil)
		}
	}
	if sampledGPUs == 0 {
		return 0, 0, 0, false
	}
	return mean / float64(sampledGPUs), peak, float64(sampledGPUs) / float64(gpus), sampledGPUs == gpus
}

func get(m map[string]*acc, k string) *acc {
	if m[k] == nil {
		m[k] = &acc{}
	}
	return m[k]
}

// ranked lists the shares by GPU-hours, most first.
func ranked(m map[string]*acc) []Usage {
	out := []Usage{}
	for name, a := range m {
		u := Usage{Name: name, GPUHours: a.gpuHours, Jobs: a.jobs, Utilization: -1}
		if a.sampledHours > 0 {
			u.Utilization = a.utilHours / a.sampledHours
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Usage) int {
		return cmp.Or(cmp.Compare(b.GPUHours, a.GPUHours), strings.Compare(a.Name, b.Name))
	})
	return out
}

// waitStats takes nearest-rank percentiles.
func waitStats(w []float64) WaitStats {
	if len(w) == 0 {
		return WaitStats{}
	}
	slices.Sort(w)
	rank := func(p float64) float64 {
		i := int(p*float64(len(w))+0.999999) - 1
		return w[min(max(i, 0), len(w)-1)]
	}
	return WaitStats{Jobs: len(w), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: w[len(w)-1]}
}

func parse(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// Print writes the report for people.
func Print(w io.Writer, r Report) {
	fmt.Fprintf(w, "GPU usage %s to %s\n", r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  GPU-hours allocated: %.2f\n", r.GPUHours)
	if r.SampledGPUHours > 0 {
		fmt.Fprintf(w, "  utilization of allocated GPUs: %.1f%% (over %.2f sampled GPU-hours)\n", 100*r.Utilization, r.SampledGPUHours)
	} else {
		fmt.Fprintf(w, "  utilization of allocated GPUs: not sampled\n")
	}
	fmt.Fprintf(w, "  queue wait of %d started jobs: p50 %s, p90 %s, p99 %s, max %s\n", r.Wait.Jobs,
		secs(r.Wait.P50), secs(r.Wait.P90), secs(r.Wait.P99), secs(r.Wait.Max))
	states := slices.Sorted(maps.Keys(r.States))
	var parts []string
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s %d", s, r.States[s]))
	}
	fmt.Fprintf(w, "  jobs ended: %s\n", cmp.Or(strings.Join(parts, ", "), "none"))
	for _, sec := range []struct {
		title string
		rows  []Usage
	}{{"USER", r.Users}, {"ACCOUNT", r.Accounts}} {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\tGPU-HOURS\tJOBS\tUTILIZATION\n", sec.title)
		for _, u := range sec.rows {
			fmt.Fprintf(tw, "%s\t%.2f\t%d\t%s\n", u.Name, u.GPUHours, u.Jobs, pct(u.Utilization))
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	if len(r.Idle) == 0 {
		fmt.Fprintf(w, "No job held its GPUs under %.0f%% for its whole run.\n", 100*IdleThreshold)
		return
	}
	fmt.Fprintf(w, "Jobs that held GPUs under %.0f%% for their whole run (peak on every node):\n", 100*IdleThreshold)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "JOBID\tUSER\tNAME\tSTATE\tGPUS\tGPU-HOURS\tMEAN\tPEAK\n")
	for _, j := range r.Idle {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%.2f\t%s\t%s\n", j.ID, j.User, j.Name, j.State, j.GPUs, j.GPUHours, pct(j.MeanUtil), pct(j.PeakUtil))
	}
	tw.Flush()
}

func pct(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}
