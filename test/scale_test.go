package test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/scale"
)

// TestScale runs the scale harness (`shoal bench scale`) on 40 agent
// processes and checks what must hold at any size, not how fast: every
// agent lists all 40 alive, the raft layout settles to 5 voters and 2
// nonvoters with every other node a worker, a 20-node gang runs a rank on each of its
// nodes, and after kill -9 of the leader every survivor names the same
// new leader and a submit through a survivor succeeds. The harness stops
// every agent it started, also when a step fails.
func TestScale(t *testing.T) {
	const nodes = 40
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := scale.Run(ctx, scale.Options{
		Binary: shoalBin, Dir: t.TempDir(), Nodes: nodes, GPUsPerNode: 2, LeafSize: 8,
		Submits: 20, Clients: 2, LatencyRuns: 2, Settle: time.Second, Rest: 2 * time.Second, Wait: 2 * time.Minute,
		ExtraArgs: []string{"--dev-timing", "--log-level", "warn"},
		Logf:      t.Logf,
	})
	t.Logf("report: %+v", rep)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"formation", "rest", "throughput", "latency", "gang", "failover"}; !slices.Equal(rep.Steps, want) {
		t.Errorf("steps %q; want %q", rep.Steps, want)
	}
	if l := rep.Layout; l.Voters != 5 || l.Nonvoters != 2 || l.Workers != nodes-7 || l.Up != nodes {
		t.Errorf("layout %+v; want 5 voters, 2 nonvoters, %d workers, %d up", l, nodes-7, nodes)
	}
	if g := rep.Gang; g.State != "COMPLETED" || g.Nodes != nodes/2 || g.Ranks != nodes/2 {
		t.Errorf("gang %+v; want COMPLETED with a rank on each of %d nodes", g, nodes/2)
	}
	fo := rep.Failover
	if fo.NewLeader == "" || fo.NewLeader == fo.OldLeader {
		t.Errorf("failover %+v: want a new leader", fo)
	}
	if rep.SubmitsFailed != 0 || rep.SubmitToStart.N != 2 {
		t.Errorf("%d submits failed, %d latency samples; want 0 and 2", rep.SubmitsFailed, rep.SubmitToStart.N)
	}
	// The leader's exposition answers, with at least a per-GPU gauge for
	// each of its own 8 GPUs.
	if rep.Scrape.N == 0 || rep.ScrapeSamples < 8 {
		t.Errorf("/metrics scraped %d times, %d samples; want some scrapes of 8 samples or more", rep.Scrape.N, rep.ScrapeSamples)
	}
}

// TestScaleInProcess runs `shoal bench scale --in-process` as a user
// would, with 12 agents in its one process, and checks the same facts
// from its JSON report: every step ran, the layout settled to 5 voters,
// 2 nonvoters and 5 workers, the 6-node gang ran a rank on each node, and
// after the leader's crash a survivor names a new one.
func TestScaleInProcess(t *testing.T) {
	const nodes = 12
	rep := benchScale(t, "--in-process", nodes)
	if want := []string{"formation", "rest", "throughput", "latency", "gang", "failover"}; !slices.Equal(rep.Steps, want) || !rep.InProcess {
		t.Errorf("steps %q, in process %t; want %q in process", rep.Steps, rep.InProcess, want)
	}
	if l := rep.Layout; l.Voters != 5 || l.Nonvoters != 2 || l.Workers != nodes-7 || l.Up != nodes {
		t.Errorf("layout %+v; want 5 voters, 2 nonvoters, %d workers, %d up", l, nodes-7, nodes)
	}
	if g := rep.Gang; g.State != "COMPLETED" || g.Ranks != nodes/2 {
		t.Errorf("gang %+v; want COMPLETED with a rank on each of %d nodes", g, nodes/2)
	}
	if fo := rep.Failover; fo.NewLeader == "" || fo.NewLeader == fo.OldLeader {
		t.Errorf("failover %+v: want a new leader", fo)
	}
	if rep.ProcessRSSMiB <= 0 || rep.LeaderTCPBytesPerS <= 0 {
		t.Errorf("process RSS %v MiB, leader TCP %v bytes/s; want both measured", rep.ProcessRSSMiB, rep.LeaderTCPBytesPerS)
	}
}

// TestScaleHybrid runs `shoal bench scale --hybrid` with 12 agents: the
// first 7 as processes, the other 5 in the harness's process at nice 19
// with --raft-eligible=false. The raft layout must settle on the seven
// processes alone (5 voters, 2 nonvoters; that such a node is never
// given a seat, DESIGN: membership and roles, is TestRaftSeat's and
// consensus' Candidates tests': here the servers also start first), the
// gang runs on workers and servers alike, and after kill -9 of the
// leader (a process) every survivor names a new one.
func TestScaleHybrid(t *testing.T) {
	const nodes, servers = 12, 7
	rep := benchScale(t, "--hybrid", nodes)
	if want := []string{"formation", "rest", "throughput", "latency", "gang", "failover"}; !slices.Equal(rep.Steps, want) || !rep.Hybrid || rep.WorkerNice != 19 {
		t.Errorf("steps %q, hybrid %t, nice %d; want %q, hybrid, nice 19", rep.Steps, rep.Hybrid, rep.WorkerNice, want)
	}
	l := rep.Layout
	if l.Voters != 5 || l.Nonvoters != 2 || l.Workers != nodes-servers || l.Up != nodes {
		t.Errorf("layout %+v; want 5 voters, 2 nonvoters, %d workers, %d up", l, nodes-servers, nodes)
	}
	for _, s := range l.Servers {
		if n, err := strconv.Atoi(strings.TrimPrefix(s, "n")); err != nil || n > servers {
			t.Errorf("raft server %s; want only n1 to n%d (the processes)", s, servers)
		}
	}
	if rep.SharedAgents != nodes-servers || rep.ProcessRSSMiB <= 0 || rep.RSSMiBLeader <= 0 {
		t.Errorf("%d agents in the harness's process, its RSS %v MiB, the leader's %v MiB; want %d and both measured",
			rep.SharedAgents, rep.ProcessRSSMiB, rep.RSSMiBLeader, nodes-servers)
	}
	if g := rep.Gang; g.State != "COMPLETED" || g.Ranks != nodes/2 {
		t.Errorf("gang %+v; want COMPLETED with a rank on each of %d nodes", g, nodes/2)
	}
	if fo := rep.Failover; fo.NewLeader == "" || fo.NewLeader == fo.OldLeader {
		t.Errorf("failover %+v: want a new leader", fo)
	}
}

// benchScale runs `shoal bench scale` in mode (--in-process, --hybrid)
// with nodes agents, small enough for CI, as a user would, and returns
// its JSON report.
func benchScale(t *testing.T, mode string, nodes int) scale.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")
	cmd := exec.CommandContext(ctx, shoalBin, "bench", "scale", mode, "--nodes", strconv.Itoa(nodes),
		"--gpus-per-node", "2", "--leaf-size", "4", "--submits", "20", "--clients", "2", "--latency-runs", "2",
		"--settle", "1s", "--rest", "2s", "--wait", "2m", "--dev-timing", "--dir", filepath.Join(dir, "agents"), "--json", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shoal bench scale %s: %v\n%s", mode, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep scale.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	return rep
}
