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

// signalKillWait is the test cluster's --kill-wait, longer than its
// --kill-grace (1s) so that a test can tell which one stopped a task.
const signalKillWait = 3 * time.Second

// TestSignals: the job lifecycle's signals on real agents — the
// --signal warning before the time limit (to the batch shell with B:, to
// the steps' tasks without), the kill-wait between SIGTERM and SIGKILL at
// the time limit and on cancel, and shoal cancel --signal / scancel
// --signal issued on an agent outside the allocation.
func TestSignals(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1,
		ExtraArgs: []string{"--kill-wait", signalKillWait.String(), "--kill-grace", "1s"}})
	a := c.Agents[0]
	t.Run("BatchShellWarnedBeforeTimeout", func(t *testing.T) { testBatchShellWarning(t, a) })
	t.Run("StepsWarnedBeforeTimeout", func(t *testing.T) { testStepWarning(t, a) })
	t.Run("KillWait", func(t *testing.T) { testKillWait(t, a) })
	t.Run("CancelSignalFromOutside", func(t *testing.T) { testCancelSignal(t, c) })
	t.Run("ShoalStep", func(t *testing.T) { testShoalStep(t, a) })
}

// testShoalStep: shoal step inside a batch script runs a step on the
// allocation as srun does; outside a job it refuses.
func testShoalStep(t *testing.T, a *localcluster.Agent) {
	dir := t.TempDir()
	id := submitBatch(t, a, dir, `#!/bin/sh
#SBATCH -N 2
#SBATCH -o out
shoal step -N 2 --label -- sh -c 'echo "task $SLURM_PROCID of $SLURM_NTASKS step $SLURM_STEP_ID"'
shoal step -- sh -c 'exit 4'
echo "second step exit $?"
`)
	if j := waitJob(t, a, id, 60*time.Second); j.State != "COMPLETED" || len(j.Steps) != 2 {
		t.Fatalf("job %d = %s with %d steps; want COMPLETED with 2", id, j.State, len(j.Steps))
	}
	b, err := os.ReadFile(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0: task 0 of 2 step 0", "1: task 1 of 2 step 0", "second step exit 4"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("output lacks %q:\n%s", want, b)
		}
	}
	r := runEnv(t, []string{"SHOAL_JOB_ID=", "SLURM_JOB_ID="}, shoalBin, "--data-dir", a.DataDir, "step", "--", "true")
	if r.code == 0 || !strings.Contains(r.stderr, "not inside a job") {
		t.Errorf("shoal step outside a job: exit %d %q; want a refusal", r.code, r.stderr)
	}
}

// submitBatch writes script to dir and submits it with shoal batch.
func submitBatch(t *testing.T, a *localcluster.Agent, dir, script string) uint64 {
	t.Helper()
	path := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustShoal(t, a, "batch", "--parsable", "--chdir", dir, path)
	id, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("shoal batch --parsable printed %q", out)
	}
	return id
}

// stampAt reads a file holding `date +%s.%N` output.
func stampAt(t *testing.T, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	var sec, nsec int64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d.%d", &sec, &nsec); err != nil {
		t.Fatalf("%s = %q: want seconds.nanoseconds", filepath.Base(path), b)
	}
	return time.Unix(sec, nsec)
}

// jobEnd is when job j ended, to the second.
func jobEnd(t *testing.T, j api.Job) time.Time {
	t.Helper()
	end, err := time.Parse(time.RFC3339, j.EndTime)
	if err != nil {
		t.Fatalf("job %d end time %q: %v", j.ID, j.EndTime, err)
	}
	return end
}

