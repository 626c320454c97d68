package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// The checker is tested on synthetic histories: a clean one must pass, and
// each planted violation must be reported as the right invariant. A
// checker that has never failed proves nothing.

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func at(sec float64) int64 { return t0.Add(time.Duration(sec * float64(time.Second))).UnixNano() }

func rec(node string, gpus []int, job, inc uint64, rank int, start, end float64, done bool) Record {
	return Record{Node: node, GPUs: gpus, Job: job, Incarnation: inc, Rank: rank, Start: at(start), End: at(end), Done: done, Where: "synthetic"}
}

func job(id uint64, name, state string, end float64, alloc map[string][]int) api.Job {
	j := api.Job{ID: id, Name: name, State: state, Incarnation: 1, NumNodes: len(alloc), TasksPerNode: 1, GPUs: alloc}
	for n := range alloc {
		j.Nodes = append(j.Nodes, n)
	}
	if terminal(state) {
		j.EndTime = api.FormatTime(t0.Add(time.Duration(end * float64(time.Second))))
	}
	return j
}

// cleanInput is a history in which every invariant holds: two jobs share
// GPU 0 of n1 one after the other, a 2-node job runs beside them.
func cleanInput() Input {
	jobs := []api.Job{
		job(1, "r1", "COMPLETED", 3, map[string][]int{"n1": {0, 1}}),
		job(2, "r2", "COMPLETED", 6, map[string][]int{"n1": {0}}),
		job(3, "r3", "COMPLETED", 4, map[string][]int{"n1": {2}, "n2": {2}}),
	}
	jobs[2].Nodes = []string{"n1", "n2"}
	// CPUs and memory: jobs 1 and 3 share n1 without sharing a CPU and
	// within its 1000 MiB; job 2 takes job 1's CPUs once it has ended.
	jobs[0].Tasks = []api.Task{{Node: "n1", CPUs: "0-3", MemMiB: 400}}
	jobs[1].Tasks = []api.Task{{Node: "n1", CPUs: "0-3", MemMiB: 600}}
	jobs[2].Tasks = []api.Task{{Node: "n1", CPUs: "4-5", MemMiB: 300}, {Node: "n2", CPUs: "0-1", MemMiB: 300}}
	nodes := []api.Node{{Name: "n1", MemoryMiB: 1000}, {Name: "n2", MemoryMiB: 1000}}
	replica := func(node string) Replica {
		return Replica{Node: node, Jobs: jobs, Nodes: nodes, Status: api.Status{Name: node, AppliedIndex: 40, HashIndex: 40, StateHash: "abc"}}
	}
	return Input{
		Seed: 7,
		Attempts: []Attempt{
			{RequestID: "r1", Node: "n1", Start: t0, End: t0.Add(time.Second), Outcome: Unknown, Err: "timeout"},
			{RequestID: "r1", Node: "n2", Start: t0.Add(time.Second), End: t0.Add(2 * time.Second), Outcome: Acked, Job: 1, Duplicate: true},
			{RequestID: "r2", Node: "n2", Start: t0, End: t0, Outcome: Acked, Job: 2},
			{RequestID: "r3", Node: "n1", Start: t0, End: t0, Outcome: Acked, Job: 3},
			{RequestID: "r4", Node: "n1", Start: t0, End: t0, Outcome: Refused, Err: "nodes: 9, cluster has 2"},
		},
		Records: []Record{
			rec("n1", []int{0, 1}, 1, 1, 0, 1, 1, false),
			rec("n1", []int{0, 1}, 1, 1, 0, 1, 2.5, true),
			rec("n1", []int{0}, 2, 1, 0, 3, 5, true),
			rec("n1", []int{2}, 3, 1, 0, 1, 3, true),
			rec("n2", []int{2}, 3, 1, 1, 1, 3, true),
		},
		Replicas:      []Replica{replica("n1"), replica("n2")},
		Nodes:         []string{"n1", "n2"},
		FaultsEnd:     t0,
		TerminalBound: 30 * time.Second,
		FinalAt:       t0.Add(10 * time.Second),
	}
}

func TestCheckClean(t *testing.T) {
	if vs := Check(cleanInput()); len(vs) != 0 {
		t.Fatalf("Check(clean) = %v; want no violations", vs)
	}
}

// A worker (outside the raft configuration, issue 15) keeps no replica:
// its stale index and hash are not compared, and the check stays clean.
func TestCheckWorkerReplica(t *testing.T) {
	in := cleanInput()
	w := in.Replicas[1]
	w.Node, w.Status.Name, w.Status.Worker, w.Status.HashIndex, w.Status.StateHash = "n3", "n3", true, 0, ""
	in.Replicas = append(in.Replicas, w)
	in.Nodes = append(in.Nodes, "n3")
	if vs := Check(in); len(vs) != 0 {
		t.Fatalf("Check(with a worker) = %v; want no violations", vs)
	}
	if !sameIndex(in.Replicas) {
		t.Error("sameIndex counts the worker's stale index")
	}
}

