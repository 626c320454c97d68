package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// heartbeatScript has each rank append a timestamp (ns) to its own record
// file every 100 ms: long in the first run, short after a restart. A rank
// killed with SIGKILL leaves its last moment alive on record.
const heartbeatScript = `f=%s/$SLURMD_NODENAME.$SHOAL_INCARNATION.$RANK
if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then n=600; else n=10; fi
i=0; while [ $i -lt $n ]; do date +%%s%%N >> $f; sleep 0.1; i=$((i+1)); done`

// record is one rank's heartbeat file.
type record struct {
	node        string
	incarnation int
	first, last int64
}

func readRecords(t *testing.T, dir string) []record {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []record
	for _, f := range files {
		parts := strings.Split(f.Name(), ".")
		if len(parts) != 3 {
			t.Fatalf("record file %q: want node.incarnation.rank", f.Name())
		}
		inc, _ := strconv.Atoi(parts[1])
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		r := record{node: parts[0], incarnation: inc}
		for _, line := range strings.Fields(string(data)) {
			ns, err := strconv.ParseInt(line, 10, 64)
			if err != nil {
				continue // a line cut by SIGKILL
			}
			if r.first == 0 || ns < r.first {
				r.first = ns
			}
			r.last = max(r.last, ns)
		}
		out = append(out, r)
	}
	return out
}

// TestRequeueAfterNodeKill: kill -9 of a node running a gang job with
// --requeue: the job is requeued and finishes elsewhere, and the ranks of
// its first run never overlap in time with its second (DESIGN invariant
// 3: no job has two live incarnations at once).
func TestRequeueAfterNodeKill(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 4, GPUsPerNode: 2})
	recs := t.TempDir()
	id := submit(t, c.Agents[0], "--requeue", "--name", "resilient", "--nodes", "2", "--gpus-per-node", "2",
		"--", "/bin/sh", "-c", fmt.Sprintf(heartbeatScript, recs))
	var first api.Job
	eventually(t, 20*time.Second, "first run writing records", func() error {
		jsonOf(t, c.Agents[0], &first, "job", fmt.Sprint(id))
		if first.State != "RUNNING" {
			return fmt.Errorf("state %s", first.State)
		}
		if n := len(readRecords(t, recs)); n < 2 {
			return fmt.Errorf("%d record files", n)
		}
		return nil
	})
	victimName := first.Nodes[0]
	victim := slices.IndexFunc(c.Agents, func(a *localcluster.Agent) bool { return a.Name == victimName })
	if leaderIndex(t, c, 0) == victim {
		// Kill the other node, so the test is about a worker's death, not
		// an election (TestLeaderKill covers that).
		victimName = first.Nodes[1]
		victim = slices.IndexFunc(c.Agents, func(a *localcluster.Agent) bool { return a.Name == victimName })
	}
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now().UnixNano()
	observer := c.Agents[(victim+1)%len(c.Agents)]
	sawRequeued := false
	var j api.Job
	eventually(t, 60*time.Second, "job requeued and completed", func() error {
		jsonOf(t, observer, &j, "job", fmt.Sprint(id))
		if j.State == "REQUEUED" || (j.State == "PENDING" && j.RestartCount > 0) {
			sawRequeued = true
		}
		if j.State != "COMPLETED" {
			return fmt.Errorf("state %s (%s), incarnation %d", j.State, j.Reason, j.Incarnation)
		}
		return nil
	})
	if j.Incarnation != 2 || j.RestartCount != 1 {
		t.Errorf("job %d incarnation %d restarts %d; want 2 and 1", id, j.Incarnation, j.RestartCount)
	}
	if slices.Contains(j.Nodes, victimName) {
		t.Errorf("job %d reran on %v, including the killed %s", id, j.Nodes, victimName)
	}
	t.Logf("requeue observed in between: %v", sawRequeued)

	var lastFirstRun, firstSecondRun int64
	for _, r := range readRecords(t, recs) {
		switch r.incarnation {
		case 1:
			lastFirstRun = max(lastFirstRun, r.last)
			// The killed agent's ranks run on under their supervisor until
			// the lease (3s, counted from a heartbeat sent before the kill)
			// ends and the fence's grace (2s) is out: before the leader may
			// declare the node down, 2s later still.
			if r.node == victimName && r.last > killedAt+int64(5*time.Second) {
				t.Errorf("rank on killed %s kept running %s after its agent died, past lease and grace", r.node, time.Duration(r.last-killedAt))
			}
		case 2:
			if firstSecondRun == 0 || r.first < firstSecondRun {
				firstSecondRun = r.first
			}
		default:
			t.Errorf("record of unexpected incarnation %d on %s", r.incarnation, r.node)
		}
	}
	if firstSecondRun == 0 {
		t.Fatalf("no record of the second run")
	}
	if lastFirstRun >= firstSecondRun {
		t.Errorf("runs overlap: the first run was alive at %d, the second started at %d (%s earlier)",
			lastFirstRun, firstSecondRun, time.Duration(lastFirstRun-firstSecondRun))
	}
}