// testBatchShellWarning: --signal=B:USR1@3 reaches the batch script's own
// trap before the job ends TIMEOUT.
func testBatchShellWarning(t *testing.T, a *localcluster.Agent) {
	dir := t.TempDir()
	id := submitBatch(t, a, dir, `#!/bin/sh
#SBATCH --time=0:06
#SBATCH --signal=B:USR1@3
trap 'date +%s.%N > shell-usr1' USR1
while :; do sleep 0.2; done
`)
	j := waitJob(t, a, id, 60*time.Second)
	if j.State != "TIMEOUT" {
		t.Fatalf("job %d = %s; want TIMEOUT", id, j.State)
	}
	if j.Signal == nil || j.Signal.Number != 10 || !j.Signal.BatchOnly || j.Signal.Before != 3*time.Second {
		t.Errorf("job %d signal = %+v; want USR1 (10), 3s before, batch only", id, j.Signal)
	}
	if at := stampAt(t, filepath.Join(dir, "shell-usr1")); !at.Before(jobEnd(t, j)) {
		t.Errorf("the shell trapped USR1 at %v, not before the job ended at %s", at, j.EndTime)
	}
}

// testStepWarning: --signal=USR1@3 (no B:) reaches every task of the
// running step, on both nodes, and not the batch shell, as in Slurm.
func testStepWarning(t *testing.T, a *localcluster.Agent) {
	dir := t.TempDir()
	id := submitBatch(t, a, dir, `#!/bin/sh
#SBATCH -N 2
#SBATCH --time=0:07
#SBATCH --signal=USR1@3
trap 'date +%s.%N > shell-usr1' USR1
srun sh -c 'trap "date +%s.%N > step-usr1-$SLURM_PROCID" USR1; while :; do sleep 0.2; done' &
while :; do sleep 0.2; done
`)
	j := waitJob(t, a, id, 60*time.Second)
	if j.State != "TIMEOUT" {
		t.Fatalf("job %d = %s; want TIMEOUT", id, j.State)
	}
	for rank := range 2 {
		if at := stampAt(t, filepath.Join(dir, fmt.Sprintf("step-usr1-%d", rank))); !at.Before(jobEnd(t, j)) {
			t.Errorf("step task %d trapped USR1 at %v, not before the job ended at %s", rank, at, j.EndTime)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "shell-usr1")); err == nil {
		t.Errorf("the batch shell got USR1; without B: only the steps' tasks should")
	}
}

// aliveScript ignores SIGTERM (recording when it came) and records that
// it is alive every 100 ms, so the records show when SIGKILL came.
const aliveScript = `trap 'date +%%s.%%N > %[1]s/term-$RANK' TERM
touch %[1]s/ready-$RANK
while :; do date +%%s.%%N > %[1]s/alive-$RANK.tmp; mv %[1]s/alive-$RANK.tmp %[1]s/alive-$RANK; sleep 0.1; done`

// testKillWait: a task that ignores SIGTERM at its time limit, or on
// cancel, lives on for the agents' --kill-wait (not the shorter
// --kill-grace, which only fencing uses) and is then SIGKILLed.
func testKillWait(t *testing.T, a *localcluster.Agent) {
	for _, how := range []string{"timeout", "cancel"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--", "sh", "-c", fmt.Sprintf(aliveScript, dir)}
			if how == "timeout" {
				args = append([]string{"--time", "0:02"}, args...)
			}
			id := submit(t, a, args...)
			if how == "cancel" {
				eventually(t, 30*time.Second, "the task to start", func() error {
					_, err := os.Stat(filepath.Join(dir, "ready-0"))
					return err
				})
				mustShoal(t, a, "cancel", fmt.Sprint(id))
			}
			want := map[string]string{"timeout": "TIMEOUT", "cancel": "CANCELLED"}[how]
			j := waitJob(t, a, id, 60*time.Second)
			if j.State != want {
				t.Fatalf("job %d = %s; want %s", id, j.State, want)
			}
			// A cancelled job ends at once; its task is dead once reported.
			eventually(t, 30*time.Second, "the task's exit", func() error {
				jsonOf(t, a, &j, "job", fmt.Sprint(id))
				if len(j.Tasks) != 1 || j.Tasks[0].State != "exited" {
					return fmt.Errorf("tasks %+v", j.Tasks)
				}
				return nil
			})
			if j.Tasks[0].ExitCode != 128+9 {
				t.Errorf("task exit code %d; want 137 (SIGKILL: it ignored SIGTERM)", j.Tasks[0].ExitCode)
			}
			term := stampAt(t, filepath.Join(dir, "term-0"))
			alive := stampAt(t, filepath.Join(dir, "alive-0"))
			// The last record alive is at most one period (100 ms) plus a
			// loaded machine's delay before the SIGKILL; it cannot come
			// before it.
			if lived := alive.Sub(term); lived < signalKillWait-time.Second {
				t.Errorf("the task lived %v after SIGTERM; want about the %v kill-wait", lived, signalKillWait)
			}
		})
	}
}

