package main

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

var testView = slurmView{now: time.Date(2026, 11, 22, 2, 10, 0, 0, time.UTC), loc: time.UTC}

// testJobs: a running 2-node job with a limit, a pending one, a finished
// batch job with two steps, a failed one.
func testJobs() []api.Job {
	return []api.Job{
		{ID: 1, Name: "longname_training_job", User: "ada", State: "RUNNING", NumNodes: 2, Nodes: []string{"n1", "n2"},
			TasksPerNode: 2, CPUsPerTask: 1, GPUsPerNode: 4, TimeLimitS: 600,
			SubmitTime: "2026-11-22T02:09:37Z", StartTime: "2026-11-22T02:09:38Z"},
		{ID: 2, Name: "pend", User: "bob", State: "PENDING", Reason: "Resources", NumNodes: 4, TasksPerNode: 1, CPUsPerTask: 1,
			SubmitTime: "2026-11-22T02:09:40Z"},
		{ID: 3, Name: "train", User: "ada", State: "COMPLETED", NumNodes: 2, Nodes: []string{"n3", "n4"}, TasksPerNode: 2, CPUsPerTask: 1,
			Batch: true, SubmitTime: "2026-11-22T01:00:00Z", StartTime: "2026-11-22T01:00:01Z", EndTime: "2026-11-22T01:05:01Z",
			Steps: []api.Step{
				{ID: 0, Name: "torchrun", State: "COMPLETED", Nodes: []string{"n3", "n4"}, NTasks: 4,
					StartTime: "2026-11-22T01:00:02Z", EndTime: "2026-11-22T01:04:02Z"},
				{ID: 1, Name: "sh", State: "FAILED", ExitCode: 3, Nodes: []string{"n3"}, NTasks: 1,
					StartTime: "2026-11-22T01:04:03Z", EndTime: "2026-11-22T01:04:04Z"},
			}},
		{ID: 4, Name: "oops", User: "ada", State: "FAILED", ExitCode: 137, NumNodes: 1, Nodes: []string{"n1"}, TasksPerNode: 1, CPUsPerTask: 8,
			SubmitTime: "2026-11-22T00:59:00Z", StartTime: "2026-11-22T00:59:00Z", EndTime: "2026-11-22T01:00:00Z"},
	}
}

func renderSqueue(t *testing.T, format string, jobs []api.Job, header bool) string {
	t.Helper()
	cols, bad := parseSqueueFormat(format)
	if len(bad) > 0 {
		t.Fatalf("format %q: bad specs %v", format, bad)
	}
	var b bytes.Buffer
	printSqueue(&b, cols, jobs, testView, header)
	return b.String()
}

func TestSqueueFormats(t *testing.T) {
	jobs := testJobs()
	sortSqueue(jobs)
	for _, tc := range []struct {
		name, format string
		header       bool
		want         string
	}{
		{"default", squeueDefaultFormat, true, "" +
			"             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n" +
			"                 3     shoal    train      ada CD       5:00      2 n[3-4]\n" +
			"                 4     shoal     oops      ada  F       1:00      1 (NonZeroExitCode)\n" +
			"                 2     shoal     pend      bob PD       0:00      4 (Resources)\n" +
			"                 1     shoal longname      ada  R       0:22      2 n[1-2]\n"},
		{"brief widths", "%.6i %.9P %.8j %.8u %.2t %.10M %.6D %R", true, "" +
			" JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n" +
			"     3     shoal    train      ada CD       5:00      2 n[3-4]\n" +
			"     4     shoal     oops      ada  F       1:00      1 (NonZeroExitCode)\n" +
			"     2     shoal     pend      bob PD       0:00      4 (Resources)\n" +
			"     1     shoal longname      ada  R       0:22      2 n[1-2]\n"},
		{"ids only", "%i", false, "3\n4\n2\n1\n"},
		{"left widths and text", "%5j|%.10l|%T|%%", true, "" +
			"NAME |TIME_LIMIT|STATE|%\n" +
			"train| UNLIMITED|COMPLETED|%\n" +
			"oops | UNLIMITED|FAILED|%\n" +
			"pend | UNLIMITED|PENDING|%\n" +
			"longn|     10:00|RUNNING|%\n"},
		{"times and resources", "%i %V %S %e %L %C %b %N %r", true, "" +
			"JOBID SUBMIT_TIME START_TIME END_TIME TIME_LEFT CPUS TRES_PER_NODE NODELIST REASON\n" +
			"3 2026-11-22T01:00:00 2026-11-22T01:00:01 2026-11-22T01:05:01 UNLIMITED 4 N/A n[3-4] None\n" +
			"4 2026-11-22T00:59:00 2026-11-22T00:59:00 2026-11-22T01:00:00 UNLIMITED 8 N/A n1 NonZeroExitCode\n" +
			"2 2026-11-22T02:09:40 N/A N/A UNLIMITED 4 N/A  Resources\n" +
			"1 2026-11-22T02:09:37 2026-11-22T02:09:38 2026-11-22T02:19:38 9:38 4 gres:gpu:4 n[1-2] None\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderSqueue(t, tc.format, jobs, tc.header); got != tc.want {
				t.Errorf("squeue -o %q:\n%s\nwant:\n%s", tc.format, got, tc.want)
			}
		})
	}
}

