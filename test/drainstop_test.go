package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestDrainOnStop: an agent stopped with --drain-on-stop drains its node
// (no new job lands on it), lets its running job finish in its first
// incarnation, and only then leaves.
func TestDrainOnStop(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1, ExtraArgs: []string{"--drain-on-stop", "60s"}})
	a := c.Agents[0]
	id := submit(t, a, "-w", "n3", "--gpus-per-node", "1", "--", "sleep", "4")
	waitState(t, a, id, "RUNNING", "")
	stopped := make(chan error, 1)
	go func() { stopped <- c.StopAgent(2, 60*time.Second) }()

	eventually(t, 20*time.Second, "n3 drained", func() error {
		if n := nodesByName(t, a)["n3"]; n.State != "DRAIN" || n.Reason == "" {
			return fmt.Errorf("n3 is %s (%q)", n.State, n.Reason)
		}
		return nil
	})
	late := submit(t, a, "-w", "n3", "--gpus-per-node", "1", "--", "true")
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" || j.Incarnation != 1 {
		t.Errorf("the draining node's job: %s in incarnation %d; want COMPLETED in its first", j.State, j.Incarnation)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("the agent did not stop after its job ended: %v", err)
	}
	if j := jobNow(t, a, late); j.State != "PENDING" {
		t.Errorf("a job for the drained node: %s; want it left PENDING", j.State)
	}
}

// TestLeave: `shoal leave --drain` on a node's agent drains it, lets its
// running job finish, and stops the agent, which the command waits for.
func TestLeave(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1})
	a := c.Agents[0]
	id := submit(t, a, "-w", "n3", "--gpus-per-node", "1", "--", "sleep", "3")
	waitState(t, a, id, "RUNNING", "")
	out := mustShoal(t, c.Agents[2], "leave", "--drain", "60s")
	if !strings.Contains(out, "agent n3 is leaving") || !strings.Contains(out, "agent n3 has stopped") {
		t.Errorf("shoal leave printed %q", out)
	}
	if c.Agents[2].Running() {
		t.Error("the agent still runs after shoal leave returned")
	}
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" || j.Incarnation != 1 {
		t.Errorf("the leaving node's job: %s in incarnation %d; want COMPLETED in its first", j.State, j.Incarnation)
	}
}
