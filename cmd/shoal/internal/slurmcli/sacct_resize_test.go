package slurmcli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// elasticJob started on n[1-2] at 01:00, grew by n3 at 01:10, lost n2
// at 01:20 and completed on n1 and n3 at 01:30.
func elasticJob() api.Job {
	return api.Job{ID: 7, Name: "train", User: "ada", State: "COMPLETED", Elastic: true,
		NumNodes: 2, NodesMax: 3, Nodes: []string{"n1", "n3"}, TasksPerNode: 1, CPUsPerTask: 2,
		Tasks:      []api.Task{{Node: "n1", CPUs: "0-1"}, {Node: "n2", CPUs: "0-1", State: "lost"}, {Node: "n3", CPUs: "0-1"}},
		SubmitTime: "2026-11-22T00:59:00Z", StartTime: "2026-11-22T01:00:00Z", EndTime: "2026-11-22T01:30:00Z",
		Resizes: []api.Resize{
			{Time: "2026-11-22T01:10:00Z", Cause: "grow", Node: "n3", NumNodes: 3},
			{Time: "2026-11-22T01:20:00Z", Cause: "shrink", Node: "n2", NumNodes: 2},
		},
		Steps: []api.Step{{ID: 0, Name: "python3", State: "COMPLETED", Nodes: []string{"n1", "n3"}, NTasks: 2,
			StartTime: "2026-11-22T01:20:05Z", EndTime: "2026-11-22T01:29:00Z"}},
	}
}

// TestSacctResize: an elastic job's size history as Slurm's accounting
// keeps a resized job's, one record per size (the ones it left in state
// RESIZING) with sacct -D, the latest alone without it. The golden file
// is testdata/sacct_resize.txt (SHOAL_UPDATE_GOLDEN=1 rewrites it). The
// peer Slurm (one node) cannot resize a job, so its layout follows
// Slurm 22.05's job_pre_resize_acctg/job_post_resize_acctg and
// as_mysql_job_start/complete: the old record ends RESIZING at the
// resize time, the new one is submitted and started then.
func TestSacctResize(t *testing.T) {
	const format = "JobID,State,Submit,Start,End,Elapsed,NNodes,NodeList,AllocCPUS,AllocTRES"
	cols, err := parseSacctFormat(format)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, dups := range []bool{false, true} {
		b.WriteString("# sacct -P -j 7 --format " + format)
		if dups {
			b.WriteString(" -D")
		}
		b.WriteString("\n")
		printSacct(&b, cols, sacctRows([]api.Job{elasticJob()}, false, dups), testView,
			sacctLayout{parsable: true, delimiter: "|", header: true})
	}
	b.WriteString("# sacct -j 7 -D -X --format JobID,State,Start,End,NNodes,NodeList\n")
	// The default columns, aligned, as a user reads them.
	dcols, _ := parseSacctFormat("JobID,State,Start,End,NNodes,NodeList")
	printSacct(&b, dcols, sacctRows([]api.Job{elasticJob()}, true, true), testView, sacctLayout{header: true})
	golden := filepath.Join("testdata", "sacct_resize.txt")
	if os.Getenv("SHOAL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("sacct of a resized job:\n%s\nwant (%s):\n%s", b.String(), golden, want)
	}
	// A job that never resized is one record, itself, with or without -D.
	j := testJobs()[2]
	if recs := resizeRecords(j); len(recs) != 1 || recs[0].StartTime != j.StartTime {
		t.Errorf("resizeRecords(unresized) = %+v; want the job alone", recs)
	}
}