// TestDrainResume: a drained node keeps what runs there and takes nothing
// new; the reason shows in shoal nodes; only root may drain; resume lifts
// it.
func TestDrainResume(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[1]
	running := submit(t, a, "--nodes", "3", "--gpus-per-node", "1", "--", "sleep", "2")
	waitState(t, a, running, "RUNNING", "")
	if r := shoal(t, a, "drain", "n3"); r.code == 0 || !strings.Contains(r.stderr, "--reason") {
		t.Errorf("drain without a reason: exit %d %q; want it refused naming --reason", r.code, r.stderr)
	}
	if r := shoal(t, a, "drain", "n9", "--reason", "x"); r.code == 0 || !strings.Contains(r.stderr, "unknown node") {
		t.Errorf("drain of an unknown node: exit %d %q; want it refused", r.code, r.stderr)
	}
	// A non-root caller (root acting as uid 1000 on the socket) may not
	// drain.
	err := a.Client().WithIdentity(api.Identity{User: "ada", UID: 1000, GID: 1000}).Drain(t.Context(), "n3", "mine")
	if !strings.Contains(fmt.Sprint(err), "only root") {
		t.Errorf("drain as uid 1000 = %v; want it refused", err)
	}

	mustShoal(t, a, "drain", "n3", "--reason", "bad fan")
	// Read through the agent that took the write: it shows its own writes
	// at once (another agent may lag by milliseconds).
	n := nodesByName(t, a)["n3"]
	if n.State != "DRAIN" || n.Reason != "bad fan" {
		t.Errorf("n3 = %s %q; want DRAIN with the reason", n.State, n.Reason)
	}
	if j := waitJob(t, a, running, 30*time.Second); j.State != "COMPLETED" {
		t.Errorf("job %d running on the drained node = %s; want COMPLETED", running, j.State)
	}
	blocked := submit(t, a, "--nodes", "3", "--", "true")
	waitState(t, a, blocked, "PENDING", "ReqNodeNotAvail")
	mustShoal(t, a, "resume", "n3")
	if j := waitJob(t, a, blocked, 30*time.Second); j.State != "COMPLETED" {
		t.Errorf("job %d after resume = %s; want COMPLETED", blocked, j.State)
	}
	if n := nodesByName(t, a)["n3"]; n.State != "IDLE" || n.Reason != "" {
		t.Errorf("n3 after resume = %s %q; want IDLE with no reason", n.State, n.Reason)
	}
}

// TestGracefulLeaderStop: a leader stopped with SIGTERM hands leadership
// over and leaves the raft configuration; the cluster keeps taking jobs.
func TestGracefulLeaderStop(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 4, GPUsPerNode: 1})
	eventually(t, 20*time.Second, "n4 a nonvoter", func() error {
		if r := nodesByName(t, c.Agents[0])["n4"].Raft; r != "nonvoter" {
			return fmt.Errorf("n4 is %s", r)
		}
		return nil
	})
	old := leaderIndex(t, c, 0)
	if err := c.StopAgent(old, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	gone := c.Agents[old].Name
	other := c.Agents[(old+1)%4]
	eventually(t, 30*time.Second, gone+" out of the raft configuration and replaced", func() error {
		ns := nodesByName(t, other)
		if r := ns[gone].Raft; r != "none" {
			return fmt.Errorf("%s is still %s", gone, r)
		}
		voters := 0
		for _, n := range ns {
			if n.Raft == "voter" || n.Raft == "leader" {
				voters++
			}
		}
		if voters != 3 {
			return fmt.Errorf("%d voters; want 3", voters)
		}
		return nil
	})
	if l := c.Agents[leaderIndex(t, c, (old+1)%4)].Name; l == gone {
		t.Fatalf("leader is still %s", gone)
	}
	id := submit(t, other, "--", "true")
	if j := waitJob(t, other, id, 20*time.Second); j.State != "COMPLETED" {
		t.Errorf("job %d = %s; want COMPLETED", id, j.State)
	}
	data, err := os.ReadFile(c.Agents[old].LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "handed leadership over") {
		t.Errorf("%s's log does not say it handed leadership over", gone)
	}
}

// TestTimeLimit: a job past its --time is stopped (SIGTERM, then SIGKILL)
// and ends TIMEOUT; the executor counts seconds, not Slurm's minutes.
func TestTimeLimit(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 1})
	id := submit(t, c.Agents[0], "--nodes", "2", "--time", "0:02", "--", "sleep", "60")
	j := waitJob(t, c.Agents[1], id, 30*time.Second)
	if j.State != "TIMEOUT" {
		t.Fatalf("job %d = %s; want TIMEOUT", id, j.State)
	}
	if j.TimeLimitS != 2 {
		t.Errorf("time_limit_s = %d; want 2", j.TimeLimitS)
	}
}

// TestBackfill: a short job with a --time limit starts ahead of a blocked
// bigger job when it cannot delay that job's reservation; without limits
// the queue stays first come, first served.
func TestBackfill(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[0]
	running := submit(t, a, "--nodes", "2", "--gpus-per-node", "2", "--time", "10:00", "--", "sleep", "600")
	waitState(t, a, running, "RUNNING", "")
	// Needs all three nodes: waits for the first job, with a reservation
	// at its limit, ten minutes away.
	big := submit(t, a, "--nodes", "3", "--gpus-per-node", "2", "--time", "1:00", "--", "true")
	// Fits on the third node and ends well before the reservation.
	short := submit(t, a, "--nodes", "1", "--gpus-per-node", "2", "--time", "0:30", "--", "true")
	// No limit: could hold the third node past the reservation.
	unlimited := submit(t, a, "--nodes", "1", "--gpus-per-node", "2", "--", "true")

	if j := waitJob(t, a, short, 30*time.Second); j.State != "COMPLETED" {
		t.Fatalf("short job %d = %s; want COMPLETED by backfill", short, j.State)
	}
	for id, want := range map[uint64]string{big: "Resources", unlimited: "Priority"} {
		var j api.Job
		jsonOf(t, a, &j, "job", fmt.Sprint(id))
		if j.State != "PENDING" || j.Reason != want {
			t.Errorf("job %d = %s (%s); want PENDING (%s)", id, j.State, j.Reason, want)
		}
	}
	mustShoal(t, a, "cancel", fmt.Sprint(running))
	for _, id := range []uint64{big, unlimited} {
		if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" {
			t.Errorf("job %d = %s; want COMPLETED once the first job is gone", id, j.State)
		}
	}
}
