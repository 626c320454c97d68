package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/chaos"
)

func TestChaosFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"chaos", "--nodes", "10"}, "--nodes 10: want 1 to 9"},
		{[]string{"chaos", "--nodes", "0"}, "--nodes 0: want 1 to 9"},
		{[]string{"chaos", "--seed", "3", "--seeds", "2"}, "--seed and --seeds"},
		{[]string{"chaos", "--seeds", "0"}, "--seeds 0: want at least 1"},
		{[]string{"chaos", "--faults", "kill,meteor"}, `unknown fault "meteor"`},
		{[]string{"chaos", "--net", "wifi"}, `--net "wifi": want auto, netns or loopback`},
		{[]string{"chaos", "--duration", "0s"}, "--duration 0s: want more than 0"},
		{[]string{"chaos", "--report", "/nonexistent-dir/r.html"}, "--report /nonexistent-dir/r.html: directory /nonexistent-dir does not exist"},
		{[]string{"chaos", "--plot", "/nonexistent-dir/p.png"}, "--plot /nonexistent-dir/p.png: directory /nonexistent-dir does not exist"},
	}
	for _, tt := range tests {
		root := newRootCmd()
		root.SetArgs(tt.args)
		root.SetOut(&bytes.Buffer{})
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("shoal %s: error %v; want one containing %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

func TestPrintChaos(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	results := []chaos.Result{
		{Seed: 1, Mode: chaos.NetNamespaces, Faults: 4, Submitted: 50, Acknowledged: 49, Completed: 40, MaxRecoverS: 1.25},
		{Seed: 2, Mode: chaos.NetNamespaces, Faults: 3, Submitted: 40, Acknowledged: 40, Completed: 30, Dir: "/tmp/shc1",
			Violations: []chaos.Violation{{Invariant: 1, Seed: 2, Job: 7, OtherJob: 23, Node: "n2", GPU: 4, From: at, To: at.Add(time.Second), Detail: "GPU held by two jobs at once"}}},
	}
	var b bytes.Buffer
	printChaos(&b, results)
	out := b.String()
	for _, want := range []string{
		"SEED  MODE   FAULTS  SUBMITTED  ACKED  COMPLETED  REQUEUES  MAX_RECOVER  VIOLATIONS",
		"1     netns  4       50         49     40         0         1.2s         0",
		"invariant 1 seed 2: job 7 vs job 23 node n2 gpu 4 from 03:04:05.000000 to 03:04:06.000000 (1s): GPU held by two jobs at once",
		"seed 2: data dirs, agent logs and records kept in /tmp/shc1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("printChaos output lacks %q:\n%s", want, out)
		}
	}
}
