package test

import (
	"testing"

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
