package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestSbatchBegin: `sbatch --begin=now+5` pends with reason BeginTime
// (squeue, scontrol's EligibleTime is the begin time) and starts once the
// time has come, not before.
func TestSbatchBegin(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	before := time.Now()
	id := sh.sbatch("--begin=now+5", "--chdir=/tmp", "--output=/dev/null", "--wrap", "true")
	var j api.Job
	jsonOf(t, a, &j, "job", fmt.Sprint(id), "--json")
	begin, err := time.Parse(time.RFC3339, j.Begin)
	if err != nil || begin.Before(before.Add(4*time.Second)) || begin.After(time.Now().Add(6*time.Second)) {
		t.Fatalf("job %d begin %q (%v); want about 5 s after the submit", id, j.Begin, err)
	}
	eventually(t, 10*time.Second, "the job pending with BeginTime", func() error {
		r := sh.run("squeue", "-h", "-j", fmt.Sprint(id), "-o", "%T %r")
		if got := strings.TrimSpace(r.stdout); got != "PENDING BeginTime" {
			return fmt.Errorf("squeue: %q %s", got, r.stderr)
		}
		return nil
	})
	if show := sh.must("scontrol", "show", "job", fmt.Sprint(id)); !strings.Contains(show, "EligibleTime="+begin.Local().Format("2006-01-02T15:04:05")) {
		t.Errorf("scontrol show job: EligibleTime is not the begin time %s:\n%s", begin.Local().Format("2006-01-02T15:04:05"), show)
	}
	j = waitJob(t, a, id, 30*time.Second)
	start, err := time.Parse(time.RFC3339, j.StartTime)
	if j.State != "COMPLETED" || err != nil || start.Before(begin) {
		t.Errorf("job %d %s started %s; want COMPLETED, started at or after %s", id, j.State, j.StartTime, j.Begin)
	}
}

// TestImmediate: srun and salloc --immediate give up, cancelling their
// job, when it cannot start within the time given, with Slurm's error
// and exit code 1; with resources free they run.
func TestImmediate(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	if out := sh.must("srun", "--immediate", "echo", "ran-at-once"); out != "ran-at-once" {
		t.Errorf("srun --immediate with resources free printed %q", out)
	}
	blocker := submit(t, a, "--gpus-per-node", "1", "--", "sleep", "300")
	waitState(t, a, blocker, "RUNNING", "")
	for _, cmd := range [][]string{
		{"srun", "--immediate=2", "--gpus-per-node=1", "true"},
		{"salloc", "-I", "--gpus-per-node=1", "true"},
	} {
		r := sh.run(cmd[0], cmd[1:]...)
		if r.code != 1 || !strings.Contains(r.stderr, cmd[0]+": error: Unable to allocate resources: Requested nodes are busy") {
			t.Errorf("%v with the GPU busy: exit %d, stderr %q; want 1 and Slurm's error", cmd, r.code, r.stderr)
		}
	}
	// Neither left a job waiting.
	if out := sh.must("squeue", "-h", "-t", "PENDING", "-o", "%i"); out != "" {
		t.Errorf("jobs left pending after --immediate gave up: %q", out)
	}
}
