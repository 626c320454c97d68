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

// arrayScript is a sweep as users write it: each element records its
// array ids and when it ran, then sleeps so that elements would overlap
// if the %2 throttle let them.
const arrayScript = `#!/bin/sh
#SBATCH --job-name=sweep
#SBATCH --array=0-3%2
#SBATCH --gpus-per-node=1
#SBATCH --output=%x-%A_%a.out
start=$(date +%s.%N)
sleep 1
echo "$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_JOB_ID $SLURM_ARRAY_TASK_COUNT $start $(date +%s.%N)" >> "$RECORDS"
`

// TestArrayDependencyHold: an sbatch --array sweep with a %2 throttle
// runs every element with its SLURM_ARRAY_* ids and never more than two
// at once; an afterok job starts only after the whole array; an afterok
// on a failed job is cancelled DependencyNeverSatisfied; a --hold job
// waits for scontrol release; scontrol requeue runs an ended job again;
// squeue and sacct show the elements as N_M.
func TestArrayDependencyHold(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 2})
	a := c.Agents[0]
	work := t.TempDir()
	records := filepath.Join(work, "records")
	shims := newSlurmShims(t, a, "RECORDS="+records)
	slurmCmd, must := shims.run, shims.must
	write := func(name, body string) string {
		p := filepath.Join(work, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	parseID := func(s string) uint64 {
		t.Helper()
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("sbatch --parsable printed %q", s)
		}
		return id
	}

	array := parseID(must("sbatch", "--parsable", "--chdir", work, write("sweep.sh", arrayScript)))
	after := parseID(must("sbatch", "--parsable", "--chdir", work, "-d", fmt.Sprintf("afterok:%d", array),
		"--wrap", `echo "after $(date +%s.%N)" >> "$RECORDS"`))
	fail := parseID(must("sbatch", "--parsable", "--chdir", work, "--wrap", "exit 1"))
	never := parseID(must("sbatch", "--parsable", "--chdir", work, "-d", fmt.Sprintf("afterok:%d", fail), "--wrap", "true"))
	held := parseID(must("sbatch", "--parsable", "--chdir", work, "-H", "-o", "held-%j.out",
		"--wrap", `echo "restarts ${SLURM_RESTART_COUNT:-0}"`))

	for k := range 4 {
		if j := waitJob(t, a, array+uint64(k), 60*time.Second); j.State != "COMPLETED" {
			t.Errorf("element %d_%d (job %d) ended %s", array, k, j.ID, j.State)
		}
	}
	if j := waitJob(t, a, after, 30*time.Second); j.State != "COMPLETED" {
		t.Errorf("afterok job ended %s (%s)", j.State, j.Reason)
	}
	if j := waitJob(t, a, never, 30*time.Second); j.State != "CANCELLED" || j.Reason != "DependencyNeverSatisfied" {
		t.Errorf("afterok on a failed job: %s (%s); want CANCELLED (DependencyNeverSatisfied)", j.State, j.Reason)
	}

	// Each element ran once with its ids; never more than two at once; the
	// afterok job after all of them.
	data, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ start, end float64 }
	var spans []span
	var tasks []string
	var afterAt float64
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "after" {
			afterAt, _ = strconv.ParseFloat(f[1], 64)
			continue
		}
		if len(f) != 6 || f[0] != fmt.Sprint(array) || f[3] != "4" {
			t.Fatalf("record %q: want ARRAY_JOB_ID=%d TASK JOB_ID COUNT=4 START END", line, array)
		}
		task, _ := strconv.Atoi(f[1])
		if f[2] != fmt.Sprint(array+uint64(task)) {
			t.Errorf("element %s has SLURM_JOB_ID %s; want %d", f[1], f[2], array+uint64(task))
		}
		tasks = append(tasks, f[1])
		s, _ := strconv.ParseFloat(f[4], 64)
		e, _ := strconv.ParseFloat(f[5], 64)
		spans = append(spans, span{s, e})
	}
	slices.Sort(tasks)
	if !slices.Equal(tasks, []string{"0", "1", "2", "3"}) {
		t.Errorf("elements that ran: %v; want 0-3 once each", tasks)
	}
	for _, sp := range spans {
		running := 0
		for _, o := range spans {
			if o.start <= sp.start && sp.start < o.end {
				running++
			}
		}
		if running > 2 {
			t.Errorf("%d elements running at %.3f; the throttle is 2", running, sp.start)
		}
		if afterAt != 0 && afterAt < sp.end {
			t.Errorf("the afterok job started at %.3f, before an element ended at %.3f", afterAt, sp.end)
		}
	}
	if afterAt == 0 {
		t.Error("the afterok job left no record")
	}
	for k := range 4 {
		if _, err := os.Stat(filepath.Join(work, fmt.Sprintf("sweep-%d_%d.out", array, k))); err != nil {
			t.Errorf("element %d's output file (%%x-%%A_%%a.out): %v", k, err)
		}
	}

	// shoal job takes an element as N_M.
	var el api.Job
	jsonOf(t, a, &el, "job", fmt.Sprintf("%d_2", array))
	if el.ID != array+2 || el.ArrayTaskID != 2 || el.JobIDString != fmt.Sprintf("%d_2", array) {
		t.Errorf("shoal job %d_2: id %d task %d (%s); want job %d", array, el.ID, el.ArrayTaskID, el.JobIDString, array+2)
	}

	// sacct and squeue name elements N_M, as users' tooling expects.
	got := must("sacct", "-X", "-n", "-P", "-j", fmt.Sprint(array), "-o", "JobID,State")
	want := []string{}
	for k := range 4 {
		want = append(want, fmt.Sprintf("%d_%d|COMPLETED", array, k))
	}
	if lines := strings.Split(got, "\n"); !slices.Equal(lines, want) {
		t.Errorf("sacct -j %d:\n%s\nwant:\n%s", array, got, strings.Join(want, "\n"))
	}

	// sbatch --wait exits with the job's exit code (an array's highest).
	if r := slurmCmd("sbatch", "--wait", "--chdir", work, "--array=0-2", "--wrap", `exit $SLURM_ARRAY_TASK_ID`); r.code != 2 {
		t.Errorf("sbatch --wait of an array exiting 0,1,2: exit %d; want 2\n%s", r.code, r.stderr)
	}
	if r := slurmCmd("sbatch", "--wait", "--chdir", work, "--wrap", "true"); r.code != 0 {
		t.Errorf("sbatch --wait of a job exiting 0: exit %d\n%s", r.code, r.stderr)
	}

	// The held job waits, visibly, until released; requeue runs it again.
	eventually(t, 10*time.Second, "the held job's reason", func() error {
		if got := must("squeue", "-h", "-j", fmt.Sprint(held), "-o", "%i %t %r"); got != fmt.Sprintf("%d PD JobHeldUser", held) {
			return fmt.Errorf("squeue shows %q", got)
		}
		return nil
	})
	must("scontrol", "release", fmt.Sprint(held))
	if j := waitJob(t, a, held, 30*time.Second); j.State != "COMPLETED" {
		t.Fatalf("released job ended %s", j.State)
	}
	must("scontrol", "requeue", fmt.Sprint(held))
	eventually(t, 30*time.Second, "the requeued job's second run", func() error {
		data, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("held-%d.out", held)))
		if !strings.Contains(string(data), "restarts 1") {
			return fmt.Errorf("output %q", data)
		}
		return nil
	})
	if j := waitJob(t, a, held, 30*time.Second); j.State != "COMPLETED" || j.RestartCount != 1 {
		t.Errorf("requeued job: %s with %d restarts; want COMPLETED after 1", j.State, j.RestartCount)
	}
}
