package test

import (
	"fmt"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestFormAndGrow: three agents form a cluster with --bootstrap-expect 3; a
// 4th joins with --join and becomes a nonvoter; with 5 nodes all 5 vote,
// spread over both switches.
func TestFormAndGrow(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 5, Initial: 3, GPUsPerNode: 8, LeafSize: 3})
	roles := func(want map[string]string) func() error {
		return func() error {
			ns := nodesByName(t, c.Agents[0])
			for name, role := range want {
				n, ok := ns[name]
				if !ok {
					return fmt.Errorf("node %s not registered", name)
				}
				if role == "voter" && n.Raft == "leader" {
					continue
				}
				if n.Raft != role {
					return fmt.Errorf("node %s is %s, want %s", name, n.Raft, role)
				}
			}
			return nil
		}
	}
	eventually(t, 20*time.Second, "3 voters", roles(map[string]string{"n1": "voter", "n2": "voter", "n3": "voter"}))

	if err := c.StartAgent(3); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "n4 a nonvoter", roles(map[string]string{"n1": "voter", "n2": "voter", "n3": "voter", "n4": "nonvoter"}))

	if err := c.StartAgent(4); err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"n1": "voter", "n2": "voter", "n3": "voter", "n4": "voter", "n5": "voter"}
	eventually(t, 30*time.Second, "5 voters", roles(all))
	switches := map[string]bool{}
	for _, n := range nodesByName(t, c.Agents[0]) {
		switches[n.Switch] = true
		if n.State != "IDLE" || n.GPUs != 8 || n.SwitchParent != "spine0" {
			t.Errorf("node %s = %+v; want IDLE with 8 GPUs under spine0", n.Name, n)
		}
	}
	if len(switches) != 2 {
		t.Errorf("voters on switches %v; want both leaf0 and leaf1", switches)
	}
	var ms []api.Member
	jsonOf(t, c.Agents[3], &ms, "members")
	if len(ms) != 5 {
		t.Errorf("members seen by n4 = %d; want 5: %+v", len(ms), ms)
	}
}

// envScript prints the rank contract, one KEY=VALUE a line, prefixed so
// lines from different ranks can be told apart.
const envScript = `for k in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK MASTER_ADDR MASTER_PORT CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_JOB_NAME SLURM_JOB_NODELIST SLURM_NNODES SLURM_JOB_NUM_NODES SLURM_NTASKS SLURM_NTASKS_PER_NODE SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_GPUS_ON_NODE SLURMD_NODENAME SHOAL_JOB_ID; do eval "v=\${$k-UNSET}"; echo "env $RANK $k=$v"; done`

