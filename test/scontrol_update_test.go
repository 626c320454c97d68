package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestScontrolUpdateJob: scontrol update JobId= as root and as the job's
// owner, on a running and a pending job, with Slurm's refusals; a lowered
// time limit ends the running job (its ranks' supervisor has it).
func TestScontrolUpdateJob(t *testing.T) {
	mustRoot(t)
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 2})
	a := c.Agents[0]
	shims := newSlurmShims(t, a)

	running := submit(t, a, "--time", "10:00", "--gpus-per-node", "1", "--", "sleep", "300")
	waitState(t, a, running, "RUNNING", "")
	shims.must("scontrol", "update", fmt.Sprintf("JobId=%d", running), "TimeLimit=20:00", "Name=renamed")
	shims.must("scontrol", "update", fmt.Sprintf("JobId=%d", running), "TimeLimit=+10")
	show := shims.must("scontrol", "show", "job", "-dd", fmt.Sprint(running))
	for _, want := range []string{"JobName=renamed\n", "TimeLimit=00:30:00 ", "JobState=RUNNING "} {
		if !strings.Contains(show, want) {
			t.Errorf("scontrol show job after update lacks %q:\n%s", want, show)
		}
	}
	if r := shims.run("scontrol", "update", fmt.Sprintf("JobId=%d", running), "NumNodes=2"); r.code == 0 ||
		!strings.Contains(r.stderr, fmt.Sprintf("Requested operation not supported on this system for job %d", running)) {
		t.Errorf("update NumNodes of a running job: exit %d %q; want Slurm's refusal", r.code, r.stderr)
	}
	if r := shims.run("scontrol", "update", fmt.Sprintf("JobId=%d", running), "Partition=gpu"); r.code == 0 ||
		!strings.Contains(r.stderr, fmt.Sprintf("Job is no longer pending execution for job %d", running)) {
		t.Errorf("update Partition of a running job: exit %d %q; want Slurm's refusal", r.code, r.stderr)
	}

	held := submit(t, a, "--hold", "--", "true")
	waitState(t, a, held, "PENDING", "JobHeldUser")
	if r := shims.run("scontrol", "update", fmt.Sprintf("JobId=%d", held), "Partition=nope"); r.code == 0 ||
		!strings.Contains(r.stderr, fmt.Sprintf("Invalid partition name specified for job %d", held)) {
		t.Errorf("update Partition=nope: exit %d %q; want Slurm's refusal", r.code, r.stderr)
	}
	shims.must("scontrol", "update", fmt.Sprintf("JobId=%d", held), "Comment=hello", "Nice=5",
		fmt.Sprintf("Dependency=afterok:%d", running), "NumNodes=1", "QOS=normal", "JobName=second")
	show = shims.must("scontrol", "show", "job", fmt.Sprint(held))
	for _, want := range []string{"JobName=second\n", "Comment=hello \n", "Nice=5 ", fmt.Sprintf("Dependency=afterok:%d", running), "QOS=normal\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("scontrol show job %d after update lacks %q:\n%s", held, want, show)
		}
	}

	// The owner may lower a running job's time limit, not raise it.
	user := newSecUser(t, "shoalupd")
	_, work := secDirs(t, c, user)
	r := user.run(t, a, work, nil, "submit", "--parsable", "--chdir", work, "--time", "10:00", "--", "sleep", "300")
	if r.code != 0 {
		t.Fatalf("submit as %s: exit %d %s", user.name, r.code, r.stderr)
	}
	own := mustID(t, strings.TrimSpace(r.stdout))
	waitState(t, a, own, "RUNNING", "")
	if r := user.run(t, a, work, nil, "slurm", "scontrol", "update", fmt.Sprintf("JobId=%d", own), "TimeLimit=20:00"); r.code == 0 ||
		!strings.Contains(r.stderr, fmt.Sprintf("Access/permission denied for job %d", own)) {
		t.Errorf("a user raising a time limit: exit %d %q; want Access/permission denied", r.code, r.stderr)
	}
	if r := user.run(t, a, work, nil, "slurm", "scontrol", "update", fmt.Sprintf("JobId=%d", running), "TimeLimit=1:00"); r.code == 0 ||
		!strings.Contains(r.stderr, "Access/permission denied") {
		t.Errorf("a user updating root's job: exit %d %q; want Access/permission denied", r.code, r.stderr)
	}
	// Lowered below the time it has run, the job ends at once: TIMEOUT.
	if r := user.run(t, a, work, nil, "slurm", "scontrol", "update", fmt.Sprintf("JobId=%d", own), "TimeLimit=0:01"); r.code != 0 {
		t.Fatalf("a user lowering a time limit: exit %d %q", r.code, r.stderr)
	}
	if j := waitJob(t, a, own, 60*time.Second); j.State != "TIMEOUT" {
		t.Errorf("job %d after its time limit was lowered: %s; want TIMEOUT", own, j.State)
	}
	mustShoal(t, a, "cancel", fmt.Sprint(running))
	mustShoal(t, a, "cancel", fmt.Sprint(held))
}

// TestScontrolRequeueRunning: scontrol requeue of a running job stops its
// ranks and runs it again with SLURM_RESTART_COUNT one higher;
// requeuehold sends it back held.
func TestScontrolRequeueRunning(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	a := c.Agents[0]
	shims := newSlurmShims(t, a)
	// A batch job: its script finds Shoal's scontrol on its PATH.
	work := t.TempDir()
	id := mustID(t, shims.must("sbatch", "--parsable", "--requeue", "--gpus-per-node", "1", "--chdir", work, "-o", "out.txt",
		"--wrap", "echo run=$SLURM_RESTART_COUNT on=$(scontrol show hostnames 2>&1); exec sleep 300"))
	first := waitState(t, a, id, "RUNNING", "")
	shims.must("scontrol", "requeue", fmt.Sprint(id))
	eventually(t, 60*time.Second, "the requeued job running again", func() error {
		j := waitState(t, a, id, "RUNNING", "")
		if j.RestartCount != 1 || j.Incarnation != 2 {
			return fmt.Errorf("job %d: restarts %d, incarnation %d", id, j.RestartCount, j.Incarnation)
		}
		// scontrol show hostnames with no argument reads the job's
		// SLURM_NODELIST, as Slurm's.
		out, err := os.ReadFile(filepath.Join(work, "out.txt"))
		if err != nil || !strings.Contains(string(out), "run=1 on="+first.Nodes[0]+"\n") {
			return fmt.Errorf("output %q (%v); want run=1 on=%s", out, err, first.Nodes[0])
		}
		return nil
	})
	if show := shims.must("scontrol", "-o", "show", "jobid", fmt.Sprint(id)); strings.Count(show, "\n") != 0 ||
		!strings.Contains(show, fmt.Sprintf("JobId=%d ", id)) || !strings.Contains(show, " Restarts=1 ") {
		t.Errorf("scontrol -o show jobid after a requeue: want one line with Restarts=1:\n%s", show)
	}
	shims.must("scontrol", "requeuehold", fmt.Sprint(id))
	j := waitState(t, a, id, "PENDING", "JobHeldAdmin")
	if j.RestartCount != 2 {
		t.Errorf("job %d after requeuehold: %d restarts; want 2", id, j.RestartCount)
	}
	shims.must("scontrol", "release", fmt.Sprint(id))
	waitState(t, a, id, "RUNNING", "")
	mustShoal(t, a, "cancel", fmt.Sprint(id))
}