func TestCheckPlanted(t *testing.T) {
	tests := []struct {
		name  string
		plant func(in *Input)
		// want: the invariant, whether inconclusive, and words the report
		// must contain (job, node, GPU...).
		invariant    int
		inconclusive bool
		want         []string
	}{
		{
			// Invariant 1: job 2's rank starts on GPU 0 of n1 while job 1's
			// still runs there (the FSM's double-booking check skipped).
			name: "double booked GPU",
			plant: func(in *Input) {
				in.Records = append(in.Records, rec("n1", []int{0}, 2, 1, 0, 2, 2.2, false))
			},
			invariant: 1, want: []string{"job 1 vs job 2", "node n1", "gpu 0", "GPU held by two jobs"},
		},
		{
			// Invariant 1 for CPUs: jobs 1 and 3 both hold CPU 3 of n1 while
			// their ranks run there (the FSM's CPU check skipped).
			name: "double booked CPU",
			plant: func(in *Input) {
				for i := range in.Replicas {
					js := append([]api.Job{}, in.Replicas[i].Jobs...)
					js[2].Tasks = []api.Task{{Node: "n1", CPUs: "3-4", MemMiB: 300}, {Node: "n2", CPUs: "0-1", MemMiB: 300}}
					in.Replicas[i].Jobs = js
				}
			},
			invariant: 1, want: []string{"job 1 vs job 3", "node n1", "CPU 3 held by two jobs"},
		},
		{
			// Invariant 1 for memory: jobs 1 and 3 hold 700 MiB of n1's 600.
			name: "memory over-committed",
			plant: func(in *Input) {
				for i := range in.Replicas {
					in.Replicas[i].Nodes = []api.Node{{Name: "n1", MemoryMiB: 600}, {Name: "n2", MemoryMiB: 1000}}
				}
			},
			invariant: 1, want: []string{"job 3", "node n1", "700 MiB held of the node's 600"},
		},
		{
			// Invariant 1: a rank of job 3 uses a GPU its allocation lacks.
			name: "rank outside its allocation",
			plant: func(in *Input) {
				in.Records = append(in.Records, rec("n2", []int{5}, 3, 1, 1, 1, 2, false))
			},
			invariant: 1, want: []string{"job 3", "node n2", "gpu 5", "outside its allocation"},
		},
		{
			// Invariant 1 cannot be checked when a COMPLETED job's ranks
			// left no records: inconclusive, so a failure.
			name: "records missing",
			plant: func(in *Input) {
				in.Records = in.Records[:len(in.Records)-1]
			},
			invariant: 1, inconclusive: true, want: []string{"job 3", "ranks [1]"},
		},
		{
			// Invariant 2: an acknowledged submit is not in the final state
			// (acknowledged before it was committed, then lost).
			name: "acked submit lost",
			plant: func(in *Input) {
				in.Attempts = append(in.Attempts, Attempt{RequestID: "r9", Node: "n2", Start: t0, End: t0, Outcome: Acked, Job: 9})
			},
			invariant: 2, want: []string{"job 9", "request r9 acknowledged via n2", "has no job 9"},
		},
		{
			// Invariant 2: a retried request id yielded two jobs.
			name: "request id yields two jobs",
			plant: func(in *Input) {
				for i := range in.Replicas {
					in.Replicas[i].Jobs = append(append([]api.Job{}, in.Replicas[i].Jobs...),
						job(4, "r1", "COMPLETED", 5, map[string][]int{"n2": {0}}))
				}
				in.Records = append(in.Records, rec("n2", []int{0}, 4, 1, 0, 1, 2, true))
			},
			invariant: 2, want: []string{"request r1 yielded jobs [1 4]"},
		},
		{
			// Invariant 2: two acknowledgements of one request name two jobs.
			name: "request acked as two jobs",
			plant: func(in *Input) {
				in.Attempts = append(in.Attempts, Attempt{RequestID: "r2", Node: "n1", Start: t0, End: t0, Outcome: Acked, Job: 3})
			},
			invariant: 2, want: []string{"request r2 acknowledged as job 2 via n2 and as job 3 via n1"},
		},
		{
			// Invariant 3: two incarnations of job 3 live at once (the old
			// one kept running on a cut-off node past its lease).
			name: "two incarnations",
			plant: func(in *Input) {
				in.Records = append(in.Records, rec("n1", []int{2}, 3, 2, 0, 2, 2.5, false))
				for i := range in.Replicas {
					js := append([]api.Job{}, in.Replicas[i].Jobs...)
					js[2].Incarnation = 2
					in.Replicas[i].Jobs = js
				}
				// The incarnation 2 ranks completed too.
				in.Records = append(in.Records, rec("n1", []int{2}, 3, 2, 0, 3, 4, true), rec("n2", []int{2}, 3, 2, 1, 3, 4, true))
			},
			invariant: 3, want: []string{"job 3", "two incarnations live at once", "incarnation 1", "incarnation 2"},
		},
		{
			// Invariant 4: a job still RUNNING long after faults stopped.
			name: "job never terminal",
			plant: func(in *Input) {
				for i := range in.Replicas {
					js := append([]api.Job{}, in.Replicas[i].Jobs...)
					js[1].State, js[1].EndTime = "RUNNING", ""
					in.Replicas[i].Jobs = js
				}
				in.FinalAt = t0.Add(40 * time.Second)
			},
			invariant: 4, want: []string{"job 2", "still RUNNING", "bound 30s"},
		},
		{
			// Invariant 4: a job terminal, but only after the bound.
			name: "job terminal too late",
			plant: func(in *Input) {
				for i := range in.Replicas {
					js := append([]api.Job{}, in.Replicas[i].Jobs...)
					js[0].EndTime = api.FormatTime(t0.Add(45 * time.Second))
					in.Replicas[i].Jobs = js
				}
			},
			invariant: 4, want: []string{"job 1", "only 45s after faults stopped"},
		},
		{
			// Invariant 5: two replicas differ at the same index.
			name: "replicas differ",
			plant: func(in *Input) {
				in.Replicas[1].Status.StateHash = "abd"
			},
			invariant: 5, want: []string{"replicas differ at index 40", `[n2] hash "abd"`},
		},
		{
			// Invariant 5 is inconclusive when replicas never reach one index.
			name: "no common index",
			plant: func(in *Input) {
				in.Replicas[1].Status.HashIndex = 39
			},
			invariant: 5, inconclusive: true, want: []string{"never reached one applied index"},
		},
		{
			// Invariant 5 is inconclusive when a replica could not be read.
			name: "replica unread",
			plant: func(in *Input) {
				in.Replicas = in.Replicas[:1]
			},
			invariant: 5, inconclusive: true, want: []string{"node n2", "no final state"},
		},
		{
			// Invariant 5: a replica that diverged.
			name: "replica diverged",
			plant: func(in *Input) {
				in.Replicas[0].Status.Diverged = "apply 12: unknown command type 9"
			},
			invariant: 5, want: []string{"node n1", "diverged"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := cleanInput()
			tt.plant(&in)
			vs := Check(in)
			if len(vs) == 0 {
				t.Fatalf("Check = no violations; want invariant %d", tt.invariant)
			}
			v := vs[0]
			for _, o := range vs[1:] {
				if o.Invariant != tt.invariant {
					t.Errorf("Check also reported %s; want only invariant %d", o, tt.invariant)
				}
			}
			if v.Invariant != tt.invariant || v.Inconclusive != tt.inconclusive || v.Seed != 7 {
				t.Errorf("Check = %s; want invariant %d, inconclusive %v, seed 7", v, tt.invariant, tt.inconclusive)
			}
			s := v.String()
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("report %q lacks %q", s, w)
				}
			}
		})
	}
}