// TestSqueueFormatBadSpec: like squeue, an unknown specification is
// reported and printed as text.
func TestSqueueFormatBadSpec(t *testing.T) {
	cols, bad := parseSqueueFormat("%i %-5j")
	if len(bad) != 1 || bad[0] != "-" {
		t.Fatalf("bad = %q; want [-]", bad)
	}
	var b bytes.Buffer
	printSqueue(&b, cols, testJobs()[:1], testView, true)
	if want := "JOBID %-5j\n1 %-5j\n"; b.String() != want {
		t.Errorf("got %q; want %q", b.String(), want)
	}
}

func TestSqueueFormat2(t *testing.T) {
	cols, err := parseSqueueFormat2("JobID:5,Name:.6,statecompact:3,ReasonList")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printSqueue(&b, cols, testJobs()[:2], testView, true)
	want := "" +
		"JOBID  NAMEST NODELIST(REASON)    \n" +
		"1    longnaR  n[1-2]              \n" +
		"2      pendPD (Resources)         \n"
	if b.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", b.String(), want)
	}
	if _, err := parseSqueueFormat2("JobID,nosuchfield"); err == nil {
		t.Error("an unknown -O field was accepted")
	}
}

func TestSqueueFilter(t *testing.T) {
	states, all, err := parseStates("pd,R")
	if err != nil || all {
		t.Fatal(err)
	}
	ids := func(q squeueQuery) []uint64 {
		var out []uint64
		for _, j := range testJobs() {
			if q.match(j) {
				out = append(out, j.ID)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    squeueQuery
		want []uint64
	}{
		{"default: live jobs", squeueQuery{}, []uint64{1, 2}},
		{"-t all", squeueQuery{allStates: true}, []uint64{1, 2, 3, 4}},
		{"-t pd,R", squeueQuery{states: states}, []uint64{1, 2}},
		{"-t CD", squeueQuery{states: map[string]bool{"COMPLETED": true}}, []uint64{3}},
		{"-u ada", squeueQuery{users: []string{"ada"}}, []uint64{1}},
		{"-u ada -t all", squeueQuery{users: []string{"ada"}, allStates: true}, []uint64{1, 3, 4}},
		{"-j 2,3", squeueQuery{ids: []jobSel{{2, -1}, {3, -1}}}, []uint64{2}},
		{"-n pend", squeueQuery{names: []string{"pend"}}, []uint64{2}},
		{"-p other", squeueQuery{parts: []string{"other"}}, nil},
	} {
		got := ids(tc.q)
		if len(got) != len(tc.want) || !equalIDs(got, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"bogus", "PD,xx"} {
		if _, _, err := parseStates(bad); err == nil || !strings.Contains(err.Error(), "Invalid job state specified") {
			t.Errorf("-t %s: err %v; want Invalid job state specified", bad, err)
		}
	}
	if _, all, _ := parseStates("ALL"); !all {
		t.Error("-t ALL is not all states")
	}
	for _, bad := range []string{"1_x", "1_1001", "x", "0"} {
		if _, err := parseJobList(bad); err == nil {
			t.Errorf("-j %s accepted", bad)
		}
	}
}

func equalIDs(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func testNodes() []api.Node {
	return []api.Node{
		{Name: "n10", State: "IDLE", GPUs: 8, GPUsFree: 8, CPUs: 16, MemoryMiB: 16000},
		{Name: "n1", State: "MIXED", GPUs: 8, GPUsFree: 4, CPUs: 16, MemoryMiB: 16000},
		{Name: "n2", State: "MIXED", GPUs: 8, GPUsFree: 2, CPUs: 16, MemoryMiB: 16000},
		{Name: "n3", State: "DRAIN", GPUs: 8, GPUsFree: 8, CPUs: 16, MemoryMiB: 16000, Reason: "bad gpu"},
		{Name: "n4", State: "DOWN", GPUs: 8, GPUsFree: 8, CPUs: 16, MemoryMiB: 16000},
		{Name: "n5", State: "IDLE", GPUs: 8, GPUsFree: 8, CPUs: 16, MemoryMiB: 16000},
		{Name: "n6", State: "ALLOCATED", GPUs: 8, GPUsFree: 0, CPUs: 16, MemoryMiB: 16000},
	}
}

func renderSinfo(t *testing.T, format string, nodeView bool) string {
	t.Helper()
	cols, err := parseSinfoFormat(format)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	nodes, err := sinfoNodes(testNodes(), cluster.PolicyFile{})
	if err != nil {
		t.Fatal(err)
	}
	printSinfo(&b, cols, sinfoRows(cols, nodes, nodeView), true)
	return b.String()
}

func TestSinfoFormats(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		nodeView     bool
		want         string
	}{
		{"default", sinfoDefaultFormat, false, "" +
			"PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n" +
			"shoal*       up   infinite      1  drain n3\n" +
			"shoal*       up   infinite      2    mix n[1-2]\n" +
			"shoal*       up   infinite      1  alloc n6\n" +
			"shoal*       up   infinite      2   idle n[5,10]\n" +
			"shoal*       up   infinite      1  down* n4\n"},
		{"-N -l", sinfoNodeLongFormat, true, "" +
			"NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON              \n" +
			"n1             1    shoal*       mixed 16     1:16:1  16000        0      1   (null) none                \n" +
			"n2             1    shoal*       mixed 16     1:16:1  16000        0      1   (null) none                \n" +
			"n3             1    shoal*     drained 16     1:16:1  16000        0      1   (null) bad gpu             \n" +
			"n4             1    shoal*       down* 16     1:16:1  16000        0      1   (null) Not responding      \n" +
			"n5             1    shoal*        idle 16     1:16:1  16000        0      1   (null) none                \n" +
			"n6             1    shoal*   allocated 16     1:16:1  16000        0      1   (null) none                \n" +
			"n10            1    shoal*        idle 16     1:16:1  16000        0      1   (null) none                \n"},
		{"-N", sinfoNodeFormat, true, "" +
			"NODELIST   NODES PARTITION STATE \n" +
			"n1             1    shoal* mix   \n" +
			"n2             1    shoal* mix   \n" +
			"n3             1    shoal* drain \n" +
			"n4             1    shoal* down* \n" +
			"n5             1    shoal* idle  \n" +
			"n6             1    shoal* alloc \n" +
			"n10            1    shoal* idle  \n"},
		{"summarize", sinfoSummarizeFmt, false, "" +
			"PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n" +
			"shoal*       up   infinite          3/2/2/7 n[1-6,10]\n"},
		{"gres", "%N %G %c %m", false, "" +
			"NODELIST GRES CPUS MEMORY\n" +
			"n[1-6,10] gpu:8 16 16000\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderSinfo(t, tc.format, tc.nodeView); got != tc.want {
				t.Errorf("sinfo -o %q:\n%s\nwant:\n%s", tc.format, got, tc.want)
			}
		})
	}
	if _, err := parseSinfoFormat("%P %Y"); err == nil {
		t.Error("an unknown sinfo field was accepted")
	}
}

// TestSinfoDraining: a drained node that still runs a job is "drng".
func TestSinfoDraining(t *testing.T) {
	c, l, _ := sinfoState(api.Node{State: "DRAIN", GPUs: 8, GPUsFree: 6})
	if c != "drng" || l != "draining" {
		t.Errorf("busy drained node = %s/%s; want drng/draining", c, l)
	}
	q := sinfoQuery{states: []string{"drain"}}
	if !q.match(sinfoNode{Node: api.Node{State: "DRAIN", GPUs: 8, GPUsFree: 6}}) || q.match(sinfoNode{Node: api.Node{State: "IDLE"}}) {
		t.Error("-t drain does not select exactly the drained nodes")
	}
}

func TestSacctFormats(t *testing.T) {
	jobs := testJobs()
	render := func(format string, jobsOnly bool, l sacctLayout) string {
		cols, err := parseSacctFormat(format)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		printSacct(&b, cols, sacctRows(jobs[2:], jobsOnly), testView, l)
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
	printSacct(&b, cols, sacctRows(jobs[1:2], false), testView, sacctLayout{parsable: true, delimiter: "|"})
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

// TestParseCLI: the query commands scan with slurm.Getopt (tested there)
// and print its errors as the command does, led by the command's name.
func TestParseCLI(t *testing.T) {
	vals, rest, err := parseCLI("squeue", squeueOpts, []string{"-h", "5", "--stat=R"})
	if err != nil || len(vals) != 2 || vals[1].Opt.Long != "states" || vals[1].Value != "R" || strings.Join(rest, " ") != "5" {
		t.Errorf("parseCLI = %+v, %q, %v", vals, rest, err)
	}
	for args, want := range map[string]string{
		"--bogus": "squeue: unrecognized option '--bogus'",
		"-z":      "squeue: invalid option -- 'z'",
		"-u":      "squeue: option requires an argument -- 'u'",
		"--long=": "squeue: option '--long' doesn't allow an argument",
	} {
		_, _, err := parseCLI("squeue", squeueOpts, strings.Fields(args))
		var ue *slurm.UsageError
		if !errors.As(err, &ue) || err.Error() != want {
			t.Errorf("%s: err %v; want %q", args, err, want)
		}
	}
}

func TestScancelIDs(t *testing.T) {
	ts, err := parseScancelIDs([]string{"5", "6.1", "7,8"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 4 || ts[0].job != 5 || ts[0].step != -1 || ts[1].job != 6 || ts[1].step != 1 || ts[3].job != 8 {
		t.Errorf("targets = %+v", ts)
	}
	for _, bad := range []string{"abc", "0", "5.x", "5_x", "5_2.1", "5_[1-"} {
		_, err := parseScancelIDs([]string{bad})
		if err == nil || !strings.HasPrefix(err.Error(), "Invalid job id "+bad) {
			t.Errorf("%s: err %v; want Invalid job id %s", bad, err, bad)
		}
	}
	ts, err = parseScancelIDs([]string{"5_2,6_[1-3,7],9"})
	if err != nil || len(ts) != 3 || ts[0].element != "5_2" || ts[1].element != "6_[1-3,7]" || ts[1].job != 6 || ts[2].element != "" {
		t.Errorf("array elements: %+v, %v", ts, err)
	}
	if _, err := parseScancelStates("done"); err == nil {
		t.Error("scancel -t done accepted")
	}
}

func TestScanFormat(t *testing.T) {
	tests := []struct {
		format    string
		allowAuto bool
		want      string
	}{
		{"%.10i %j", false, "spec(.10i:r,w10,i) text( ) spec(%j:w0,j)"},
		{"100%% %", false, "text(100% ) spec(%:w0,-)"},
		{"%#P", true, "spec(%#P:a,w0,P)"},
		{"%#P", false, "spec(%#:w0,#) text(P)"},
		{"%.5", false, "spec(.5:r,w5,-)"},
	}
	for _, tc := range tests {
		var parts []string
		_ = scanFormat(tc.format, tc.allowAuto, func(s string) {
			parts = append(parts, "text("+s+")")
		}, func(f formatSpec) error {
			desc := f.raw + ":"
			if f.right {
				desc = strings.TrimPrefix(f.raw, "%") + ":r,"
			} else if f.auto {
				desc += "a,"
			}
			letter := "-"
			if f.letter != 0 {
				letter = string(f.letter)
			}
			parts = append(parts, fmt.Sprintf("spec(%sw%d,%s)", desc, f.width, letter))
			return nil
		})
		if got := strings.Join(parts, " "); got != tc.want {
			t.Errorf("scanFormat(%q, %v) = %s; want %s", tc.format, tc.allowAuto, got, tc.want)
		}
	}
}

// TestSqueueArrays checks how array elements show: running ones as N_M,
// pending ones folded into one N_[LIST%T] row unless -r, and -j N_M and
// -j N selecting an element and a whole array.
func TestSqueueArrays(t *testing.T) {
	el := func(id uint64, task int, state string) api.Job {
		return api.Job{ID: id, State: state, ArrayJobID: 10, ArrayTaskID: task, ArrayThrottle: 2,
			JobIDString: fmt.Sprintf("10_%d", task), Name: "sweep"}
	}
	jobs := []api.Job{el(10, 0, "RUNNING"), el(11, 1, "PENDING"), el(12, 2, "PENDING"), el(13, 5, "PENDING"),
		{ID: 14, State: "PENDING", ArrayTaskID: -1, Name: "plain"}}
	folded := groupPendingArrays(jobs)
	var got []string
	for _, j := range folded {
		got = append(got, jobIDString(j))
	}
	if want := []string{"10_0", "10_[1-2,5%2]", "14"}; !slices.Equal(got, want) {
		t.Errorf("folded ids = %v; want %v", got, want)
	}
	k := squeueFieldByLetter('K')
	if v := k.value(folded[1], slurmView{}); v != "1-2,5%2" {
		t.Errorf("%%K of the folded row = %q", v)
	}
	if v := k.value(folded[2], slurmView{}); v != "N/A" {
		t.Errorf("%%K of a plain job = %q; want N/A", v)
	}
	if v := squeueFieldByLetter('A').value(jobs[2], slurmView{}); v != "10" {
		t.Errorf("%%A of an element = %q; want 10", v)
	}
	sels, err := parseJobList("10_2,14")
	if err != nil {
		t.Fatal(err)
	}
	var picked []uint64
	for _, j := range jobs {
		if selects(sels, j) {
			picked = append(picked, j.ID)
		}
	}
	if want := []uint64{12, 14}; !slices.Equal(picked, want) {
		t.Errorf("-j 10_2,14 picked %v; want %v", picked, want)
	}
	sels, _ = parseJobList("10")
	picked = nil
	for _, j := range jobs {
		if selects(sels, j) {
			picked = append(picked, j.ID)
		}
	}
	if want := []uint64{10, 11, 12, 13}; !slices.Equal(picked, want) {
		t.Errorf("-j 10 picked %v; want the whole array %v", picked, want)
	}
}

// TestSinfoPartitions: with partitions in the queue policy, sinfo shows
// a row per partition (and state), the default one starred, with its
// time limit; a node in two partitions shows in both; -p keeps some.
func TestSinfoPartitions(t *testing.T) {
	pol := cluster.PolicyFile{Partitions: map[string]cluster.PartitionFile{
		"gpu":   {Nodes: "n[1-3]", Default: true, MaxTime: "2-00:00:00"},
		"debug": {Nodes: "n3", MaxTime: "30:00"},
	}}
	var nodes []api.Node
	for i := 1; i <= 3; i++ {
		nodes = append(nodes, api.Node{Name: fmt.Sprintf("n%d", i), State: "IDLE", GPUs: 2, GPUsFree: 2})
	}
	all, err := sinfoNodes(nodes, pol)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := parseSinfoFormat(sinfoDefaultFormat)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printSinfo(&b, cols, sinfoRows(cols, all, false), false)
	got := strings.Fields(b.String())
	want := strings.Fields(`debug up 30:00 1 idle n3
		gpu* up 2-00:00:00 3 idle n[1-3]`)
	if !slices.Equal(got, want) {
		t.Errorf("sinfo:\n%s\nwant the fields %v", b.String(), want)
	}
	q := sinfoQuery{parts: []string{"debug"}}
	var kept []string
	for _, n := range all {
		if q.match(n) {
			kept = append(kept, n.Name)
		}
	}
	if !slices.Equal(kept, []string{"n3"}) {
		t.Errorf("-p debug kept %v; want n3", kept)
	}
	if _, err := sinfoNodes(nodes, cluster.PolicyFile{Partitions: map[string]cluster.PartitionFile{"x": {Nodes: "n[1-"}}}); err == nil {
		t.Error("a bad partition hostlist was accepted")
	}
}

// TestNodeFilters: squeue -w, sacct -N and scancel -w keep the jobs on
// any of the nodes named (a hostlist).
func TestNodeFilters(t *testing.T) {
	nodes, err := expandNodeFilter("n[2-3]")
	if err != nil {
		t.Fatal(err)
	}
	on := func(ns ...string) api.Job { return api.Job{State: "RUNNING", Nodes: ns} }
	q := squeueQuery{nodes: nodes}
	for _, tc := range []struct {
		job  api.Job
		want bool
	}{{on("n1"), false}, {on("n1", "n2"), true}, {on("n3"), true}, {on(), false}} {
		if got := q.match(tc.job); got != tc.want {
			t.Errorf("-w n[2-3] on %v: %v; want %v", tc.job.Nodes, got, tc.want)
		}
	}
	if _, err := expandNodeFilter("n[2-"); err == nil || !strings.Contains(err.Error(), "Invalid node name specified") {
		t.Errorf("a bad hostlist: %v", err)
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
	printSacct(&b, cols, sacctRows(jobs, false), testView, sacctLayout{parsable: true, delimiter: "|", header: true})
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
		if got := sacctUnits(tc.v, tc.unit); got != tc.want {
			t.Errorf("sacctUnits(%d, %d) = %q; want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}
