package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// lowScript is a job of the preemptible QoS that checkpoints on SIGTERM:
// it notes the signal and runs on, so its grace is what ends it; its
// second run (after the requeue) ends at once.
const lowScript = `#!/bin/sh
echo "start ${SLURM_RESTART_COUNT:-0} $(date +%s.%N)" >> "$RECORDS.$SLURM_JOB_ID"
[ "${SLURM_RESTART_COUNT:-0}" -ge 1 ] && exit 0
trap 'echo "term $(date +%s.%N)" >> "$RECORDS.$SLURM_JOB_ID"' TERM
i=0
while [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done
`

// startPreemptible starts a cluster whose queue policy lets QoS high
// (priority 10) preempt QoS low (0), whose jobs get grace between SIGTERM
// and the end, and returns its first agent.
func startPreemptible(t *testing.T, opts localcluster.Options, grace string) *localcluster.Agent {
	t.Helper()
	a := startCluster(t, opts).Agents[0]
	setPolicy(t, a, `{
		"weights": {"age": 1, "qos": 1000},
		"qos": {"low": 0, "high": 10},
		"preempt": {"high": ["low"]},
		"preempt_grace": "`+grace+`"
	}`)
	return a
}

// TestPreemption: a job of a QoS that may preempt another's, which finds
// the GPUs taken by that QoS's jobs, makes room: the victims get SIGTERM,
// run on through the grace time, then the one with --requeue is requeued
// (and runs again later) and the one without is cancelled Preempted; the
// preemptor then runs, after both victims' SIGTERM.
func TestPreemption(t *testing.T) {
	a := startPreemptible(t, localcluster.Options{Nodes: 1, GPUsPerNode: 2}, "2s")
	work := t.TempDir()
	records := filepath.Join(work, "rec")
	script := filepath.Join(work, "low.sh")
	if err := os.WriteFile(script, []byte(lowScript), 0o755); err != nil {
		t.Fatal(err)
	}
	batch := func(args ...string) uint64 {
		t.Helper()
		out := mustShoal(t, a, append([]string{"batch", "--parsable", "--chdir", work, "--export=ALL,RECORDS=" + records}, args...)...)
		id, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
		if err != nil {
			t.Fatalf("shoal batch printed %q", out)
		}
		return id
	}
	requeued := batch("-q", "low", "--gpus-per-node=1", "--requeue", script)
	cancelled := batch("-q", "low", "--gpus-per-node=1", "--no-requeue", script)
	for _, id := range []uint64{requeued, cancelled} {
		eventually(t, 20*time.Second, fmt.Sprintf("low job %d running", id), func() error {
			if _, err := os.Stat(fmt.Sprintf("%s.%d", records, id)); err != nil {
				return err
			}
			return nil
		})
	}
	high := batch("-q", "high", "--gpus-per-node=2", "--wrap", `echo "high $(date +%s.%N)" >> "$RECORDS.high"`)

	if j := waitJob(t, a, high, 60*time.Second); j.State != "COMPLETED" {
		t.Fatalf("preemptor ended %s (%s)", j.State, j.Reason)
	}
	if j := waitJob(t, a, cancelled, 30*time.Second); j.State != "CANCELLED" || j.Reason != "Preempted" {
		t.Errorf("victim without --requeue: %s (%s); want CANCELLED (Preempted)", j.State, j.Reason)
	}
	if j := waitJob(t, a, requeued, 60*time.Second); j.State != "COMPLETED" || j.RestartCount != 1 {
		t.Errorf("victim with --requeue: %s after %d restarts; want COMPLETED after 1", j.State, j.RestartCount)
	}

	stamp := func(file, word string) float64 {
		t.Helper()
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == word {
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				return v
			}
		}
		t.Fatalf("%s has no %q line:\n%s", file, word, data)
		return 0
	}
	highAt := stamp(records+".high", "high")
	for _, id := range []uint64{requeued, cancelled} {
		file := fmt.Sprintf("%s.%d", records, id)
		term := stamp(file, "term")
		if highAt < term {
			t.Errorf("the preemptor ran at %.3f, before victim %d had its SIGTERM at %.3f", highAt, id, term)
		}
	}
	if data, _ := os.ReadFile(fmt.Sprintf("%s.%d", records, requeued)); !strings.Contains(string(data), "start 1 ") {
		t.Errorf("the requeued victim did not run again:\n%s", data)
	}
}

// TestAdminPriority: root's `scontrol update JobId=N Priority=P` puts a
// later job ahead of an earlier one; `shoal priority` shows it.
func TestAdminPriority(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	a := c.Agents[0]
	shims := newSlurmShims(t, a)
	// The blocker holds the only GPU until the test cancels it, and the
	// two candidates are submitted held, so no scheduling pass can start
	// either of them before the raised priority is in place: the outcome
	// does not depend on when the leader's passes run.
	blocker := submit(t, a, "--gpus-per-node", "1", "--", "sleep", "60")
	waitState(t, a, blocker, "RUNNING", "")
	first := submit(t, a, "--hold", "--gpus-per-node", "1", "--", "sleep", "2")
	second := submit(t, a, "--hold", "--gpus-per-node", "1", "--", "sleep", "2")
	if r := shims.run("scontrol", "update", fmt.Sprintf("JobId=%d", second), "Priority=4000000000"); r.code != 0 {
		t.Fatalf("scontrol update Priority: exit %d: %s", r.code, r.stderr)
	}
	if r := shims.run("scontrol", "update", fmt.Sprintf("JobId=%d", second), "Bogus=5"); r.code == 0 || !strings.Contains(r.stderr, "Update of this parameter is not supported: bogus=5") {
		t.Errorf("scontrol update Bogus: exit %d %q; want refused by name", r.code, r.stderr)
	}
	if out := mustShoal(t, a, "priority", "-j", fmt.Sprint(second)); !strings.Contains(out, "4000000000") {
		t.Errorf("shoal priority -j %d:\n%s", second, out)
	}
	shims.must("scontrol", "release", fmt.Sprintf("%d,%d", first, second))
	// Both are pending on the blocker now; the pass that sees the GPU free
	// sees both, and must pick the raised one.
	waitState(t, a, first, "PENDING", "")
	waitState(t, a, second, "PENDING", "")
	mustShoal(t, a, "cancel", fmt.Sprint(blocker))
	j1, j2 := waitJob(t, a, first, 30*time.Second), waitJob(t, a, second, 30*time.Second)
	t1, err1 := time.Parse(time.RFC3339, j1.StartTime)
	t2, err2 := time.Parse(time.RFC3339, j2.StartTime)
	if err1 != nil || err2 != nil || !t2.Before(t1) {
		t.Errorf("job %d (raised) started at %s, job %d at %s; want the raised one first", second, j2.StartTime, first, j1.StartTime)
	}
}
