package test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestStretchedLeaseFencedBySupervisor: with a bound of one renewal a
// second at the leader, the 3 agents' leases stretch to 9 s (3 × their
// renewal every 3 s; --lease-ttl is 3 s). The leader grants it with each
// heartbeat, the agent writes it for its supervisors, and an agent
// stopped (SIGSTOP) keeps its ranks for the stretched lease, longer than
// --lease-ttl, until the supervisor fences them — still before the
// leader declares the node down (DESIGN invariant 1).
func TestStretchedLeaseFencedBySupervisor(t *testing.T) {
	t.Parallel()                // mostly waits, touches nothing global (harness_test.go)
	const ttl = 9 * time.Second // GrantLease(3 nodes, 3 s, 1 a second)
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1,
		ExtraArgs: []string{"--lease-renewals-per-second", "1"}})
	// The leader was elected before startCluster returned. Until the
	// failover wait has passed since (the longest lease, 9 s, + kill grace
	// + 2 s) it declares no node down whatever it granted; past it, the
	// node's own lease is what holds it up, which is what this test is
	// about.
	pastFailover := time.Now().Add(ttl + 2*time.Second + 2*time.Second)
	victim := nonLeader(t, c)
	observer := (victim + 1) % len(c.Agents)
	m := newMetricsClient(t, c, userToken(t, c.Agents[0], "nobody").Token)
	eventually(t, 30*time.Second, "the stretched lease granted", func() error {
		return m.metricIs(c.Agents[victim], "shoal_node_lease_ttl_seconds", ttl.Seconds())
	})

	id, ticks, pid := startTicker(t, c, victim, 600, "trap '' TERM")

	time.Sleep(time.Until(pastFailover))
	if err := c.Pause(victim); err != nil {
		t.Fatal(err)
	}
	pausedAt, bootAt := time.Now(), task.BootNow()
	t.Cleanup(func() { _ = c.Resume(victim) })
	// What the supervisors hold: the last renewal's send time + the TTL
	// granted, more than --lease-ttl can be from any renewal sent before
	// the pause.
	rec, err := task.ReadLease(filepath.Join(c.Agents[victim].DataDir, "exec", task.LeaseFile))
	if err != nil {
		t.Fatal(err)
	}
	left := time.Duration(rec.Deadline) - bootAt
	if left <= 3*time.Second || left > ttl {
		t.Fatalf("the supervisors' lease runs %v after the pause; want more than --lease-ttl (3s), at most %v", left, ttl)
	}
	deadline := pausedAt.Add(left)
	// The earliest the leader may declare the node down: the lease's end
	// (it heard the renewal after the node sent it) + kill grace + 2 s.
	earliestDown := deadline.Add(2*time.Second + 2*time.Second)

	t.Logf("lease left at the pause %v", left)
	lastAt := fencedBeforeDown(t, c, observer, victim, pid, ticks, pausedAt, earliestDown, 60*time.Second)
	// The supervisor fences at the deadline (SIGTERM, ignored) and kills
	// kill grace later: the rank outlived the deadline, so it ran past
	// what --lease-ttl alone would have left it.
	if lastAt.Before(deadline) {
		t.Errorf("rank's last record %v after the pause, before its lease's end (%v): fenced early", lastAt.Sub(pausedAt), left)
	}
	if err := c.Resume(victim); err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, c.Agents[observer], id, 30*time.Second); j.State != "NODE_FAIL" {
		t.Errorf("job %d = %s after the resume; want NODE_FAIL", id, j.State)
	}
}
