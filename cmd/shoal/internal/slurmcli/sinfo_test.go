package slurmcli

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

func testNodes() []api.Node {
	return []api.Node{
		{Name: "n10", State: "IDLE", GPUs: 8, GPUsFree: 8, CPUs: 16, MemoryMiB: 16000},
		{Name: "n1", State: "MIXED", GPUs: 8, GPUsFree: 4, CPUs: 16, MemoryMiB: 16000},
		{Name: "n2", State: "MIXED", GPUs: 8, GPUsFree: 2, CPUs: 16, MemoryMiB: 16000},
		{Name: "n3", State: "DRAIN", GPUs: 8, GPUsFree: 8, CPUs: 16, MemoryMiB: 16000, Reason: "bad gpu"},
		{Name: "n4", State: "DOWN", GPUs: 8, GPUsFree: 8, CPUs: 16, MemoryMiB: 16000},
		{Name: "n5", State: "IDLE", GPUs: 8, GPUsFree: 8, CPUs: 16, MemoryMiB: 16000},
		{Name: "n6", State: "ALLOCATED", GPUs: 8, GPUsFree: 0, CPUs: 16, MemoryMiB: 16000},
	}
}

func renderSinfo(t *testing.T, format string, nodeView bool) string {
	t.Helper()
	cols, err := parseSinfoFormat(format)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	nodes, err := sinfoNodes(testNodes(), cluster.PolicyFile{})
	if err != nil {
		t.Fatal(err)
	}
	printSinfo(&b, cols, sinfoRows(cols, nodes, nodeView), true)
	return b.String()
}

func TestSinfoFormats(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		nodeView     bool
		want         string
	}{
		{"default", sinfoDefaultFormat, false, "" +
			"PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n" +
			"shoal*       up   infinite      1  drain n3\n" +
			"shoal*       up   infinite      2    mix n[1-2]\n" +
			"shoal*       up   infinite      1  alloc n6\n" +
			"shoal*       up   infinite      2   idle n[5,10]\n" +
			"shoal*       up   infinite      1  down* n4\n"},
		{"-N -l", sinfoNodeLongFormat, true, "" +
			"NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON              \n" +
			"n1             1    shoal*       mixed 16     1:16:1  16000        0      1   (null) none                \n" +
			"n2             1    shoal*       mixed 16     1:16:1  16000        0      1   (null) none                \n" +
			"n3             1    shoal*     drained 16     1:16:1  16000        0      1   (null) bad gpu             \n" +
			"n4             1    shoal*       down* 16     1:16:1  16000        0      1   (null) Not responding      \n" +
			"n5             1    shoal*        idle 16     1:16:1  16000        0      1   (null) none                \n" +
			"n6             1    shoal*   allocated 16     1:16:1  16000        0      1   (null) none                \n" +
			"n10            1    shoal*        idle 16     1:16:1  16000        0      1   (null) none                \n"},
		{"-N", sinfoNodeFormat, true, "" +
			"NODELIST   NODES PARTITION STATE \n" +
			"n1             1    shoal* mix   \n" +
			"n2             1    shoal* mix   \n" +
			"n3             1    shoal* drain \n" +
			"n4             1    shoal* down* \n" +
			"n5             1    shoal* idle  \n" +
			"n6             1    shoal* alloc \n" +
			"n10            1    shoal* idle  \n"},
		{"summarize", sinfoSummarizeFmt, false, "" +
			"PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n" +
			"shoal*       up   infinite          3/2/2/7 n[1-6,10]\n"},
		{"gres", "%N %G %c %m", false, "" +
			"NODELIST GRES CPUS MEMORY\n" +
			"n[1-6,10] gpu:8 16 16000\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderSinfo(t, tc.format, tc.nodeView); got != tc.want {
				t.Errorf("sinfo -o %q:\n%s\nwant:\n%s", tc.format, got, tc.want)
			}
		})
	}
	if _, err := parseSinfoFormat("%P %Y"); err == nil {
		t.Error("an unknown sinfo field was accepted")
	}
}

// TestSinfoDraining: a drained node that still runs a job is "drng".
func TestSinfoDraining(t *testing.T) {
	c, l, _ := sinfoState(api.Node{State: "DRAIN", GPUs: 8, GPUsFree: 6})
	if c != "drng" || l != "draining" {
		t.Errorf("busy drained node = %s/%s; want drng/draining", c, l)
	}
	q := sinfoQuery{states: []string{"drain"}}
	if !q.match(sinfoNode{Node: api.Node{State: "DRAIN", GPUs: 8, GPUsFree: 6}}) || q.match(sinfoNode{Node: api.Node{State: "IDLE"}}) {
		t.Error("-t drain does not select exactly the drained nodes")
	}
}

// TestSinfoPartitions: with partitions in the queue policy, sinfo shows
// a row per partition (and state), the default one starred, with its
// time limit; a node in two partitions shows in both; -p keeps some.
func TestSinfoPartitions(t *testing.T) {
	pol := cluster.PolicyFile{Partitions: map[string]cluster.PartitionFile{
		"gpu":   {Nodes: "n[1-3]", Default: true, MaxTime: "2-00:00:00"},
		"debug": {Nodes: "n3", MaxTime: "30:00"},
	}}
	var nodes []api.Node
	for i := 1; i <= 3; i++ {
		nodes = append(nodes, api.Node{Name: fmt.Sprintf("n%d", i), State: "IDLE", GPUs: 2, GPUsFree: 2})
	}
	all, err := sinfoNodes(nodes, pol)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := parseSinfoFormat(sinfoDefaultFormat)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printSinfo(&b, cols, sinfoRows(cols, all, false), false)
	got := strings.Fields(b.String())
	want := strings.Fields(`debug up 30:00 1 idle n3
		gpu* up 2-00:00:00 3 idle n[1-3]`)
	if !slices.Equal(got, want) {
		t.Errorf("sinfo:\n%s\nwant the fields %v", b.String(), want)
	}
	q := sinfoQuery{parts: []string{"debug"}}
	var kept []string
	for _, n := range all {
		if q.match(n) {
			kept = append(kept, n.Name)
		}
	}
	if !slices.Equal(kept, []string{"n3"}) {
		t.Errorf("-p debug kept %v; want n3", kept)
	}
	if _, err := sinfoNodes(nodes, cluster.PolicyFile{Partitions: map[string]cluster.PartitionFile{"x": {Nodes: "n[1-"}}}); err == nil {
		t.Error("a bad partition hostlist was accepted")
	}
}
