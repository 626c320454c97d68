package test

import (
	"errors"
	"fmt"
	"io/fs"
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

// tickScript has the rank write its pid, then append a timestamp (ns) to
// a record file every 100 ms, n times, ignoring SIGTERM when told to (so
// only a SIGKILL ends it early).
const tickScript = `echo $$ > %[1]s/pid; %[3]s
i=0; while [ $i -lt %[2]d ]; do date +%%s%%N >> %[1]s/ticks; sleep 0.1; i=$((i+1)); done`

// startTicker submits tickScript (n records, trap before them) as a job
// of one GPU on agent victim's node, args added first, and waits until
// its rank writes records; it returns the job, the record file and the
// rank's pid.
func startTicker(t *testing.T, c *localcluster.Cluster, victim, n int, trap string, args ...string) (id uint64, ticks string, pid int) {
	t.Helper()
	recs := t.TempDir()
	id = submit(t, c.Agents[0], slices.Concat(args, []string{"-w", c.Agents[victim].Name, "--gpus-per-node", "1",
		"--", "/bin/sh", "-c", fmt.Sprintf(tickScript, recs, n, trap)})...)
	ticks = filepath.Join(recs, "ticks")
	waitTicks(t, ticks)
	pidText, err := os.ReadFile(filepath.Join(recs, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	return id, ticks, pid
}

// waitTicks waits until the ranks of tickScript have written a few
// records to ticks.
func waitTicks(t *testing.T, ticks string) {
	t.Helper()
	eventually(t, 20*time.Second, "ranks writing records", func() error {
		if _, _, n := readTicks(t, ticks); n < 3 {
			return fmt.Errorf("%d records", n)
		}
		return nil
	})
}

// readTicks returns the first and last timestamps of a record file.
func readTicks(t *testing.T, path string) (first, last int64, n int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, 0 // not written yet
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Fields(string(data)) {
		ns, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			continue // a line cut by SIGKILL
		}
		if first == 0 {
			first = ns
		}
		last, n = max(last, ns), n+1
	}
	return first, last, n
}

// nonLeader returns the index of an agent that does not lead.
func nonLeader(t *testing.T, c *localcluster.Cluster) int {
	t.Helper()
	return (leaderIndex(t, c, 0) + 1) % len(c.Agents)
}

// TestAgentKillRestartKeepsJob: kill -9 of an agent in the middle of a
// job and its restart, or its graceful stop with --keep-tasks-on-stop:
// the ranks run on under their supervisor, the restarted agent reattaches
// and reports their exit, and the job completes in its first incarnation,
// although it would requeue (nothing is run twice, nothing forgotten).
func TestAgentKillRestartKeepsJob(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	t.Run("kill -9", func(t *testing.T) { testAgentRestartKeepsJob(t, false) })
	t.Run("keep-tasks-on-stop", func(t *testing.T) { testAgentRestartKeepsJob(t, true) })
}

func testAgentRestartKeepsJob(t *testing.T, graceful bool) {
	// A 10 s lease leaves the restart time to happen under it.
	args := []string{"--lease-ttl", "10s"}
	if graceful {
		args = append(args, "--keep-tasks-on-stop")
	}
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1, ExtraArgs: args})
	victim := nonLeader(t, c)
	id, ticks, _ := startTicker(t, c, victim, 60, "", "--requeue")
	stop := c.Kill
	if graceful {
		stop = func(i int) error { return c.StopAgent(i, 10*time.Second) }
	}
	if err := stop(victim); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	_, _, before := readTicks(t, ticks)
	eventually(t, 5*time.Second, "ranks running on without their agent", func() error {
		if _, _, n := readTicks(t, ticks); n < before+5 {
			return fmt.Errorf("%d records since the kill", n-before)
		}
		return nil
	})
	restartedAt := time.Now()
	if err := c.Restart(victim); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "restarted agent serving", func() error {
		if r := shoal(t, c.Agents[victim], "nodes"); r.code != 0 {
			return fmt.Errorf("shoal nodes: exit %d: %s", r.code, r.stderr)
		}
		return nil
	})
	t.Logf("restart to an agent that has reattached and serves: %v (%v after the old one went)",
		time.Since(restartedAt).Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond))

	j := waitJob(t, c.Agents[0], id, 60*time.Second)
	if j.State != "COMPLETED" || j.Incarnation != 1 || j.RestartCount != 0 {
		t.Errorf("job %d = %s, incarnation %d, restarts %d; want COMPLETED in incarnation 1 with no restart",
			id, j.State, j.Incarnation, j.RestartCount)
	}
	if _, _, n := readTicks(t, ticks); n != 60 {
		t.Errorf("the rank wrote %d records; want all 60, from one run", n)
	}
}

