package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestSignalDuringFailover: a shoal cancel --signal sent through a
// survivor right after the leader is killed (-9) waits through the
// failover and returns once the new leader has committed it, as Slurm's
// scancel waits for its backup controller; a copy the client sent again
// with the same request id (api.Idempotent with one) is delivered once.
// USR2, sent after, is a later entry: once its trap has run, a second
// USR1 request would have been delivered too (nodes deliver in log order).
func TestSignalDuringFailover(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 8})
	old := leaderIndex(t, c, 0)
	survivor := c.Agents[(old+1)%3]
	dir := t.TempDir()
	log := filepath.Join(dir, "trapped")
	// echo is the shell's own: a second signal cannot kill it mid-write.
	id := submit(t, survivor, "-w", survivor.Name, "--gpus-per-node", "1", "--", "sh", "-c",
		fmt.Sprintf(`trap 'echo usr1 >> %[1]s' USR1; trap 'echo usr2 >> %[1]s' USR2; touch %[2]s/ready; while :; do sleep 0.1; done`, log, dir))
	eventually(t, 30*time.Second, "the job's rank running", func() error {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err
	})
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	if r := shoal(t, survivor, "cancel", "--signal", "USR1", fmt.Sprint(id)); r.code != 0 {
		t.Fatalf("shoal cancel --signal USR1 %d during the failover: exit %d: %s", id, r.code, r.stderr)
	}
	if l := leaderIndex(t, c, (old+1)%3); l == old {
		t.Fatalf("the signal returned while %s, killed, still leads", c.Agents[old].Name)
	}
	trapped := func(want string) {
		eventually(t, 30*time.Second, "the rank to trap "+want, func() error {
			b, err := os.ReadFile(log)
			if err != nil || !strings.Contains(string(b), want) {
				return fmt.Errorf("trapped %q (%v)", b, err)
			}
			return nil
		})
	}
	trapped("usr1")
	mustShoal(t, survivor, "cancel", "--signal", "USR2", fmt.Sprint(id))
	trapped("usr2")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); !slices.Equal(got, []string{"usr1", "usr2"}) {
		t.Errorf("traps ran %q; want usr1 once, then usr2", got)
	}
}

// TestRequeueDuringFailover: `scontrol requeue` through a survivor
// right after the leader is killed (-9) waits through the failover and
// returns once the new leader has committed it; a copy the client sent
// again with the same request id does not requeue the job's next run.
// requeuehold, sent after, is a later entry: once it has applied, a
// second requeue would have counted a restart too. For a whole array each
// element is requeued once. The kill comes before the request, so what
// the client sends again are attempts never proposed; a copy sent after a
// lost commit, which each element's own request id
// (leader.ElementRequestID) answers as the first, is
// leader/testdata/queueops/arrays's.
func TestRequeueDuringFailover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		elements int
	}{
		{"one job", nil, 1},
		{"an array", []string{"--array=0-1"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 8})
			old := leaderIndex(t, c, 0)
			survivor := c.Agents[(old+1)%3]
			shims := newSlurmShims(t, survivor)
			args := append([]string{"--parsable", "--requeue", "-w", survivor.Name, "--gpus-per-node", "1",
				"--chdir", t.TempDir(), "--wrap", "exec sleep 300"}, tc.args...)
			id := mustID(t, shims.must("sbatch", args...))
			var jobs []uint64 // an array's elements follow its id without a gap
			for e := range tc.elements {
				jobs = append(jobs, id+uint64(e))
				waitState(t, survivor, id+uint64(e), "RUNNING", "")
			}
			if err := c.Kill(old); err != nil {
				t.Fatal(err)
			}
			shims.must("scontrol", "requeue", fmt.Sprint(id))
			if l := leaderIndex(t, c, (old+1)%3); l == old {
				t.Fatalf("the requeue returned while %s, killed, still leads", c.Agents[old].Name)
			}
			for _, j := range jobs {
				eventually(t, 60*time.Second, fmt.Sprintf("job %d running again", j), func() error {
					if got := waitState(t, survivor, j, "RUNNING", ""); got.Incarnation != 2 {
						return fmt.Errorf("job %d: incarnation %d", j, got.Incarnation)
					}
					return nil
				})
			}
			shims.must("scontrol", "requeuehold", fmt.Sprint(id))
			for _, j := range jobs {
				if got := waitState(t, survivor, j, "PENDING", "JobHeldAdmin"); got.RestartCount != 2 {
					t.Errorf("job %d after a requeue during the failover and a requeuehold: %d restarts; want 2", j, got.RestartCount)
				}
			}
		})
	}
}

// TestStepDuringFailover: an srun step started through a survivor right
// after the leader is killed (-9) waits through the failover and runs
// once the new leader has committed it: a copy the client sent again with
// the same request id starts no second step.
func TestStepDuringFailover(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 8})
	old := leaderIndex(t, c, 0)
	survivor := c.Agents[(old+1)%3]
	shims := newSlurmShims(t, survivor)
	id := mustID(t, shims.must("sbatch", "--parsable", "-w", survivor.Name, "--gpus-per-node", "1",
		"--chdir", t.TempDir(), "--wrap", "exec sleep 300"))
	waitState(t, survivor, id, "RUNNING", "")
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	r := shims.run("srun", "--jobid", fmt.Sprint(id), "--overlap", "echo", "step-ran")
	if r.code != 0 || strings.Count(r.stdout, "step-ran") != 1 {
		t.Fatalf("srun --jobid %d during the failover: exit %d, stdout %q, stderr %s", id, r.code, r.stdout, r.stderr)
	}
	if l := leaderIndex(t, c, (old+1)%3); l == old {
		t.Fatalf("srun returned while %s, killed, still leads", c.Agents[old].Name)
	}
	var j api.Job
	jsonOf(t, survivor, &j, "job", fmt.Sprint(id))
	if len(j.Steps) != 1 {
		t.Errorf("job %d has %d steps after one srun; want 1: %+v", id, len(j.Steps), j.Steps)
	}
}
