package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
)

func TestPrintQueue(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 10, 0, 0, time.UTC)
	jobs := []api.Job{
		{ID: 1, Name: "training-run", User: "ada", State: "RUNNING", NumNodes: 2, Nodes: []string{"n1", "n2"},
			StartTime: "2026-11-22T01:05:00Z"},
		{ID: 2, Name: "eval", User: "bob", State: "PENDING", Reason: "Resources", NumNodes: 4},
		{ID: 3, Name: "x", User: "ada", State: "COMPLETED", NumNodes: 1, Nodes: []string{"n3"},
			StartTime: "2026-11-22T01:00:00Z", EndTime: "2026-11-22T01:00:42Z"},
	}
	var b bytes.Buffer
	printQueue(&b, jobs, now)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	want := [][]string{
		{"JOBID", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)"},
		{"1", "training", "ada", "R", "5:00", "2", "n[1-2]"},
		{"2", "eval", "bob", "PD", "0:00", "4", "(Resources)"},
		{"3", "x", "ada", "CD", "0:42", "1", "n3"},
	}
	if len(lines) != len(want) {
		t.Fatalf("printQueue printed %d lines; want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("line %d = %q; want fields %v", i, lines[i], w)
		}
	}
	// Columns are right-aligned like squeue's: every line has one width.
	for i := 1; i < len(lines); i++ {
		if len(strings.TrimRight(lines[i], " ")) != len(strings.TrimRight(lines[0], " ")) {
			t.Errorf("line %d not aligned with the header:\n%s", i, b.String())
		}
	}
}
