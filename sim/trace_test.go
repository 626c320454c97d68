package sim

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shoal-sched/shoal/cluster"
)

const traceHeader = "job_id,submit_time,duration_s,num_gpus,gpus_per_node,num_nodes,user,status,time_limit_s\n"

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Job
	}{{
		name: "full row",
		in:   traceHeader + "7,10,300,16,8,2,u1,completed,3600\n",
		want: []Job{{ID: "7", Submit: 10, Duration: 300, GPUs: 16, GPUsPerNode: 8, Nodes: 2, User: "u1", Status: "completed", TimeLimit: 3600}},
	}, {
		name: "optional fields empty",
		in:   traceHeader + "7,10,300,3,,,,,\n",
		want: []Job{{ID: "7", Submit: 10, Duration: 300, GPUs: 3}},
	}, {
		name: "nodes derived from gpus_per_node, and the reverse",
		in:   traceHeader + "a,0,1,12,4,,,,\nb,0,1,12,,2,,,\n",
		want: []Job{{ID: "a", Duration: 1, GPUs: 12, GPUsPerNode: 4, Nodes: 3}, {ID: "b", Duration: 1, GPUs: 12, GPUsPerNode: 6, Nodes: 2}},
	}, {
		name: "only required columns, in another order, with a BOM and extra columns",
		in:   "\ufeffnum_gpus,job_id,extra,duration_s,submit_time\n2,x,?,5,1\n",
		want: []Job{{ID: "x", Submit: 1, Duration: 5, GPUs: 2}},
	}, {
		name: "sorted by submit time, ties in file order",
		in:   traceHeader + "c,9,1,1,,,,,\nb,3,1,1,,,,,\na,3,1,1,,,,,\n",
		want: []Job{{ID: "b", Submit: 3, Duration: 1, GPUs: 1}, {ID: "a", Submit: 3, Duration: 1, GPUs: 1}, {ID: "c", Submit: 9, Duration: 1, GPUs: 1}},
	}, {
		name: "header only",
		in:   traceHeader,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("Parse() error %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse() diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	row := func(s string) string { return traceHeader + s + "\n" }
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty trace"},
		{"missing column", "job_id,submit_time,duration_s\n", `column "num_gpus" missing`},
		{"column twice", "job_id,submit_time,duration_s,num_gpus,num_gpus\n", `column "num_gpus" twice`},
		{"empty id", row(",0,1,1,,,,,"), "line 2: job_id: empty"},
		{"id too long", row(strings.Repeat("x", 300) + ",0,1,1,,,,,"), "job_id: 300 bytes"},
		{"duplicate id", row("a,0,1,1,,,,,") + "a,1,1,1,,,,,\n", `line 3: job_id "a": already on line 2`},
		{"submit not a number", row("a,soon,1,1,,,,,"), `line 2: submit_time "soon": want an integer from 0 to`},
		{"negative submit", row("a,-1,1,1,,,,,"), `submit_time "-1"`},
		{"fractional duration", row("a,0,1.5,1,,,,,"), `duration_s "1.5"`},
		{"empty duration", row("a,0,,1,,,,,"), "duration_s: empty"},
		{"duration too long", row("a,0,99999999999,1,,,,,"), `duration_s "99999999999"`},
		{"zero gpus", row("a,0,1,0,,,,,"), `num_gpus "0": want an integer from 1`},
		{"gpus_per_node too big", row("a,0,1,2048,2048,1,,,"), `gpus_per_node "2048"`},
		{"zero nodes", row("a,0,1,8,8,0,,,"), `num_nodes "0"`},
		{"negative limit", row("a,0,1,1,,,,,-5"), `time_limit_s "-5"`},
		{"shape disagrees", row("a,0,1,16,8,3,,,"), "gpus_per_node 8 x num_nodes 3: want num_gpus 16"},
		{"gpus_per_node does not divide", row("a,0,1,12,8,,,,"), "gpus_per_node 8: does not divide num_gpus 12"},
		{"num_nodes does not divide", row("a,0,1,12,,5,,,"), "num_nodes 5: does not divide num_gpus 12"},
		{"wrong field count", row("a,0,1"), "wrong number of fields"},
		{"bad quoting", row(`"a,0,1,1,,,,,`), "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse() = %v, %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	body := traceHeader + "a,0,10,8,8,1,,completed,\n"
	gzipped := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	files := map[string][]byte{
		"plain.csv":      []byte(body),
		"packed.csv.gz":  gzipped(body),
		"misnamed.csv":   gzipped(body), // gzip recognised by its magic bytes
		"broken.csv.gz":  []byte(body),
		"bad-row.csv.gz": gzipped(traceHeader + "a,0,x,1,,,,,\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := []Job{{ID: "a", Duration: 10, GPUs: 8, GPUsPerNode: 8, Nodes: 1, Status: "completed"}}
	tests := []struct {
		file    string
		wantErr string
	}{
		{"plain.csv", ""}, {"packed.csv.gz", ""}, {"misnamed.csv", ""},
		{"broken.csv.gz", "broken.csv.gz: gzip"},
		{"bad-row.csv.gz", `bad-row.csv.gz: line 2: duration_s "x"`},
		{"absent.csv", "absent.csv"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := Load(filepath.Join(dir, tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load() error %v; want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Load() diff (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadSharedTraces loads the shared traces, where present, and checks
// the job counts their README states.
func TestLoadSharedTraces(t *testing.T) {
	for file, n := range map[string]int{
		"alibaba_gpu_v2023_openb.csv": 6203,
		"philly_dirlab_subset.csv":    14236,
		"helios_dirlab_subset.csv":    10796,
	} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(traceDir, file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("trace absent: %v", err)
			}
			jobs, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != n {
				t.Errorf("Load(%s) = %d jobs; want %d", file, len(jobs), n)
			}
		})
	}
}

// FuzzParse: no input makes Parse panic, and what it accepts satisfies the
// documented invariants.
func FuzzParse(f *testing.F) {
	f.Add([]byte(traceHeader + "7,10,300,16,8,2,u1,completed,3600\n"))
	f.Add([]byte(traceHeader + "a,0,1,12,4,,,,\nb,0,1,12,,2,,,\n"))
	f.Add([]byte("num_gpus,job_id,duration_s,submit_time\n2,x,5,1\n3,y,1,0\n"))
	f.Add([]byte(traceHeader + "\"a\"\"b\",0,1,1,,,,,\n"))
	f.Add([]byte(handTrace))
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		ids := map[string]bool{}
		for i, j := range jobs {
			switch {
			case j.ID == "" || ids[j.ID]:
				t.Fatalf("job %d: empty or repeated ID %q", i, j.ID)
			case j.Submit < 0 || j.Submit > MaxSeconds || j.Duration < 0 || j.Duration > MaxSeconds:
				t.Fatalf("job %q: times out of range: %+v", j.ID, j)
			case j.GPUs < 1 || j.GPUs > MaxGPUs:
				t.Fatalf("job %q: GPUs %d", j.ID, j.GPUs)
			case (j.Nodes == 0) != (j.GPUsPerNode == 0) || (j.Nodes > 0 && j.Nodes*j.GPUsPerNode != j.GPUs):
				t.Fatalf("job %q: shape %dx%d for %d GPUs", j.ID, j.Nodes, j.GPUsPerNode, j.GPUs)
			}
			ids[j.ID] = true
		}
		if !slices.IsSortedFunc(jobs, func(a, b Job) int { return int(a.Submit - b.Submit) }) {
			t.Fatal("jobs not sorted by submit time")
		}
		// Whatever loads replays: requests are valid for cluster.Request.
		c := Cluster{Nodes: 2, GPUsPerNode: 4, LeafSize: 1, LeavesPerSpine: 1}
		for _, j := range jobs {
			if err := c.Request(j).Validate(); err != nil {
				t.Fatalf("job %q: request %+v: %v", j.ID, c.Request(j), err)
			}
		}
	})
}

func TestClusterRequest(t *testing.T) {
	c := Cluster{Nodes: 16, GPUsPerNode: 8, LeafSize: 4, LeavesPerSpine: 2}
	tests := []struct {
		name        string
		job         Job
		nodes, gpus int
	}{
		{"shape from the trace", Job{GPUs: 8, Nodes: 4, GPUsPerNode: 2}, 4, 2},
		{"shape from the trace, even if the nodes are smaller", Job{GPUs: 16, Nodes: 1, GPUsPerNode: 16}, 1, 16},
		{"fits one node", Job{GPUs: 3}, 1, 3},
		{"one full node", Job{GPUs: 8}, 1, 8},
		{"even split", Job{GPUs: 12}, 2, 6},
		{"whole nodes when the split is uneven", Job{GPUs: 9}, 2, 8},
		{"many nodes", Job{GPUs: 160}, 20, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.job.Duration = 30
			got := c.Request(tt.job)
			want := cluster.Request{Nodes: tt.nodes, GPUsPerNode: tt.gpus, TasksPerNode: 1, CPUsPerTask: 1, TimeLimit: 30e9}
			if !cmp.Equal(got, want) {
				t.Errorf("Request(%+v) = %+v; want %+v", tt.job, got, want)
			}
		})
	}
	if got := c.Request(Job{GPUs: 1}).TimeLimit; got != 1e9 {
		t.Errorf("Request(zero duration).TimeLimit = %v; want 1s (0 would mean unlimited)", got)
	}
}

func TestClusterBuild(t *testing.T) {
	c := Cluster{Nodes: 5, GPUsPerNode: 2, LeafSize: 2, LeavesPerSpine: 2}
	var got []string
	for _, n := range c.Build() {
		got = append(got, n.Name+"@"+n.Topology.SwitchParent+"/"+n.Topology.Switch+"/"+string(n.Status)+"/"+string(rune('0'+len(n.GPUs))))
	}
	want := []string{"n0000@spine000/leaf0000/up/2", "n0001@spine000/leaf0000/up/2", "n0002@spine000/leaf0001/up/2",
		"n0003@spine000/leaf0001/up/2", "n0004@spine001/leaf0002/up/2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build() diff (-want +got):\n%s", diff)
	}
	if got := (Cluster{Nodes: 12345}).NodeName(7); got != "n00007" {
		t.Errorf("NodeName(7) on 12345 nodes = %q; want n00007 (names sort in index order)", got)
	}
}

func TestClusterValidate(t *testing.T) {
	ok := Cluster{Nodes: 4, GPUsPerNode: 8, LeafSize: 2, LeavesPerSpine: 8}
	tests := []struct {
		name string
		edit func(*Cluster)
		want string
	}{
		{"ok", func(*Cluster) {}, ""},
		{"no nodes", func(c *Cluster) { c.Nodes = 0 }, "nodes 0"},
		{"too many nodes", func(c *Cluster) { c.Nodes = MaxNodes + 1 }, "nodes 1000001"},
		{"no gpus", func(c *Cluster) { c.GPUsPerNode = 0 }, "gpus-per-node 0"},
		{"too many gpus", func(c *Cluster) { c.GPUsPerNode = 2000 }, "gpus-per-node 2000"},
		{"leaf size", func(c *Cluster) { c.LeafSize = 0 }, "leaf-size 0"},
		{"leaves per spine", func(c *Cluster) { c.LeavesPerSpine = -1 }, "leaves-per-spine -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v; want %q", err, tt.want)
			}
		})
	}
}
