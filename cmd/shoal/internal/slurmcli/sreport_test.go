package slurmcli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

// TestSreport: the reports' numbers and layout (Slurm 22.05's
// src/sreport: the header block, the widths sreport_set_usage_col_width
// gives, right alignment, the percentages), over hand-made jobs and
// nodes. Two nodes of 8 CPUs, 2 GPUs and 1000 MiB; a window of one hour.
func TestSreport(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 11, 25, 14, 10, 0, 0, loc)
	at := func(h, m int) string { return time.Date(2026, 11, 25, h, m, 0, 0, loc).Format(time.RFC3339) }
	nodes := []api.Node{
		{Name: "a", CPUs: 8, GPUs: 2, MemoryMiB: 1000, State: "IDLE"},
		{Name: "b", CPUs: 8, GPUs: 2, MemoryMiB: 1000, State: "DOWN"},
	}
	jobs := []api.Job{
		// alice/phys: 2 GPUs, 4 CPUs, 500 MiB for 30 minutes, half of it
		// before the window (12:45-13:15).
		{ID: 1, User: "alice", Account: "phys", StartTime: at(12, 45), EndTime: at(13, 15),
			Tasks: []api.Task{{Node: "a", GPUs: []int{0, 1}, CPUs: "0-3", MemMiB: 500}}},
		// bob/chem: 1 GPU, 2 CPUs on each node, 13:00-13:30.
		{ID: 2, User: "bob", Account: "chem", StartTime: at(13, 0), EndTime: at(13, 30),
			Tasks: []api.Task{{Node: "a", GPUs: []int{0}, CPUs: "4-5"}, {Node: "b", GPUs: []int{0}, CPUs: "0-1"}}},
		// Never started; and one after the window.
		{ID: 3, User: "carol", Account: "phys"},
		{ID: 4, User: "carol", Account: "phys", StartTime: at(14, 0), EndTime: at(14, 5),
			Tasks: []api.Task{{Node: "a", GPUs: []int{0}, CPUs: "0"}}},
		// Running since 14:08 (now is 14:10).
		{ID: 5, User: "dave", Account: "phys", StartTime: at(14, 8),
			Tasks: []api.Task{{Node: "b", CPUs: "2"}}},
	}
	run := func(args ...string) string {
		t.Helper()
		var vals []slurm.OptValue
		rest, err := slurm.Getopt(sreportOpts, args, slurm.Permute, func(v slurm.OptValue) error {
			vals = append(vals, v)
			return nil
		})
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		a, err := sreportOptions(vals, "")
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if a.report, err = parseSreportCommand(rest, now); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		var b bytes.Buffer
		in := sreportInput{cluster: "shoal", jobs: jobs, nodes: nodes, now: now,
			proper: func(l string) string { return map[string]string{"alice": "Alice A"}[l] }}
		if err := renderSreport(&b, a, in); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return b.String()
	}
	dashes := strings.Repeat("-", 80)
	const win = "start=2026-11-25T13:00 end=2026-11-25T14:00"
	for _, tc := range []struct {
		args string
		want string
	}{{
		// cpu: 16 CPUs × 3600 s = 57600 reported; alice 4×900, bob 4×1800.
		args: "cluster utilization " + win,
		want: dashes + "\nCluster Utilization 2026-11-25T13:00:00 - 2026-11-25T13:59:59\nUsage reported in CPU Minutes\n" + dashes + "\n" +
			"  Cluster Allocate     Down PLND Dow     Idle  Planned Reported \n" +
			"--------- -------- -------- -------- -------- -------- -------- \n" +
			"    shoal      180        0        0      780        0      960 \n",
	}, {
		args: "-T gres/gpu,cpu -t Seconds cluster Utilization " + win,
		want: dashes + "\nCluster Utilization 2026-11-25T13:00:00 - 2026-11-25T13:59:59\nUsage reported in TRES Seconds\n" + dashes + "\n" +
			"  Cluster      TRES Name Allocate     Down PLND Dow     Idle  Planned Reported \n" +
			"--------- -------------- -------- -------- -------- -------- -------- -------- \n" +
			"    shoal       gres/gpu     5400        0        0     9000        0    14400 \n" +
			"    shoal            cpu    10800        0        0    46800        0    57600 \n",
	}, {
		// The percentage widens each usage column by 9; -n leaves out
		// the column headers too.
		args: "-t hourper -n cluster ut format=Cl,al,rep,TresCount " + win,
		want: "    shoal         3(18.75%)       16(100.00%)         16 \n",
	}, {
		args: "-t hourper cluster ut format=al " + win,
		want: dashes + "\nCluster Utilization 2026-11-25T13:00:00 - 2026-11-25T13:59:59\nUsage reported in CPU Hours/Percentage of Total\n" + dashes + "\n" +
			"        Allocated \n----------------- \n        3(18.75%) \n",
	}, {
		args: "-t Percent -P -n cluster utilization format=al,i " + win,
		want: "18.75%|81.25%\n",
	}, {
		args: "-T mem -t Minutes/Percent -p -n cluster utilization format=al " + win,
		want: "7500(6.25%)|\n",
	}, {
		// Over 10^8 TRES-seconds the column widens.
		args: "-T mem -t Seconds -n cluster utilization format=rep start=2026-11-24T13:00 end=2026-11-25T14:00",
		want: "180000000 \n",
	}, {
		// A window reaching past now: its time up to now is counted
		// (16 CPUs × 70 minutes), and the running job's up to now.
		args: "-t Seconds -P -n cluster utilization format=al,i,rep start=2026-11-25T13:00 end=2026-11-25T15:00",
		want: "11220|55980|67200\n",
	}, {
		args: "user top " + win,
		want: dashes + "\nTop 10 Users 2026-11-25T13:00:00 - 2026-11-25T13:59:59 (3600 secs)\nUsage reported in CPU Minutes\n" + dashes + "\n" +
			"  Cluster     Login     Proper Name         Account     Used   Energy \n" +
			"--------- --------- --------------- --------------- -------- -------- \n" +
			"    shoal       bob                            chem      120        0 \n" +
			"    shoal     alice         Alice A            phys       60        0 \n",
	}, {
		// Sorted by the first TRES (GPU-seconds: alice 2×900, bob
		// 2×1800); TopCount keeps one.
		args: "-T gres/gpu -t SecPer -P user TopUsage TopCount=1 " + win,
		want: dashes + "\nTop 1 Users 2026-11-25T13:00:00 - 2026-11-25T13:59:59 (3600 secs)\nUsage reported in TRES Seconds/Percentage of Total\n" + dashes + "\n" +
			"Cluster|Login|Proper Name|Account|TRES Name|Used\n" +
			"shoal|bob||chem|gres/gpu|3600(25.00%)\n",
	}, {
		args: "-n user top Users=alice format=Login,Used%4 " + win,
		want: "    alice       60 \n",
	}} {
		if got := run(strings.Fields(tc.args)...); got != tc.want {
			t.Errorf("sreport %s:\n%s\nwant:\n%s", tc.args, got, tc.want)
		}
	}
}

