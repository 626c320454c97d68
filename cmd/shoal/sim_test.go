package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const simTrace = `job_id,submit_time,duration_s,num_gpus,gpus_per_node,num_nodes,user,status,time_limit_s
a,0,100,8,8,1,,completed,
b,0,50,16,8,2,,completed,
c,10,20,64,8,8,,completed,
`

// TestSimCommand runs `shoal sim` on a small trace, as a user would, with
// every output: the JSON keys the issue lists, the schedule CSV and a PNG.
func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(trace, []byte(simTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	sched, png := filepath.Join(dir, "s.csv"), filepath.Join(dir, "p.png")
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"sim", "--trace", trace, "--nodes", "4", "--gpus-per-node", "8", "--leaf-size", "2",
		"--policy", "backfill", "--json", "--schedule", sched, "--plot", png})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("--json output %q: %v", out.String(), err)
	}
	for _, k := range []string{"jobs", "unplaceable", "avg_wait_s", "p50_wait_s", "p95_wait_s", "p99_wait_s", "max_wait_s", "avg_bsld", "p99_bsld",
		"avg_jct_s", "makespan_s", "gpu_util", "one_leaf_frac", "mean_leaves_multi", "decisions_per_s"} {
		if _, ok := got[k]; !ok {
			t.Errorf("--json output lacks %q: %s", k, out.String())
		}
	}
	if got["jobs"] != 3.0 || got["unplaceable"] != 1.0 || got["makespan_s"] != 100.0 {
		t.Errorf("--json = %s; want 3 jobs, 1 unplaceable (8 nodes on 4), makespan 100", out.String())
	}
	s, err := os.ReadFile(sched)
	if err != nil {
		t.Fatal(err)
	}
	wantSched := "job_id,submit,start,end,nodes,gpus_per_node\na,0,0,100,n0000,8\nb,0,0,50,n0001;n0002,8;8\nc,10,,,,\n"
	if string(s) != wantSched {
		t.Errorf("--schedule wrote\n%s\nwant\n%s", s, wantSched)
	}
	p, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(p, []byte("\x89PNG")) {
		t.Errorf("--plot wrote %d bytes (%v); want a PNG", len(p), err)
	}

	out.Reset()
	root = newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"sim", "--trace", trace, "--nodes", "4", "--leaf-size", "2", "--policy", "qssf", "--limits", "noisy", "--fairshare"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"policy", "qssf", "time limits", "noisy", "fair share", "unplaceable", "p99 wait", "max wait", "bounded slowdown", "GPU utilization", "one-leaf fraction", "decisions/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSimCommandErrors(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(trace, []byte(simTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no trace", nil, "--trace: required"},
		{"bad policy", []string{"--trace", trace, "--policy", "sjf"}, `--policy "sjf": want fifo, backfill, shoal or qssf`},
		{"bad nodes", []string{"--trace", trace, "--nodes", "0"}, "--nodes 0"},
		{"bad leaf size", []string{"--trace", trace, "--leaf-size", "0"}, "--leaf-size 0"},
		{"bad limits", []string{"--trace", trace, "--limits", "wild"}, `--limits "wild": want exact or noisy`},
		{"bad aging", []string{"--trace", trace, "--aging-half", "0s"}, "--aging-half 0s"},
		{"missing file", []string{"--trace", filepath.Join(dir, "none.csv")}, "none.csv"},
		{"unwritable schedule", []string{"--trace", trace, "--nodes", "8", "--schedule", filepath.Join(dir, "no", "s.csv")}, "s.csv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCmd()
			root.SetOut(&bytes.Buffer{})
			root.SetArgs(append([]string{"sim"}, tt.args...))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("shoal sim %v: error %v; want one containing %q", tt.args, err, tt.want)
			}
		})
	}
}
