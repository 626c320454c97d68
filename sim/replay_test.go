package sim

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shoal-sched/shoal/placement"
)

// handTrace is a small trace whose schedules were worked out by hand (see
// TestReplayHandComputed) on 4 nodes of 4 GPUs, 2 per leaf switch:
// leaf0 = n0000, n0001; leaf1 = n0002, n0003.
const handTrace = `job_id,submit_time,duration_s,num_gpus,gpus_per_node,num_nodes,user,status,time_limit_s
a,0,100,4,,,u1,completed,
b,0,30,8,4,2,u1,completed,
c,5,50,12,,3,u2,failed,
d,6,20,2,,,u2,completed,
e,7,100,2,,,u3,killed,
f,8,15,1,1,1,u3,completed,
g,9,10,20,,,u3,completed,
h,9,10,6,,,u1,completed,
`

var handCluster = Cluster{Nodes: 4, GPUsPerNode: 4, LeafSize: 2, LeavesPerSpine: 8}

// TestReplayHandComputed replays handTrace under each policy and compares
// the schedule with one computed by hand. g asks for 20 GPUs (5 nodes) and
// is unplaceable; h asks for 6 GPUs with no shape: 2 nodes x 3.
//
//   - fifo: b takes the first two free nodes by name (n0001, n0002, over
//     two leaves); c (3 nodes) waits for b, and everything waits behind c,
//     so d, e, f and h start when c ends at 80.
//   - backfill: c's reservation is at 30 on n0001-n0003. d (ends 26) and f
//     (ends 23) end before it and start at once on n0003; e (ends after
//     30) may not use reserved GPUs and waits; h needs 3 free GPUs on two
//     nodes and waits. At 30 c starts and e gets the reservation at 80.
//   - shoal: as backfill, but b goes under one leaf (n0002, n0003) and the
//     small jobs best-fit onto n0001.
func TestReplayHandComputed(t *testing.T) {
	const header = "job_id,submit,start,end,nodes,gpus_per_node\n"
	tests := []struct {
		policy placement.Policy
		want   string
	}{{
		policy: placement.PolicyFIFO,
		want: header +
			"a,0,0,100,n0000,4\n" +
			"b,0,0,30,n0001;n0002,4;4\n" +
			"c,5,30,80,n0001;n0002;n0003,4;4;4\n" +
			"d,6,80,100,n0001,2\n" +
			"e,7,80,180,n0001,2\n" +
			"f,8,80,95,n0002,1\n" +
			"g,9,,,,\n" +
			"h,9,80,90,n0002;n0003,3;3\n",
	}, {
		policy: placement.PolicyBackfill,
		want: header +
			"a,0,0,100,n0000,4\n" +
			"b,0,0,30,n0001;n0002,4;4\n" +
			"c,5,30,80,n0001;n0002;n0003,4;4;4\n" +
			"d,6,6,26,n0003,2\n" +
			"e,7,80,180,n0001,2\n" +
			"f,8,8,23,n0003,1\n" +
			"g,9,,,,\n" +
			"h,9,80,90,n0002;n0003,3;3\n",
	}, {
		policy: placement.PolicyShoal,
		want: header +
			"a,0,0,100,n0000,4\n" +
			"b,0,0,30,n0002;n0003,4;4\n" +
			"c,5,30,80,n0001;n0002;n0003,4;4;4\n" +
			"d,6,6,26,n0001,2\n" +
			"e,7,80,180,n0001,2\n" +
			"f,8,8,23,n0001,1\n" +
			"g,9,,,,\n" +
			"h,9,80,90,n0002;n0003,3;3\n",
	}}
	jobs, err := Parse(strings.NewReader(handTrace))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			r, err := Replay(jobs, Options{Cluster: handCluster, Policy: tt.policy})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteSchedule(&buf, r); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("Replay(%s) schedule = \n%s\nwant\n%s\ndiff (-want +got):\n%s", tt.policy, buf.String(), tt.want, diff)
			}
			if g := r.Jobs[6]; g.Ran() || !strings.Contains(g.Unplaceable, "nodes 5") {
				t.Errorf("job g: unplaceable %q; want the reason to name nodes 5", g.Unplaceable)
			}
		})
	}
}

// TestSummarizeHandComputed checks the metrics of the fifo schedule above,
// computed by hand.
func TestSummarizeHandComputed(t *testing.T) {
	r := replayHand(t, placement.PolicyFIFO)
	got := Summarize(r, 0)
	// Waits 0 0 25 74 73 72 71; JCTs 100 30 75 94 173 87 81; GPU-seconds
	// 400+240+600+40+200+15+60 over 16 GPUs x 180 s; multi-node b (2
	// leaves), c (2 leaves), h (1 leaf). Runs 100 30 50 20 100 15 10, so
	// bounded slowdowns JCT/run (no run under 10 s).
	want := Summary{Policy: "fifo", Nodes: 4, GPUsPerNode: 4, LeafSize: 2, Jobs: 8, Unplaceable: 1,
		AvgWait: 315.0 / 7, P50Wait: 71, P95Wait: 74, P99Wait: 74, MaxWait: 74, AvgJCT: 640.0 / 7, Makespan: 180,
		AvgBSld: (100.0/100 + 30.0/30 + 75.0/50 + 94.0/20 + 173.0/100 + 87.0/15 + 81.0/10) / 7, P99BSld: 81.0 / 10,
		GPUUtil: 1555.0 / 2880, MultiNodeJobs: 3, OneLeafFrac: 1.0 / 3, MeanLeavesMulti: 2, Passes: r.Passes}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("Summarize() diff (-want +got):\n%s", diff)
	}
	if r.Passes < 5 {
		t.Errorf("Replay() made %d passes; want one per event timestamp with a queue", r.Passes)
	}
}

func TestReplayRejects(t *testing.T) {
	jobs := []Job{{ID: "x", Submit: 5, Duration: 1, GPUs: 1}, {ID: "y", Submit: 4, Duration: 1, GPUs: 1}}
	tests := []struct {
		name string
		jobs []Job
		opts Options
		want string
	}{
		{"bad cluster", nil, Options{Cluster: Cluster{Nodes: 0, GPUsPerNode: 8, LeafSize: 1, LeavesPerSpine: 1}, Policy: placement.PolicyFIFO}, "nodes 0"},
		{"bad policy", nil, Options{Cluster: handCluster, Policy: "lifo"}, `policy "lifo"`},
		{"bad limits", nil, Options{Cluster: handCluster, Policy: placement.PolicyFIFO, Limits: "wild"}, `limits "wild"`},
		{"unsorted jobs", jobs, Options{Cluster: handCluster, Policy: placement.PolicyFIFO}, "want jobs sorted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Replay(tt.jobs, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Replay() error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

// replayHand replays handTrace on handCluster under policy.
func replayHand(t *testing.T, policy placement.Policy) *Result {
	t.Helper()
	jobs, err := Parse(strings.NewReader(handTrace))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(jobs, Options{Cluster: handCluster, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWritePlot(t *testing.T) {
	r := replayHand(t, placement.PolicyShoal)
	var buf bytes.Buffer
	if err := WritePlot(&buf, r, "hand"); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("WritePlot() wrote %d bytes, not a PNG", buf.Len())
	}
	if err := WritePlot(&buf, &Result{}, "empty"); err == nil {
		t.Fatal("WritePlot(empty result): want an error")
	}
}