// TestStoppedAgentFencedBySupervisor: an agent stopped (SIGSTOP) past its
// lease cannot fence its ranks; their supervisor does, before the leader
// can declare the node down and give its GPUs to anyone else (DESIGN
// invariant 1 and the lease rule of the README's liveness section).
func TestStoppedAgentFencedBySupervisor(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1})
	victim := nonLeader(t, c)
	observer := (victim + 1) % len(c.Agents)
	// The rank ignores SIGTERM: it dies at the fence's SIGKILL, KillGrace
	// after the lease ended.
	id, ticks, pid := startTicker(t, c, victim, 600, "trap '' TERM")

	if err := c.Pause(victim); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	t.Cleanup(func() { _ = c.Resume(victim) })
	// The earliest the leader may declare the node down: its last
	// heartbeat (at most one period before the pause) + lease + kill
	// grace + the 2 s margin (testAgentArgs).
	earliestDown := pausedAt.Add(-300*time.Millisecond + 3*time.Second + 2*time.Second + 2*time.Second)

	fencedBeforeDown(t, c, observer, victim, pid, ticks, pausedAt, earliestDown, 30*time.Second)
	var j api.Job
	jsonOf(t, c.Agents[observer], &j, "job", fmt.Sprint(id))
	if j.State != "NODE_FAIL" && j.State != "RUNNING" {
		t.Errorf("job %d = %s; want NODE_FAIL (or still ending)", id, j.State)
	}

	// Resumed, the agent finds its task fenced and reports it; nothing runs.
	if err := c.Resume(victim); err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, c.Agents[observer], id, 30*time.Second); j.State != "NODE_FAIL" {
		t.Errorf("job %d = %s after the resume; want NODE_FAIL", id, j.State)
	}
	if rankAlive(pid) {
		t.Errorf("rank %d runs after its node came back", pid)
	}
}

// rankAlive reports whether pid is a live process (not a zombie).
func rankAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// fencedBeforeDown waits (up to wait) until the observer sees the paused
// victim's node DOWN, checks that rank pid is dead by then and that its
// last tick came before earliestDown (the earliest the leader may declare
// the node down), and returns when that last tick was (DESIGN "Node
// liveness": a node cut off stops its ranks before the majority can
// place anything on its GPUs).
func fencedBeforeDown(t *testing.T, c *localcluster.Cluster, observer, victim, pid int, ticks string, pausedAt, earliestDown time.Time, wait time.Duration) time.Time {
	t.Helper()
	var downSeen time.Time
	eventually(t, wait, "node declared down", func() error {
		if s := nodesByName(t, c.Agents[observer])[c.Agents[victim].Name].State; s != "DOWN" {
			return fmt.Errorf("%s is %s", c.Agents[victim].Name, s)
		}
		downSeen = time.Now()
		return nil
	})
	if rankAlive(pid) {
		t.Errorf("rank %d still runs when its node is seen down, %v after the pause", pid, downSeen.Sub(pausedAt))
	}
	_, last, _ := readTicks(t, ticks)
	lastAt := time.Unix(0, last)
	t.Logf("rank's last record %v after the pause; node seen down %v after it", lastAt.Sub(pausedAt), downSeen.Sub(pausedAt))
	if !lastAt.Before(earliestDown) {
		t.Errorf("rank alive %v after the pause; its supervisor must kill it before the leader may declare the node down (%v)",
			lastAt.Sub(pausedAt), earliestDown.Sub(pausedAt))
	}
	return lastAt
}
