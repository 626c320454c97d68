package slurmcli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// layout is a show job output's shape: each line's indent and keys
// (what precedes '=' in each field), values left out.
func layout(out string) []string {
	var ls []string
	for _, line := range strings.SplitAfter(out, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		var keys []string
		for _, f := range strings.Fields(line) {
			k, _, _ := strings.Cut(f, "=")
			keys = append(keys, k)
		}
		ls = append(ls, strings.Repeat(" ", indent)+strings.Join(keys, " ")+
			map[bool]string{true: "\\n", false: ""}[strings.HasSuffix(line, "\n")]+
			map[bool]string{true: "<sp>", false: ""}[strings.HasSuffix(strings.TrimSuffix(line, "\n"), " ")])
	}
	return ls
}

// TestShowJobLayoutGolden prints jobs in the states Debian's Slurm was
// captured in (testdata/show_job, make_show_job_golden.sh) and checks
// that every line has Slurm's keys in Slurm's order, with `scontrol show
// job`, `-dd` and `-o`.
func TestShowJobLayoutGolden(t *testing.T) {
	start := "2026-11-25T13:22:07Z"
	batch := func(j api.Job) api.Job {
		j.User, j.UID, j.GID, j.Batch, j.Requeue = "root", 0, 0, true, true
		j.WorkDir, j.StdOut, j.StdErr = "/tmp/w", "/tmp/w/slurm-19.out", "/tmp/w/slurm-19.out"
		j.SubmitTime, j.ArrayTaskID, j.TasksPerNode, j.CPUsPerTask, j.CPUsPerNode, j.MemPerNodeMiB = start, -1, 1, 1, 1, 1000
		if j.NumNodes == 0 {
			j.NumNodes = 1
		}
		return j
	}
	running := func(j api.Job, nodes ...string) api.Job {
		j.State, j.StartTime, j.Nodes = "RUNNING", start, nodes
		for i, n := range nodes {
			j.Tasks = append(j.Tasks, api.Task{Node: n, CPUs: "0-2", MemMiB: 1000, State: "RUNNING"})
			if j.GPUsPerNode > 0 {
				j.Tasks[i].GPUs = []int{0, 1}
			}
		}
		return j
	}
	cases := map[string]api.Job{
		"running": running(batch(api.Job{ID: 19, Name: "golden", NumNodes: 2, TimeLimitS: 300}), "n1", "n2"),
		"gpu":     running(batch(api.Job{ID: 20, Name: "scripted", GPUsPerNode: 2, TimeLimitS: 600}), "n1"),
		"pending": batch(api.Job{ID: 21, Name: "wrap", State: "PENDING", Reason: "Dependency", Dependency: "afterok:19", TimeLimitS: 3600}),
		"held":    batch(api.Job{ID: 22, Name: "wrap", State: "PENDING", Reason: "JobHeldUser", Hold: "user"}),
		"array":   running(batch(api.Job{ID: 25, Name: "wrap", ArrayJobID: 24, ArrayTaskID: 1}), "n3"),
	}
	interactive := running(batch(api.Job{ID: 26, Name: "interactive", Command: []string{"sleep", "60"}}), "n1")
	interactive.Batch, interactive.StdOut, interactive.StdErr = false, "", ""
	cases["interactive"] = interactive
	failed := running(batch(api.Job{ID: 23, Name: "wrap", ExitCode: 3}), "n1")
	failed.State, failed.Reason, failed.EndTime = "FAILED", "NonZeroExitCode", start
	cases["failed"] = failed
	for name, j := range cases {
		for _, mode := range []struct {
			file string
			show ShowJob
		}{
			{"plain", ShowJob{}},
			{"dd", ShowJob{Details: 2}},
			{"oneliner", ShowJob{OneLiner: true}},
		} {
			t.Run(name+"."+mode.file, func(t *testing.T) {
				raw, err := os.ReadFile(filepath.Join("testdata", "show_job", name+"."+mode.file+".txt"))
				if err != nil {
					t.Fatalf("golden from Debian's Slurm: %v", err)
				}
				var out bytes.Buffer
				mode.show.view = slurmView{now: time.Date(2026, 11, 25, 13, 22, 9, 0, time.UTC), loc: time.UTC}
				mode.show.Print(&out, j)
				got, want := layout(out.String()), layout(string(raw))
				for i := range max(len(got), len(want)) {
					g, w := "(none)", "(none)"
					if i < len(got) {
						g = got[i]
					}
					if i < len(want) {
						w = want[i]
					}
					if g != w {
						t.Errorf("line %d: keys %q; want %q, as Slurm\nShoal printed:\n%s", i+1, g, w, out.String())
						break
					}
				}
			})
		}
	}
}