// TestGangJob: a 2-node gang job runs with the environment contract on
// every rank, ends COMPLETED, and its output is readable from any node.
func TestGangJob(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 4, GPUsPerNode: 8})
	id := submit(t, c.Agents[1], "--name", "gang", "--nodes", "2", "--gpus-per-node", "4",
		"--ntasks-per-node", "2", "--", "/bin/sh", "-c", envScript)
	j := waitJob(t, c.Agents[2], id, 30*time.Second)
	if j.State != "COMPLETED" || j.ExitCode != 0 {
		t.Fatalf("job %d = %s exit %d; want COMPLETED exit 0", id, j.State, j.ExitCode)
	}
	// The agent took the user from the Unix socket's peer credentials.
	if me, err := user.Current(); err != nil || j.User != me.Username {
		t.Errorf("job %d user = %q; want the submitting user (%v)", id, j.User, me)
	}
	if len(j.Nodes) != 2 || j.MasterPort == 0 {
		t.Fatalf("job %d nodes %v master port %d; want 2 nodes and a port", id, j.Nodes, j.MasterPort)
	}
	// Placement keeps a 2-node job under one leaf switch when one fits it.
	ns := nodesByName(t, c.Agents[0])
	if ns[j.Nodes[0]].Switch != ns[j.Nodes[1]].Switch {
		t.Errorf("job %d spans switches %s and %s; want one leaf", id, ns[j.Nodes[0]].Switch, ns[j.Nodes[1]].Switch)
	}
	for _, n := range j.Nodes {
		if len(j.GPUs[n]) != 4 {
			t.Errorf("job %d has GPUs %v on %s; want 4", id, j.GPUs[n], n)
		}
	}

	// Every agent, in the allocation or not, serves the same output.
	var outputs []string
	for _, a := range c.Agents {
		outputs = append(outputs, mustShoal(t, a, "logs", strconv.FormatUint(id, 10)))
	}
	for i := 1; i < len(outputs); i++ {
		if outputs[i] != outputs[0] {
			t.Errorf("logs via %s differ from logs via n1:\n%s\nvs\n%s", c.Agents[i].Name, outputs[i], outputs[0])
		}
	}
	env := map[int]map[string]string{}
	for _, line := range strings.Split(outputs[0], "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "env" {
			continue
		}
		rank, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		k, v, _ := strings.Cut(f[2], "=")
		if env[rank] == nil {
			env[rank] = map[string]string{}
		}
		env[rank][k] = v
	}
	if len(env) != 4 {
		t.Fatalf("got output of ranks %v; want 4 ranks:\n%s", keys(env), outputs[0])
	}
	nodelist := fmt.Sprintf("n[%s-%s]", strings.TrimPrefix(j.Nodes[0], "n"), strings.TrimPrefix(j.Nodes[1], "n"))
	if !(j.Nodes[0] < j.Nodes[1]) {
		t.Fatalf("job %d nodes %v not in name order", id, j.Nodes)
	}
	for rank := range 4 {
		nodeRank, local := rank/2, rank%2
		node := j.Nodes[nodeRank]
		want := map[string]string{
			"RANK": fmt.Sprint(rank), "WORLD_SIZE": "4", "LOCAL_RANK": fmt.Sprint(local), "LOCAL_WORLD_SIZE": "2",
			"NODE_RANK": fmt.Sprint(nodeRank), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": fmt.Sprint(j.MasterPort),
			"CUDA_VISIBLE_DEVICES": cluster.IndexCSV(j.GPUs[node]),
			"SLURM_JOB_ID":         fmt.Sprint(id), "SLURM_JOB_NAME": "gang", "SLURM_JOB_NODELIST": nodelist,
			"SLURM_NNODES": "2", "SLURM_JOB_NUM_NODES": "2", "SLURM_NTASKS": "4", "SLURM_NTASKS_PER_NODE": "2",
			"SLURM_PROCID": fmt.Sprint(rank), "SLURM_LOCALID": fmt.Sprint(local), "SLURM_NODEID": fmt.Sprint(nodeRank),
			"SLURM_GPUS_ON_NODE": "4", "SLURMD_NODENAME": node, "SHOAL_JOB_ID": fmt.Sprint(id),
		}
		for k, v := range want {
			if got := env[rank][k]; got != v {
				t.Errorf("rank %d: %s=%q; want %q", rank, k, got, v)
			}
		}
	}
}

func keys[V any](m map[int]V) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// TestLeaderKill: kill -9 of the leader elects a new one; no acknowledged
// job is lost (DESIGN invariant 2); submits work through any survivor; the
// killed node restarts from its data dir and rejoins.
func TestLeaderKill(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 8})
	var ids []uint64
	for i := range 3 {
		// --requeue: a job placed on the leader's node and killed with it
		// before its exit was reported runs again instead of ending
		// NODE_FAIL, so every acknowledged job must end COMPLETED.
		id := submit(t, c.Agents[i], "--requeue", "--name", fmt.Sprintf("pre%d", i), "--", "true")
		// Read your writes: the agent that acknowledged a submit shows the
		// job at once, leader or follower.
		mustShoal(t, c.Agents[i], "job", fmt.Sprint(id))
		ids = append(ids, id)
	}
	old := leaderIndex(t, c, 0)
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	survivor := c.Agents[(old+1)%3]
	eventually(t, 20*time.Second, "a new leader", func() error {
		r := shoal(t, survivor, "leader", "--json")
		if r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		if strings.Contains(r.stdout, c.Agents[old].Name+`"`) {
			return fmt.Errorf("still the old leader: %s", r.stdout)
		}
		return nil
	})
	for i, a := range c.Agents {
		if i == old {
			continue
		}
		ids = append(ids, submit(t, a, "--name", "post", "--", "true"))
	}
	if err := c.Restart(old); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		j := waitJob(t, c.Agents[old], id, 30*time.Second)
		if j.State != "COMPLETED" {
			t.Errorf("job %d = %s; want COMPLETED", id, j.State)
		}
	}
	eventually(t, 20*time.Second, "restarted node up", func() error {
		n := nodesByName(t, survivor)[c.Agents[old].Name]
		if n.State == "DOWN" || n.Raft == "none" {
			return fmt.Errorf("node %s is %s/%s", n.Name, n.State, n.Raft)
		}
		return nil
	})
	// DESIGN invariant 5: once writes stop, every replica, the restarted
	// one included, reaches the same state hash at the same index.
	eventually(t, 20*time.Second, "replicas agree", func() error {
		var first api.Status
		for i, a := range c.Agents {
			var st api.Status
			r := shoal(t, a, "status", "--json")
			if r.code != 0 {
				return fmt.Errorf("%s: %s", a.Name, r.stderr)
			}
			if err := jsonUnmarshal(r.stdout, &st); err != nil {
				return err
			}
			if i == 0 {
				first = st
				continue
			}
			if st.HashIndex != first.HashIndex || st.StateHash != first.StateHash {
				return fmt.Errorf("%s at %d has %s; %s at %d has %s", a.Name, st.HashIndex, st.StateHash[:12],
					first.Name, first.HashIndex, first.StateHash[:12])
			}
		}
		return nil
	})
}

