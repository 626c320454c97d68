package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestDeadline: sbatch --deadline refuses a job that cannot end by its
// deadline, as Slurm does; one that waits for resources until it no
// longer could ends DEADLINE with reason DeadLine, as squeue, scontrol and
// sacct show; a job with no --time starts with the time left to it.
func TestDeadline(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})

	r := sh.run("sbatch", "--deadline=now+30", "--time=1", "--chdir=/tmp", "--output=/dev/null", "--wrap", "true")
	if r.code == 0 || !strings.Contains(r.stderr, "Requested time limit is invalid (missing or exceeds some limit)") {
		t.Errorf("sbatch --deadline=now+30 --time=1: exit %d, stderr %q; want refused with Slurm's words", r.code, r.stderr)
	}

	// No --time: it runs with the time left to the deadline.
	free := sh.sbatch("--deadline=now+5minutes", "--chdir=/tmp", "--output=/dev/null", "--wrap", "true")
	j := waitJob(t, a, free, 30*time.Second)
	if j.State != "COMPLETED" || j.TimeLimitS <= 0 || j.TimeLimitS > 300 || j.TimeLimitS%60 != 0 {
		t.Errorf("job %d with a deadline and no --time: %s, time limit %d s; want COMPLETED within the 5 minutes left, in minutes", free, j.State, j.TimeLimitS)
	}

	blocker := submit(t, a, "--gpus-per-node", "1", "--", "sleep", "300")
	waitState(t, a, blocker, "RUNNING", "")
	// A minute's limit and a deadline in 65 s: it can wait about 5 s.
	id := sh.sbatch("--deadline=now+65", "--time=1", "--gpus-per-node=1", "--chdir=/tmp", "--output=/dev/null", "--wrap", "true")
	j = waitJob(t, a, id, 40*time.Second)
	if j.State != "DEADLINE" || j.Reason != "DeadLine" {
		t.Errorf("job %d past its deadline: %s reason %q; want DEADLINE, DeadLine", id, j.State, j.Reason)
	}
	if got := sh.must("squeue", "-h", "-t", "all", "-j", fmt.Sprint(id), "-o", "%T %t %r"); got != "DEADLINE DL DeadLine" {
		t.Errorf("squeue: %q; want DEADLINE DL DeadLine", got)
	}
	deadline, err := time.Parse(time.RFC3339, j.Deadline)
	if err != nil {
		t.Fatalf("job %d deadline %q: %v", id, j.Deadline, err)
	}
	show := sh.must("scontrol", "show", "job", fmt.Sprint(id))
	for _, want := range []string{"JobState=DEADLINE Reason=DeadLine", "ExitCode=0:1", "Deadline=" + deadline.Local().Format("2006-01-02T15:04:05")} {
		if !strings.Contains(show, want) {
			t.Errorf("scontrol show job lacks %q:\n%s", want, show)
		}
	}
	if got := sh.must("sacct", "-n", "-P", "-X", "-j", fmt.Sprint(id), "-o", "State,ExitCode"); got != "DEADLINE|0:1" {
		t.Errorf("sacct: %q; want DEADLINE|0:1 (Slurm's exit_code 1, a raw status)", got)
	}
}