// TestCheckOverlapTimes: the double-booking report gives the overlap window.
func TestCheckOverlapTimes(t *testing.T) {
	in := cleanInput()
	in.Records = append(in.Records, rec("n1", []int{1}, 2, 1, 0, 2, 2.2, false))
	var vs []Violation
	for _, v := range Check(in) {
		if strings.Contains(v.Detail, "GPU held by two jobs") {
			vs = append(vs, v)
		}
	}
	if len(vs) != 1 {
		t.Fatalf("Check = %v; want one double booking", vs)
	}
	if got, want := vs[0].From, time.Unix(0, at(2)); !got.Equal(want) {
		t.Errorf("from = %v; want %v", got, want)
	}
	if got, want := vs[0].To, time.Unix(0, at(2.2)); !got.Equal(want) {
		t.Errorf("to = %v; want %v", got, want)
	}
	if vs[0].GPU != 1 {
		t.Errorf("gpu = %d; want 1", vs[0].GPU)
	}
}

func TestParseRecord(t *testing.T) {
	r, err := ParseRecord("n3 0,2 17 2 100 250 3 done")
	if err != nil {
		t.Fatal(err)
	}
	if r.Node != "n3" || len(r.GPUs) != 2 || r.GPUs[1] != 2 || r.Job != 17 || r.Incarnation != 2 ||
		r.Start != 100 || r.End != 250 || r.Rank != 3 || !r.Done {
		t.Errorf("ParseRecord = %+v", r)
	}
	if r, err := ParseRecord("n3 - 17 1 100 100 0 tick"); err != nil || r.GPUs != nil {
		t.Errorf("ParseRecord(no gpus) = %+v, %v; want no GPUs", r, err)
	}
	for _, bad := range []string{"", "n3 0 17 1 100 250 0", "n3 x 17 1 100 250 0 tick", "n3 0 17 1 300 250 0 tick", "n3 0 17 1 100 250 0 end"} {
		if _, err := ParseRecord(bad); err == nil {
			t.Errorf("ParseRecord(%q) = nil error; want one", bad)
		}
	}
}
