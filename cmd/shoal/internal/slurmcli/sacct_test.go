package slurmcli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

func TestSacctFormats(t *testing.T) {
	jobs := testJobs()
	render := func(format string, jobsOnly bool, l sacctLayout) string {
		cols, err := parseSacctFormat(format)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		printSacct(&b, cols, sacctRows(jobs[2:], jobsOnly, false), testView, l)
		return b.String()
	}
	aligned := sacctLayout{header: true}
	for _, tc := range []struct {
		name, format string
		jobsOnly     bool
		layout       sacctLayout
		want         string
	}{
		{"default", sacctDefaultFormat, false, aligned, "" +
			"JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n" +
			"------------ ---------- ---------- ---------- ---------- ---------- -------- \n" +
			"3                 train      shoal                     4  COMPLETED      0:0 \n" +
			"3.batch           batch                                2  COMPLETED      0:0 \n" +
			"3.0            torchrun                                4  COMPLETED      0:0 \n" +
			"3.1                  sh                                1     FAILED      3:0 \n" +
			"4                  oops      shoal                     8     FAILED      0:9 \n"},
		{"parsable2 -X", "JobID,State,ExitCode", true, sacctLayout{parsable: true, delimiter: "|", header: true}, "" +
			"JobID|State|ExitCode\n" +
			"3|COMPLETED|0:0\n" +
			"4|FAILED|0:9\n"},
		{"parsable, no header", "JobID,JobName,NNodes,NodeList", false, sacctLayout{parsable: true, delimiter: "|", trailing: true}, "" +
			"3|train|2|n[3-4]|\n" +
			"3.batch|batch|1|n3|\n" +
			"3.0|torchrun|2|n[3-4]|\n" +
			"3.1|sh|1|n3|\n" +
			"4|oops|1|n1|\n"},
		{"times and widths", "JobID%-6,JobName%4,Elapsed,Start,End,User", true, aligned, "" +
			"JobID  JobN    Elapsed               Start                 End      User \n" +
			"------ ---- ---------- ------------------- ------------------- --------- \n" +
			"3      tra+   00:05:00 2026-11-22T01:00:01 2026-11-22T01:05:01       ada \n" +
			"4      oops   00:01:00 2026-11-22T00:59:00 2026-11-22T01:00:00       ada \n"},
		{"tres", "JobID,AllocTRES%30,Timelimit", true, sacctLayout{parsable: true, delimiter: "|"}, "" +
			"3|cpu=4,node=2|UNLIMITED\n" +
			"4|cpu=8,node=1|UNLIMITED\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(tc.format, tc.jobsOnly, tc.layout); got != tc.want {
				t.Errorf("sacct --format %s:\n%s\nwant:\n%s", tc.format, got, tc.want)
			}
		})
	}
	// A pending job: no start, no nodes, no CPUs yet.
	cols, _ := parseSacctFormat("JobID,State,Start,End,NodeList,AllocCPUS,NNodes,Elapsed")
	var b bytes.Buffer
	printSacct(&b, cols, sacctRows(jobs[1:2], false, false), testView, sacctLayout{parsable: true, delimiter: "|"})
	if want := "2|PENDING|Unknown|Unknown|None assigned|0|4|00:00:00\n"; b.String() != want {
		t.Errorf("pending job row = %q; want %q", b.String(), want)
	}
	if _, err := parseSacctFormat("JobID,VMSizeMax"); err == nil || !strings.Contains(err.Error(), "Invalid field requested") {
		t.Errorf("--format VMSizeMax: err %v; want Invalid field requested", err)
	}
}

func TestSacctExitCode(t *testing.T) {
	for code, want := range map[int]string{0: "0:0", 1: "1:0", 128: "128:0", 137: "0:9", 143: "0:15", 255: "255:0"} {
		if got := sacctExitCode(code); got != want {
			t.Errorf("sacctExitCode(%d) = %s; want %s", code, got, want)
		}
	}
}

// TestSacctElapsed: sacct's Elapsed is FormatHMS but never INVALID (a
// clock step shows as zero).
func TestSacctElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Hour: "00:00:00", -time.Millisecond: "00:00:00", 0: "00:00:00",
		61 * time.Second: "00:01:01", 25*time.Hour + 1500*time.Millisecond: "1-01:00:01",
	} {
		if got := sacctElapsed(d); got != want {
			t.Errorf("sacctElapsed(%v) = %s; want %s", d, got, want)
		}
	}
}

