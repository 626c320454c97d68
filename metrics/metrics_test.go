package metrics

import (
	"bytes"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/gpu"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// view applies cmds to a fresh state and returns its view; a refusal
// fails the test.
func view(t *testing.T, cmds ...any) *fsm.View {
	t.Helper()
	s := fsm.New()
	for i, c := range cmds {
		var typ fsm.CmdType
		switch c.(type) {
		case fsm.UpsertNode:
			typ = fsm.CmdUpsertNode
		case fsm.SubmitJob:
			typ = fsm.CmdSubmitJob
		case fsm.Allocate:
			typ = fsm.CmdAllocate
		default:
			t.Fatalf("command %T not handled", c)
		}
		data, err := fsm.Encode(typ, c)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.Apply(uint64(i+1), data); r.Err != nil {
			t.Fatalf("apply %T: %v", c, r.Err)
		}
	}
	return s.View()
}

func spec(gpus int) cluster.Spec {
	return cluster.Spec{
		Name: "train", Command: []string{"true"},
		Request: cluster.Request{Nodes: 1, GPUsPerNode: gpus}.WithDefaults(),
		User:    "ada", UID: 1000, GID: 1000,
	}
}

// TestSamples checks what a reading exports: the scheduler's gauges only
// on the leader, this node's resources from the replicated state, the
// lease age from the clock given.
func TestSamples(t *testing.T) {
	node := cluster.Node{
		Name: "n1", APIAddr: "127.0.0.1:7000", CPUs: 8, MemoryMiB: 1024,
		GPUs: []cluster.GPU{{Index: 0, UUID: "g0"}, {Index: 1, UUID: "g1"}, {Index: 2, UUID: "g2"}, {Index: 3, UUID: "g3"}},
	}
	v := view(t,
		fsm.UpsertNode{Node: node, Time: t0},
		fsm.SubmitJob{RequestID: "a", Spec: spec(2), Time: t0},
		fsm.SubmitJob{RequestID: "b", Spec: spec(4), Time: t0},
		fsm.SubmitJob{RequestID: "c", Spec: spec(4), Time: t0},
		fsm.Allocate{Time: t0, Decisions: []fsm.Decision{{Job: 1, Nodes: []fsm.Placement{{Node: "n1", GPUs: []int{0, 1}}}}}},
	)
	base := Reading{
		Now: t0.Add(3 * time.Second), Node: "n1", View: v,
		Raft:               RaftReading{Term: 4, LastIndex: 10, CommitIndex: 9, AppliedIndex: 8, Voters: 3, Nonvoters: 1},
		RaftConfigReadable: true,
		Members: []gossip.Member{
			{Name: "n1", Status: gossip.StatusAlive}, {Name: "n2", Status: gossip.StatusAlive},
			{Name: "n3", Status: gossip.StatusFailed},
		},
		ProbeFailures: 3, HealthScore: 1,
		TasksRunning: 2, LastRenew: t0.Add(time.Second), LeaseTTL: 10 * time.Second, LeaseRenewals: 7,
		Placements: 5, Preemptions: 1, Fencings: 0, RaftLeaderChanges: 2,
	}
	common := []Sample{
		{RaftTerm, nil, 4}, {RaftLastIndex, nil, 10}, {RaftCommitIndex, nil, 9}, {RaftAppliedIndex, nil, 8},
	}
	afterLeader := []Sample{
		{RaftVoters, nil, 3}, {RaftNonvoters, nil, 1}, {RaftLeaderChanges, nil, 2},
		{GossipMembers, []string{"alive"}, 2}, {GossipMembers, []string{"failed"}, 1},
		{GossipMembers, []string{"left"}, 0}, {GossipMembers, []string{"suspect"}, 0},
		{GossipProbeFailures, nil, 3}, {GossipHealthScore, nil, 1},
	}
	nodeSamples := []Sample{
		{SchedPlacements, nil, 5}, {SchedPreemptions, nil, 1},
		{NodeGPUs, nil, 4}, {NodeGPUsAllocated, nil, 2}, {NodeCPUs, nil, 8}, {NodeCPUsAllocated, nil, 0},
		{NodeMemoryBytes, nil, 1024 << 20}, {NodeMemoryAllocated, nil, 0},
		{NodeTasksRunning, nil, 2}, {NodeLeaseAge, nil, 2}, {NodeLeaseTTL, nil, 10}, {NodeFencings, nil, 0},
		{LeaseRenewals, nil, 7},
	}
	cat := func(parts ...[]Sample) []Sample { return slices.Concat(parts...) }

	follower := base
	leader := base
	leader.Leader = true
	withGPU := base
	withGPU.GPU = &GPUReading{
		Samples: []gpu.Sample{
			{Index: 0, Utilization: 0.5, MemoryUsedBytes: 100, TemperatureC: 50, PowerWatts: 300},
			{Index: 1, Utilization: 0.25, MemoryUsedBytes: 50},
			{Index: 2},
		},
		Holders: GPUHolders(v.Jobs(), "n1"),
	}
	noState := base
	noState.View, noState.LastRenew, noState.RaftConfigReadable = nil, time.Time{}, false

	for _, tc := range []struct {
		name string
		in   Reading
		want []Sample
	}{
		{"follower", follower, cat(common, []Sample{{RaftLeader, nil, 0}}, afterLeader, nodeSamples)},
		{"leader", leader, cat(common, []Sample{{RaftLeader, nil, 1}}, afterLeader,
			// Job 1 holds GPUs; jobs 2 and 3 wait without a reason yet.
			[]Sample{{SchedJobsPending, []string{"None"}, 2}, {SchedJobsRunning, nil, 1}}, nodeSamples)},
		{"no readable state", noState, cat(common, []Sample{{RaftLeader, nil, 0}},
			[]Sample{{RaftLeaderChanges, nil, 2}}, afterLeader[3:],
			[]Sample{{SchedPlacements, nil, 5}, {SchedPreemptions, nil, 1}, {NodeTasksRunning, nil, 2}, {NodeFencings, nil, 0}, {LeaseRenewals, nil, 7}})},
		{"gpus sampled", withGPU, cat(common, []Sample{{RaftLeader, nil, 0}}, afterLeader, nodeSamples[:8],
			[]Sample{
				{NodeGPUUtilization, []string{"0"}, 0.5}, {NodeGPUMemoryUsed, []string{"0"}, 100},
				{NodeGPUTemperature, []string{"0"}, 50}, {NodeGPUPower, []string{"0"}, 300},
				{NodeGPUUtilization, []string{"1"}, 0.25}, {NodeGPUMemoryUsed, []string{"1"}, 50},
				{NodeGPUUtilization, []string{"2"}, 0}, {NodeGPUMemoryUsed, []string{"2"}, 0},
				// Job 1 holds GPUs 0 and 1: their mean and total.
				{JobGPUUtilization, []string{"1", "ada"}, 0.375}, {JobGPUMemoryUsed, []string{"1", "ada"}, 150},
			}, nodeSamples[8:])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Samples(tc.in), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Samples (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTable checks the names against Prometheus's conventions: the shoal_
// prefix, _total on counters only, base units, no duplicates.
func TestTable(t *testing.T) {
	valid := regexp.MustCompile(`^shoal_[a-z]+(_[a-z]+)*$`)
	seen := map[string]bool{}
	for _, d := range Table {
		if !valid.MatchString(d.Name) {
			t.Errorf("%s: not shoal_ and lower-case words", d.Name)
		}
		if seen[d.Name] {
			t.Errorf("%s: twice in Table", d.Name)
		}
		seen[d.Name] = true
		if (d.Kind == Counter) != strings.HasSuffix(d.Name, "_total") {
			t.Errorf("%s: counters, and only counters, end in _total", d.Name)
		}
		if strings.Contains(d.Name, "_ms") || strings.Contains(d.Name, "mib") {
			t.Errorf("%s: not in base units", d.Name)
		}
		if d.Help == "" || d.Scope == "" {
			t.Errorf("%s: no help or scope", d.Name)
		}
	}
}

// TestREADMEListsEveryMetric keeps the README's table and Table the same.
func TestREADMEListsEveryMetric(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(shoal_[a-z_]+)`").FindAllSubmatch(b, -1) {
		listed[string(m[1])] = true
	}
	for _, d := range Table {
		if !listed[d.Name] {
			t.Errorf("%s: not in the README's metrics table", d.Name)
		}
		delete(listed, d.Name)
	}
	for name := range listed {
		t.Errorf("%s: in the README's metrics table but not exported", name)
	}
}

// TestExpositionPassesPromtool serves a registry and checks its output
// with Prometheus's own promtool (Debian's prometheus package).
func TestExpositionPassesPromtool(t *testing.T) {
	m := New(func() Reading {
		return Reading{Now: t0, Node: "n1", Leader: true, Members: []gossip.Member{{Name: "n1", Status: gossip.StatusAlive}},
			GPU: &GPUReading{
				Samples: []gpu.Sample{{Index: 0, Utilization: 0.5, MemoryUsedBytes: 1 << 30, TemperatureC: 40, PowerWatts: 200}},
				Holders: map[int]JobRef{0: {ID: 7, User: "ada"}},
			}}
	})
	m.Applied(3 * time.Millisecond)
	m.Passed(time.Millisecond)
	m.Started(2 * time.Second)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Table {
		if d.Scope == theLeader || d.Name == NodeLeaseAge || d.Name == NodeLeaseTTL || d.Name == RaftVoters || d.Name == RaftNonvoters ||
			d.Name == NodeGPUs || d.Name == NodeGPUsAllocated || d.Name == NodeCPUs || d.Name == NodeCPUsAllocated ||
			d.Name == NodeMemoryBytes || d.Name == NodeMemoryAllocated {
			continue // need a state, a lease or raft's configuration
		}
		if !bytes.Contains(body, []byte("\n"+d.Name)) {
			t.Errorf("%s missing from the exposition", d.Name)
		}
	}
	for _, want := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("%s (client_golang's collectors) missing", want)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian's prometheus package, installed by .ci/run): %v", err)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
