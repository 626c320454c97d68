package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestSbatchDuringFailover: an sbatch sent through a survivor right after
// the leader is killed (-9) blocks while the survivors elect a new leader
// and returns once it has committed the job, as Slurm's sbatch waits for
// its backup controller: one invocation, no retry by the caller, one job.
func TestSbatchDuringFailover(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 8})
	old := leaderIndex(t, c, 0)
	survivor := c.Agents[(old+1)%3]
	sh := newSlurmShims(t, survivor)
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	id := sh.sbatch("--hold", "-J", "during-failover", "--wrap", "true")
	if l := leaderIndex(t, c, (old+1)%3); l == old {
		t.Fatalf("sbatch returned job %d while %s, killed, still leads", id, c.Agents[old].Name)
	}
	var jobs []api.Job
	jsonOf(t, survivor, &jobs, "queue", "--all")
	if len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("queue = %+v; want exactly job %d", jobs, id)
	}
}

// TestCancelDuringFailover: a cancel sent through a survivor right after
// the leader is killed (-9) finds the dead leader (its forward gets no
// answer), then no leader, and is sent again by the client, as a cancel
// may be (api.Idempotent), until the new leader cancels the job: one
// invocation, no retry by the caller, as Slurm's scancel waits for its
// backup controller.
func TestCancelDuringFailover(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 8})
	old := leaderIndex(t, c, 0)
	survivor := c.Agents[(old+1)%3]
	id := submit(t, survivor, "--hold", "--", "true")
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	if r := shoal(t, survivor, "cancel", fmt.Sprint(id)); r.code != 0 {
		t.Fatalf("shoal cancel %d during the failover: exit %d: %s", id, r.code, r.stderr)
	}
	if l := leaderIndex(t, c, (old+1)%3); l == old {
		t.Fatalf("cancel returned while %s, killed, still leads", c.Agents[old].Name)
	}
	if j := waitJob(t, survivor, id, 30*time.Second); j.State != "CANCELLED" {
		t.Errorf("job %d = %s; want CANCELLED", id, j.State)
	}
}