// testCancelSignal: shoal cancel --signal and scancel --signal, issued on
// the agent outside a 2-node job's allocation, reach both ranks' traps and
// leave the job running; a pending job cannot be signalled.
func testCancelSignal(t *testing.T, c *localcluster.Cluster) {
	a := c.Agents[0]
	dir := t.TempDir()
	id := submit(t, a, "-N", "2", "--gpus-per-node", "1", "--", "sh", "-c",
		fmt.Sprintf(`trap 'touch %[1]s/usr1-$RANK' USR1; trap 'touch %[1]s/usr2-$RANK' USR2; touch %[1]s/ready-$RANK; while :; do sleep 0.1; done`, dir))
	var j api.Job
	eventually(t, 30*time.Second, "both ranks running", func() error {
		jsonOf(t, a, &j, "job", fmt.Sprint(id))
		for rank := range 2 {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ready-%d", rank))); err != nil {
				return fmt.Errorf("job %s: %w", j.State, err)
			}
		}
		return nil
	})
	var outside *localcluster.Agent
	for _, ag := range c.Agents {
		if !slices.Contains(j.Nodes, ag.Name) {
			outside = ag
		}
	}
	if outside == nil {
		t.Fatalf("job %d runs on %v: no agent outside its allocation", id, j.Nodes)
	}

	// One signal at a time: the signal goes to the rank's whole process
	// group, so a second one arriving while the first one's trap runs its
	// touch would kill the touch (as under Slurm) and the first file would
	// never appear.
	trapped := func(sig string) {
		for rank := range 2 {
			eventually(t, 20*time.Second, fmt.Sprintf("rank %d to trap %s", rank, sig), func() error {
				_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s-%d", sig, rank)))
				return err
			})
		}
	}
	mustShoal(t, outside, "cancel", "--signal", "USR1", fmt.Sprint(id))
	trapped("usr1")
	shims := t.TempDir()
	mustShoal(t, outside, "install-shims", shims)
	if r := runEnv(t, []string{"SHOAL_DATA_DIR=" + outside.DataDir}, filepath.Join(shims, "scancel"),
		"--signal=USR2", fmt.Sprint(id)); r.code != 0 {
		t.Fatalf("scancel --signal=USR2 %d: exit %d %s", id, r.code, r.stderr)
	}
	trapped("usr2")
	jsonOf(t, a, &j, "job", fmt.Sprint(id))
	if j.State != "RUNNING" {
		t.Errorf("job %d = %s after the signals; want still RUNNING", id, j.State)
	}

	// Needs three nodes with a GPU each: pending while the first runs.
	pending := submit(t, a, "-N", "3", "--gpus-per-node", "1", "--", "true")
	r := shoal(t, outside, "cancel", "--signal", "USR1", fmt.Sprint(pending))
	if r.code == 0 || !strings.Contains(r.stderr, "want RUNNING") {
		t.Errorf("cancel --signal of pending job %d: exit %d %q; want an error saying it must be RUNNING", pending, r.code, r.stderr)
	}
	r = shoal(t, outside, "cancel", "--signal", "USR3", fmt.Sprint(id))
	if r.code == 0 || !strings.Contains(r.stderr, `--signal "USR3"`) {
		t.Errorf("cancel --signal USR3: exit %d %q; want an error naming the bad signal", r.code, r.stderr)
	}
	mustShoal(t, a, "cancel", fmt.Sprint(id), fmt.Sprint(pending))
	if j := waitJob(t, a, id, 30*time.Second); j.State != "CANCELLED" {
		t.Errorf("job %d = %s; want CANCELLED", id, j.State)
	}
}
