package slurmcli

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

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
		{"-u ada", squeueQuery{jobFilter: jobFilter{users: []string{"ada"}}}, []uint64{1}},
		{"-u ada -t all", squeueQuery{jobFilter: jobFilter{users: []string{"ada"}}, allStates: true}, []uint64{1, 3, 4}},
		{"-j 2,3", squeueQuery{ids: []jobSel{{2, -1}, {3, -1}}}, []uint64{2}},
		{"-n pend", squeueQuery{jobFilter: jobFilter{names: []string{"pend"}}}, []uint64{2}},
		{"-p other", squeueQuery{jobFilter: jobFilter{parts: []string{"other"}}}, nil},
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
		got = append(got, JobIDString(j))
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

// -A and -q select by the policy's accounts and QoS levels.
func TestSqueueAccountQoS(t *testing.T) {
	jobs := []api.Job{
		{ID: 1, State: "RUNNING", Account: "ml", QoS: "gold"},
		{ID: 2, State: "PENDING", Account: "ml"},
		{ID: 3, State: "PENDING", Account: "physics", QoS: "gold"},
	}
	for _, tc := range []struct {
		q    squeueQuery
		want []uint64
	}{
		{squeueQuery{jobFilter: jobFilter{accounts: []string{"ml"}}}, []uint64{1, 2}},
		{squeueQuery{jobFilter: jobFilter{qos: []string{"gold"}}}, []uint64{1, 3}},
		{squeueQuery{jobFilter: jobFilter{accounts: []string{"ml"}, qos: []string{"gold"}}}, []uint64{1}},
		{squeueQuery{jobFilter: jobFilter{accounts: []string{"none"}}}, nil},
	} {
		var got []uint64
		for _, j := range jobs {
			if tc.q.match(j) {
				got = append(got, j.ID)
			}
		}
		if !equalIDs(got, tc.want) {
			t.Errorf("-A %v -q %v: %v; want %v", tc.q.accounts, tc.q.qos, got, tc.want)
		}
	}
}
