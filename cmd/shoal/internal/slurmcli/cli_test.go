package slurmcli

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

var testView = slurmView{now: time.Date(2026, 11, 22, 2, 10, 0, 0, time.UTC), loc: time.UTC}

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

// TestNodeFilters: squeue -w, sacct -N and scancel -w keep the jobs on
// any of the nodes named (a hostlist).
func TestNodeFilters(t *testing.T) {
	nodes, err := expandNodeFilter("n[2-3]")
	if err != nil {
		t.Fatal(err)
	}
	on := func(ns ...string) api.Job { return api.Job{State: "RUNNING", Nodes: ns} }
	q := squeueQuery{jobFilter: jobFilter{nodes: nodes}}
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