// TestShowJobValues checks the values scripts read from show job.
func TestShowJobValues(t *testing.T) {
	j := api.Job{ID: 7, Name: "train", User: "ada", UID: 1000, GID: 1000, State: "RUNNING", Batch: true,
		NumNodes: 2, TasksPerNode: 4, CPUsPerTask: 2, CPUsPerNode: 8, MemPerNodeMiB: 4096, GPUsPerNode: 4,
		TimeLimitS: 3660, SubmitTime: "2026-01-02T03:04:05Z", StartTime: "2026-01-02T03:04:06Z",
		Nodes: []string{"n1", "n2"}, WorkDir: "/home/ada", StdOut: "/home/ada/o.log", StdErr: "/home/ada/e.log", ExitCode: 130,
		Tasks: []api.Task{{Node: "n1", CPUs: "0-7", MemMiB: 4096, GPUs: []int{0, 1, 2, 3}}, {Node: "n2", CPUs: "8-15", MemMiB: 4096, GPUs: []int{4, 5, 6, 7}}}}
	var out bytes.Buffer
	ShowJob{Details: 2, Group: "ada", view: slurmView{now: time.Date(2026, 1, 2, 3, 5, 6, 0, time.UTC), loc: time.UTC}}.Print(&out, j)
	for _, want := range []string{
		"JobId=7 JobName=train\n", "UserId=ada(1000) GroupId=ada(1000)", "JobState=RUNNING ", "ExitCode=0:2\n",
		"RunTime=00:01:00 TimeLimit=01:01:00 ", "SubmitTime=2026-01-02T03:04:05 ", "EndTime=2026-01-02T04:05:06 ",
		"NodeList=n[1-2]\n", "BatchHost=n1\n", "NumNodes=2 NumCPUs=16 NumTasks=8 CPUs/Task=2 ",
		"TRES=cpu=16,mem=8G,node=2,billing=16,gres/gpu=8\n", "JOB_GRES=gpu:4\n",
		"     Nodes=n2 CPU_IDs=8-15 Mem=4096 GRES=gpu:4(IDX:4-7)\n", "MinMemoryNode=4096M ",
		"Partition=shoal ", "Command=(null)\n", "WorkDir=/home/ada\n", "StdErr=/home/ada/e.log\n", "StdOut=/home/ada/o.log\n",
		"TresPerNode=gres:gpu:4\n   \n\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show job lacks %q:\n%s", want, out.String())
		}
	}
}

// TestShowJobContainer: a --container job shows Slurm's optional
// Container= line, after TresPerNode; a job without one shows none.
func TestShowJobContainer(t *testing.T) {
	j := api.Job{ID: 8, Name: "c", User: "ada", UID: 1000, GID: 1000, State: "PENDING", Batch: true,
		NumNodes: 1, TasksPerNode: 1, CPUsPerTask: 1, GPUsPerNode: 1, WorkDir: "/w", Container: "/w/bundle"}
	view := slurmView{now: time.Date(2026, 1, 2, 3, 5, 6, 0, time.UTC), loc: time.UTC}
	var out bytes.Buffer
	ShowJob{Group: "ada", view: view}.Print(&out, j)
	if want := "TresPerNode=gres:gpu:1\n   Container=/w/bundle\n"; !strings.Contains(out.String(), want) {
		t.Errorf("show job of a --container job lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	j.Container = ""
	ShowJob{Group: "ada", view: view}.Print(&out, j)
	if strings.Contains(out.String(), "Container=") {
		t.Errorf("show job of a job without --container shows Container=:\n%s", out.String())
	}
}

// TestParseJobUpdate: scontrol update's job fields, and Slurm's words for
// what it cannot read.
func TestParseJobUpdate(t *testing.T) {
	for _, tt := range []struct {
		args    string
		want    string // the request as JSON
		wantErr string
	}{
		{"JobId=5 TimeLimit=1:30:00", `{"time_limit_s":5400}`, ""},
		{"JobId=5 TimeLimit=UNLIMITED", `{"time_limit_s":0}`, ""},
		{"JobId=5 TimeLimit=+30", `{"time_limit_add_s":1800}`, ""},
		{"JobId=5 TimeLimit=-1:00:00", `{"time_limit_add_s":-3600}`, ""},
		{"JobId=5 TimeLimit=+", "", "Invalid TimeLimit value"},
		{"JobId=5 NumNodes=2 Partition=gpu QOS=high", `{"nodes":2,"partition":"gpu","qos":"high"}`, ""},
		{"JobId=5 Dependency= JobName=x Comment=hi Nice=-5", `{"dependency":"","name":"x","comment":"hi","nice":-5}`, ""},
		{"JobId=5 Priority=10", `{}`, ""},
		{"JobId=5 TimeLimit=bogus", "", "Invalid TimeLimit value"},
		{"JobId=5 NumNodes=abc", "", `Invalid numeric value "abc" for requested node count.`},
		{"JobId=5 Bogus=1", "", "Update of this parameter is not supported: bogus=1"},
	} {
		fields := map[string]string{}
		var order []string
		for _, a := range strings.Fields(tt.args) {
			k, v, _ := strings.Cut(a, "=")
			k = strings.ToLower(k)
			fields[k] = v
			order = append(order, k)
		}
		req, err := parseJobUpdate(fields, order)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("update %s: %v; want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		got, _ := json.Marshal(req)
		if err != nil || string(got) != tt.want {
			t.Errorf("update %s = %s, %v; want %s", tt.args, got, err, tt.want)
		}
	}
}