// TestFullRestart: every agent stopped and restarted from its data dir
// keeps the queue and the job history (nothing acknowledged is lost).
func TestFullRestart(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 4})
	done := submit(t, c.Agents[0], "--name", "done", "--nodes", "3", "--gpus-per-node", "4", "--", "/bin/sh", "-c", "echo finished $RANK")
	before := waitJob(t, c.Agents[0], done, 30*time.Second)
	if before.State != "COMPLETED" {
		t.Fatalf("job %d = %s; want COMPLETED", done, before.State)
	}
	// Hold every GPU with a long job, so the next one stays pending.
	long := submit(t, c.Agents[1], "--name", "long", "--nodes", "3", "--gpus-per-node", "4", "--", "sleep", "600")
	pending := submit(t, c.Agents[2], "--name", "queued", "--nodes", "1", "--gpus-per-node", "1", "--", "true")
	waitState(t, c.Agents[0], long, "RUNNING", "")
	var queueBefore []api.Job
	jsonOf(t, c.Agents[0], &queueBefore, "queue", "--all")

	c.Stop(15 * time.Second)
	for i := range c.Agents {
		if err := c.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	var queueAfter []api.Job
	eventually(t, 30*time.Second, "queue readable after restart", func() error {
		r := shoal(t, c.Agents[0], "queue", "--all", "--json")
		if r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		return jsonUnmarshal(r.stdout, &queueAfter)
	})
	if len(queueAfter) != len(queueBefore) {
		t.Fatalf("after restart %d jobs; before %d", len(queueAfter), len(queueBefore))
	}
	after := waitJob(t, c.Agents[1], done, 10*time.Second)
	if after.State != before.State || after.EndTime != before.EndTime || fmt.Sprint(after.GPUs) != fmt.Sprint(before.GPUs) {
		t.Errorf("finished job after restart = %+v; before %+v", after, before)
	}
	// A stopping agent stops its ranks (they must not outlive the agent that
	// answers for them), so the running job ended NODE_FAIL, reported before
	// or after the restart.
	if j := waitJob(t, c.Agents[2], long, 30*time.Second); j.State != "NODE_FAIL" {
		t.Errorf("job %d running across a full stop = %s; want NODE_FAIL", long, j.State)
	}
	j := waitJob(t, c.Agents[0], pending, 30*time.Second)
	if j.State != "COMPLETED" {
		t.Errorf("queued job %d = %s; want COMPLETED once the GPUs were free", pending, j.State)
	}
}

// TestSubmitRetryAcrossLeaderChange: the same request id submitted before
// and after a leader change yields exactly one job (invariant 2).
func TestSubmitRetryAcrossLeaderChange(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 8})
	old := leaderIndex(t, c, 0)
	follower := c.Agents[(old+1)%3]
	other := c.Agents[(old+2)%3]
	first := submit(t, follower, "--request-id", "retry-me", "--", "true")
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	var second uint64
	eventually(t, 20*time.Second, "resubmit through the other survivor", func() error {
		r := shoal(t, other, "submit", "--parsable", "--request-id", "retry-me", "--", "true")
		if r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		_, err := fmt.Sscan(r.stdout, &second)
		return err
	})
	if second != first {
		t.Fatalf("resubmit gave job %d; want the first submit's %d", second, first)
	}
	var all []api.Job
	jsonOf(t, other, &all, "queue", "--all")
	if len(all) != 1 {
		t.Fatalf("queue has %d jobs; want exactly 1: %+v", len(all), all)
	}
}