// TestSacctUsage: the usage the nodes' cgroups counted, in sacct's
// formats: sizes as convert_num_unit writes them, CPU times as
// _elapsed_time does, the allocation's CPUs, memory and GPUs.
func TestSacctUsage(t *testing.T) {
	u := func(maxRSS, aveRSS uint64, user, sys time.Duration) *cluster.Usage {
		return &cluster.Usage{MaxRSS: maxRSS, AveRSS: aveRSS, UserCPU: user, SystemCPU: sys}
	}
	jobs := []api.Job{
		// A batch job on two nodes with 4 CPUs and 4 GiB each; its script
		// on n3, one step on both.
		{ID: 3, Name: "train", State: "COMPLETED", NumNodes: 2, Nodes: []string{"n3", "n4"}, TasksPerNode: 2, CPUsPerTask: 1,
			GPUsPerNode: 2, Batch: true, StartTime: "2026-11-22T01:00:01Z", EndTime: "2026-11-22T01:05:01Z",
			Tasks: []api.Task{
				{Node: "n3", CPUs: "0-3", MemMiB: 4096, Usage: u(68214784, 60000000, 1234*time.Millisecond, 10*time.Millisecond)},
				{Node: "n4", CPUs: "4-7", MemMiB: 4096, Usage: u(1<<20, 1<<20, 0, 0)},
			},
			Steps: []api.Step{{ID: 0, Name: "torchrun", State: "COMPLETED", Nodes: []string{"n3", "n4"}, NTasks: 4,
				Usage: map[string]cluster.Usage{
					"n3": *u(2<<30, 1<<30, 2*time.Hour+3*time.Second, 5*time.Second),
					"n4": *u(3<<29, 1<<29, time.Hour, 0),
				}}}},
		// A job of its own tasks with no cgroup accounting and no CPUs in
		// its allocation (an older agent).
		{ID: 4, Name: "old", State: "FAILED", ExitCode: 1, NumNodes: 1, Nodes: []string{"n1"}, TasksPerNode: 1, CPUsPerTask: 8,
			MemPerNodeMiB: 1000, StartTime: "2026-11-22T00:59:00Z", EndTime: "2026-11-22T01:00:00Z",
			Tasks: []api.Task{{Node: "n1"}}},
		// An OOM-killed job of its own tasks.
		{ID: 5, Name: "oom", State: "OUT_OF_MEMORY", ExitCode: 137, NumNodes: 1, Nodes: []string{"n1"}, TasksPerNode: 1,
			StartTime: "2026-11-22T00:59:00Z", EndTime: "2026-11-22T01:00:00Z",
			Tasks: []api.Task{{Node: "n1", CPUs: "2", MemMiB: 32, Usage: u(33554432, 0, 25*time.Hour, 0)}}},
	}
	cols, err := parseSacctFormat("JobID,MaxRSS,AveRSS,TotalCPU,UserCPU,SystemCPU,AllocCPUS,ReqMem,AllocTRES,TRESUsageInTot,State")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printSacct(&b, cols, sacctRows(jobs, false, false), testView, sacctLayout{parsable: true, delimiter: "|", header: true})
	want := "" +
		"JobID|MaxRSS|AveRSS|TotalCPU|UserCPU|SystemCPU|AllocCPUS|ReqMem|AllocTRES|TRESUsageInTot|State\n" +
		"3|||03:00:09|03:00:04|00:05.010|8|4G|cpu=8,gres/gpu=4,mem=8G,node=2||COMPLETED\n" +
		"3.batch|66616K|58593K|00:01.244|00:01.234|00:00.010|4|4G|cpu=4,gres/gpu=2,mem=4G,node=1|cpu=00:00:01,mem=66616K|COMPLETED\n" +
		"3.0|2G|768M|03:00:08|03:00:03|00:00:05|4|4G|cpu=4,gres/gpu=4,mem=8G,node=2|cpu=03:00:08,mem=3.50G|COMPLETED\n" +
		"4||||||8|1000M|cpu=8,mem=1000M,node=1||FAILED\n" +
		"5|32M|0|1-01:00:00|1-01:00:00|00:00:00|1|32M|cpu=1,mem=32M,node=1|cpu=1-01:00:00,mem=32M|OUT_OF_MEMORY\n"
	if got := b.String(); got != want {
		t.Errorf("sacct usage:\n%s\nwant:\n%s", got, want)
	}
	for _, tc := range []struct {
		v    uint64
		unit int
		want string
	}{{0, unitNone, "0"}, {1023, unitNone, "1023"}, {1024, unitNone, "1K"}, {1536 << 10, unitNone, "1.50M"},
		{1234 << 10, unitNone, "1234K"}, {1024, unitMega, "1G"}, {8000, unitMega, "8000M"}} {
		if got := sacctUnits(tc.v, tc.unit, unitNone); got != tc.want {
			t.Errorf("sacctUnits(%d, %d) = %q; want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

// TestSacctSelect: -A, -s and the -S/-E window with Slurm's defaults
// (slurmdb_job_cond_def_start_end).
func TestSacctSelect(t *testing.T) {
	jobs := testJobs() // 1 running, 2 pending, 3 and 4 ended around 01:00
	jobs[2].Account, jobs[3].Account = "physics", "bio"
	jobs[3].QoS = "high"
	now := testView.now // 2026-11-22T02:10Z
	at := func(s string) time.Time {
		d, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name             string
		q                sacctQuery
		startSet, endSet bool
		want             []uint64
	}{
		{"today", sacctQuery{}, false, false, []uint64{1, 2, 3, 4}},
		{"-A physics", sacctQuery{jobFilter: jobFilter{accounts: []string{"physics"}}}, false, false, []uint64{3}},
		{"-A physics,bio", sacctQuery{jobFilter: jobFilter{accounts: []string{"physics", "bio"}}}, false, false, []uint64{3, 4}},
		{"-q high", sacctQuery{jobFilter: jobFilter{qos: []string{"high"}}}, false, false, []uint64{4}},
		{"-S 01:02", sacctQuery{start: at("2026-11-22T01:02:00Z")}, true, false, []uint64{1, 2, 3}},
		{"-S 00:00 -E 00:59:30", sacctQuery{start: at("2026-11-22T00:00:00Z"), end: at("2026-11-22T00:59:30Z")}, true, true, []uint64{4}},
		// -s alone: jobs in the state now.
		{"-s R", sacctQuery{states: map[string]bool{"RUNNING": true}}, false, false, []uint64{1}},
		{"-s CD,F", sacctQuery{states: map[string]bool{"COMPLETED": true, "FAILED": true}}, false, false, []uint64{3, 4}},
		// -s with a window: in the state at some time in it.
		{"-s CD -S 00:00 -E 01:00", sacctQuery{states: map[string]bool{"COMPLETED": true}, start: at("2026-11-22T00:00:00Z"), end: at("2026-11-22T01:00:00Z")}, true, true, nil},
		{"-s F -S 00:00 -E 01:00", sacctQuery{states: map[string]bool{"FAILED": true}, start: at("2026-11-22T00:00:00Z"), end: at("2026-11-22T01:00:00Z")}, true, true, []uint64{4}},
		{"-s PD -S 02:09:39", sacctQuery{states: map[string]bool{"PENDING": true}, start: at("2026-11-22T02:09:39Z")}, true, false, nil},
		{"-s PD -S 02:09:39 -E now", sacctQuery{states: map[string]bool{"PENDING": true}, start: at("2026-11-22T02:09:39Z"), end: now}, true, true, []uint64{2}},
		// -j: whenever it ran, unless -S is given.
		{"-j 3 -S 02:00", sacctQuery{ids: []jobSel{{id: 3, task: -1}}, start: at("2026-11-22T02:00:00Z")}, true, false, nil},
		{"-j 3,4", sacctQuery{ids: []jobSel{{id: 3, task: -1}, {id: 4, task: -1}}}, false, false, []uint64{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.startSet = tc.startSet
			sacctWindow(&q, tc.endSet, now)
			var got []uint64
			for _, j := range jobs {
				if q.match(j) {
					got = append(got, j.ID)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("jobs %v; want %v (window %v to %v)", got, tc.want, q.start, q.end)
			}
		})
	}
}

// TestSacctUnits: --units scales memory to one unit, as convert_num_unit
// with a spec_type.
func TestSacctUnits(t *testing.T) {
	for _, tc := range []struct {
		units   string
		v       uint64
		unit    int
		want    string
		wantErr bool
	}{
		{"M", 66616, unitKilo, "65.05M", false},
		{"k", 66616, unitKilo, "66616K", false},
		{"G", 4096, unitMega, "4G", false},
		{"G", 1000, unitMega, "0.98G", false},
		{"K", 4, unitMega, "4096K", false},
		{"M", 0, unitKilo, "0", false},
		{"X", 0, 0, "", true},
		{"", 0, 0, "", true},
	} {
		spec, err := parseUnits(tc.units)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseUnits(%q): err %v", tc.units, err)
			continue
		}
		if err == nil {
			if got := sacctUnits(tc.v, tc.unit, spec); got != tc.want {
				t.Errorf("--units=%s: sacctUnits(%d, %d) = %q; want %q", tc.units, tc.v, tc.unit, got, tc.want)
			}
		}
	}
}