// TestSreportWindow: slurmdb_report_set_start_end_time's defaults and
// rounding (an end after now is kept: see sreportWindow).
func TestSreportWindow(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 11, 25, 14, 10, 0, 0, loc)
	d := func(h, m, s int) time.Time { return time.Date(2026, 11, 25, h, m, s, 0, loc) }
	for _, tc := range []struct {
		start, end, wantStart, wantEnd time.Time
	}{
		{time.Time{}, time.Time{}, d(-24, 0, 0), d(0, 0, 0)},
		{d(12, 29, 29), d(13, 29, 30), d(12, 0, 0), d(14, 0, 0)},
		{d(13, 10, 0), d(15, 10, 0), d(13, 0, 0), d(15, 0, 0)},
		{d(14, 0, 0), d(14, 5, 0), d(14, 0, 0), d(15, 0, 0)}, // an hour at least
	} {
		s, e := sreportWindow(tc.start, tc.end, now)
		if !s.Equal(tc.wantStart) || !e.Equal(tc.wantEnd) {
			t.Errorf("window(%v, %v) = %v, %v; want %v, %v", tc.start, tc.end, s, e, tc.wantStart, tc.wantEnd)
		}
	}
}

// TestSreportRefusals: what sreport refuses names the bad word.
func TestSreportRefusals(t *testing.T) {
	now := time.Date(2026, 11, 25, 14, 10, 0, 0, time.UTC)
	for _, args := range [][]string{
		{"job", "sizes"}, {"cluster"}, {"cluster", "utilization", "bogus=1"},
		{"user", "top", "TopCount=x"}, {"cluster", "utilization", "start=yesterdayish"},
	} {
		if _, err := parseSreportCommand(args, now); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	if _, _, err := parseSreportTime("fortnights"); err == nil {
		t.Error("-t fortnights: no error")
	}
	if _, err := parseSreportTRES("billing"); err == nil {
		t.Error("-T billing: no error")
	}
	if got, err := parseSreportTRES("ALL"); err != nil || len(got) != 3 {
		t.Errorf("-T ALL = %q, %v", got, err)
	}
}

// FuzzSreport: sreport's report words, conditions, -t and -T take any
// input without panicking, and what they accept prints.
func FuzzSreport(f *testing.F) {
	for _, s := range []string{"cluster utilization start=now-1hours end=now format=Cl,al%3,TresC", "user top TopCount=2 format=L,U%40,Energy Users=a,b", "u t acct=x start=0101", "cl ut format=rep%-9"} {
		f.Add(s, "hourper", "ALL")
	}
	now := time.Date(2026, 11, 25, 14, 10, 0, 0, time.UTC)
	jobs := []api.Job{{User: "a", Account: "x", StartTime: now.Add(-time.Hour).Format(time.RFC3339),
		Tasks: []api.Task{{Node: "n", GPUs: []int{0}, CPUs: "0-1", MemMiB: 10}}}}
	nodes := []api.Node{{Name: "n", CPUs: 4, GPUs: 1, MemoryMiB: 100}}
	f.Fuzz(func(t *testing.T, words, tf, tres string) {
		a := sreportArgs{time: sreportMins, timeWords: "Minutes", tres: []string{"cpu"}, layout: sacctLayout{header: true, delimiter: "|"}}
		var err error
		if a.time, a.timeWords, err = parseSreportTime(tf); err != nil {
			a.time, a.timeWords = sreportMins, "Minutes"
		}
		if got, err := parseSreportTRES(tres); err == nil {
			a.tres, a.tresGiven = got, true
		}
		if a.report, err = parseSreportCommand(strings.Fields(words), now); err != nil {
			return
		}
		for _, w := range a.report.format {
			if _, n, ok := strings.Cut(w, "%"); ok && len(n) > 3 {
				return // a huge width prints, slowly
			}
		}
		var b bytes.Buffer
		_ = renderSreport(&b, a, sreportInput{cluster: "shoal", jobs: jobs, nodes: nodes, now: now})
	})
}
