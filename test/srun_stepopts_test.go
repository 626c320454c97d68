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

// TestStepOptions: srun's step options that Debian's Slurm runs inside
// an allocation (step_refusals_golden.txt), on real agents: -x runs the
// step on the job's other nodes only, a step's own --signal reaches its
// tasks before the job's time limit, and --no-kill keeps a step's tasks
// running on the node left when another node of the step fails, where a
// step without it is ended (DESIGN invariant 1: the lost node's share is
// released, the survivors' GPUs stay the job's).
func TestStepOptions(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1})
	t.Run("Exclude", func(t *testing.T) { testStepExclude(t, c) })
	t.Run("Signal", func(t *testing.T) { testStepSignal(t, c) })
	// Last: it kills an agent.
	t.Run("NoKill", func(t *testing.T) { testStepNoKill(t, c) })
}

// testStepExclude: srun -x in a three-node job runs on the two others,
// -N1 -x on the first one left; -x of every node is refused in Slurm's
// words and the script goes on.
func testStepExclude(t *testing.T, c *localcluster.Cluster) {
	a := c.Agents[0]
	sh := newSlurmShims(t, a)
	work := t.TempDir()
	out := filepath.Join(work, "out")
	excl := c.Agents[1].Name
	all := c.Agents[0].Name + "," + c.Agents[1].Name + "," + c.Agents[2].Name
	id := sh.sbatch("-N3", "--chdir", work, "-o", out, "--wrap", `
srun -x `+excl+` sh -c 'echo "all but: $SLURMD_NODENAME of $SLURM_STEP_NUM_NODES"'
srun -N1 -x `+excl+` sh -c 'echo "one: $SLURMD_NODENAME"'
srun -x `+all+` true
echo "every node excluded: exit $?"`)
	j, data := completedOutput(t, a, id, out)
	var others []string
	for _, n := range j.Nodes {
		if n != excl {
			others = append(others, n)
		}
	}
	if len(j.Nodes) != 3 || len(others) != 2 {
		t.Fatalf("job %d on %q; want 3 nodes, %s among them", id, j.Nodes, excl)
	}
	var got []string
	for _, l := range strings.Split(data, "\n") {
		if n, ok := strings.CutPrefix(l, "all but: "); ok {
			got = append(got, n)
		}
	}
	slices.Sort(got)
	want := []string{others[0] + " of 2", others[1] + " of 2"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("srun -x %s ran on %q; want %q\n%s", excl, got, want, data)
	}
	for _, line := range []string{
		"one: " + others[0],
		fmt.Sprintf("srun: error: Unable to create step for job %d: Requested node configuration is not available", id),
		"every node excluded: exit 1",
	} {
		if !strings.Contains(data, line) {
			t.Errorf("output lacks %q:\n%s", line, data)
		}
	}
}

// testStepSignal: srun --signal=USR2@4 in a job of 7 s (which has no
// --signal of its own) traps USR2 before the job times out; a step
// beside it (--overlap: both run at once) without --signal gets none.
func testStepSignal(t *testing.T, c *localcluster.Cluster) {
	a := c.Agents[0]
	sh := newSlurmShims(t, a)
	work := t.TempDir()
	trap := `trap "date +%s.%N > $0-usr2-$SLURM_PROCID" USR2; i=0; while [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done`
	id := sh.sbatch("-N1", "--time=0:07", "--chdir", work, "-o", filepath.Join(work, "out"), "--wrap", `
srun --overlap --signal=USR2@4 sh -c '`+trap+`' warned &
srun --overlap sh -c '`+trap+`' plain &
wait`)
	j := waitJob(t, a, id, 60*time.Second)
	if j.State != "TIMEOUT" {
		data, _ := os.ReadFile(filepath.Join(work, "out"))
		t.Fatalf("job %d = %s; want TIMEOUT\n%s", id, j.State, data)
	}
	if at := stampAt(t, filepath.Join(work, "warned-usr2-0")); !at.Before(jobEnd(t, j)) {
		t.Errorf("the --signal step trapped USR2 at %v, not before the job ended at %s", at, j.EndTime)
	}
	if _, err := os.Stat(filepath.Join(work, "plain-usr2-0")); err == nil {
		t.Errorf("the step without --signal got USR2; only the step that asked should")
	}
}

// testStepNoKill: a --no-kill batch job runs two steps on its two nodes,
// one with srun --no-kill and one without, and loses its second node
// (the agent is killed). The step without --no-kill is ended, as Slurm's
// srun ends it ("Node failure", "Force Terminated"); the --no-kill
// step's task on the node left keeps running and answers the test after
// the loss.
func testStepNoKill(t *testing.T, c *localcluster.Cluster) {
	// As TestNoKill: the job's first node (the first by name, where the
	// script runs) stays; the killed one is not the leader; the shims run
	// on the third agent.
	first, second, cli, sh := noKillNodes(t, c)
	work := t.TempDir()
	out := filepath.Join(work, "out")
	// Each task says it is ready, then waits (at most 120 s) to be poked
	// and says so.
	task := `touch "$0-ready-$SLURM_PROCID"; i=0; while [ ! -e poke ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done; echo poked > "$0-poked-$SLURM_PROCID"`
	id := sh.sbatch("-N2", "-w", c.Agents[first].Name+","+c.Agents[second].Name, "--no-kill", "--chdir", work, "-o", out, "--wrap", `
srun -J nokill --overlap --no-kill sh -c '`+task+`' nokill &
nokill=$!
srun -J kill --overlap sh -c '`+task+`' kill &
kill=$!
wait $nokill
echo "nokill srun exit $?"
wait $kill
echo "kill srun exit $?"
echo script done`)
	eventually(t, 60*time.Second, "both steps' tasks ready on both nodes", func() error {
		for _, f := range []string{"nokill-ready-0", "nokill-ready-1", "kill-ready-0", "kill-ready-1"} {
			if _, err := os.Stat(filepath.Join(work, f)); err != nil {
				return err
			}
		}
		return nil
	})
	if err := c.Kill(second); err != nil {
		t.Fatal(err)
	}
	lost := c.Agents[second].Name
	stepNamed := func(j api.Job, name string) api.Step {
		for _, st := range j.Steps {
			if st.Name == name {
				return st
			}
		}
		t.Fatalf("job %d has no step %s: %+v", j.ID, name, j.Steps)
		return api.Step{}
	}
	eventually(t, 90*time.Second, "the node lost, the step without --no-kill ended", func() error {
		var j api.Job
		jsonOf(t, cli, &j, "job", fmt.Sprint(id))
		if j.State != "RUNNING" {
			return fmt.Errorf("job %s (%s); want RUNNING (--no-kill)", j.State, j.Reason)
		}
		if st := stepNamed(j, "kill"); st.State == "RUNNING" {
			return fmt.Errorf("step %d (kill) %s %+v", st.ID, st.State, st.NodeTasks)
		}
		return nil
	})
	var j api.Job
	jsonOf(t, cli, &j, "job", fmt.Sprint(id))
	nk := stepNamed(j, "nokill")
	// A step node's state stays "assigned" until its tasks exit.
	if nk.State != "RUNNING" || len(nk.NodeTasks) != 2 || nk.NodeTasks[0].State != "assigned" || nk.NodeTasks[1].State != "lost" {
		t.Fatalf("step %d (nokill) %s %+v after losing %s; want RUNNING, assigned on %s and lost on %s",
			nk.ID, nk.State, nk.NodeTasks, lost, c.Agents[first].Name, lost)
	}
	if err := os.WriteFile(filepath.Join(work, "poke"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, cli, id, 90*time.Second)
	data, _ := os.ReadFile(out)
	if j.State != "COMPLETED" || !strings.Contains(string(data), "script done") {
		t.Fatalf("job %d = %s; want COMPLETED with its script done\n%s", id, j.State, data)
	}
	if _, err := os.Stat(filepath.Join(work, "nokill-poked-0")); err != nil {
		t.Errorf("the --no-kill step's task on %s did not answer after %s was lost: %v\n%s", c.Agents[first].Name, lost, err, data)
	}
	if _, err := os.Stat(filepath.Join(work, "kill-poked-0")); err == nil {
		t.Errorf("the step without --no-kill still ran on %s after %s was lost\n%s", c.Agents[first].Name, lost, data)
	}
	// The --no-kill step ends FAILED (tasks died with the node): srun
	// exits 1; the other's survivor was terminated (SIGTERM: 143).
	for _, line := range []string{
		"nokill srun exit 1",
		"kill srun exit 143",
		"srun: error: Node failure on " + lost,
		fmt.Sprintf("srun: Force Terminated StepId=%d.%d", id, stepNamed(j, "kill").ID),
	} {
		if !strings.Contains(string(data), line) {
			t.Errorf("output lacks %q:\n%s", line, data)
		}
	}
}

// protocol4Allocation restarts a server of c (not agent 0) announcing
// protocol 4 and returns shims on agent 0, an allocation of one node
// there and its work directory, once the leader's protocol gate sees the
// older server: srun --signal, a step of protocol 5, is refused with
// the gate's message.
func protocol4Allocation(t *testing.T, c *localcluster.Cluster) (*slurmShims, uint64, string) {
	t.Helper()
	a := c.Agents[0]
	restartOlder(t, c, "4")
	sh := newSlurmShims(t, a)
	work := t.TempDir()
	id := sh.allocation("-N1", "-w", a.Name, "--chdir", work, "-o", "/dev/null")
	eventually(t, 60*time.Second, "the step with --signal refused for protocol 5", func() error {
		r := sh.run("srun", "--jobid", fmt.Sprint(id), "--signal=USR1@10", "--chdir", work, "true")
		if r.code == 0 || !strings.Contains(r.stderr, "not supported by every server of the cluster: it needs protocol v5") {
			return fmt.Errorf("exit %d, stderr %s", r.code, r.stderr)
		}
		return nil
	})
	return sh, id, work
}

// TestStepSignalOlderCluster: while a server speaks a protocol older
// than a step's own --signal (5; a rolling upgrade), a step with it is
// refused with the 409 that names the protocol, since an older replica
// would drop the signal; a step without it still starts, and steps share
// the allocation (none holds its CPUs and GPUs or waits for another's).
func TestStepSignalOlderCluster(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3})
	a := c.Agents[0]
	sh, id, work := protocol4Allocation(t, c)
	if r := sh.run("srun", "--jobid", fmt.Sprint(id), "--chdir", work, "true"); r.code != 0 {
		t.Errorf("srun --jobid %d true (no --signal): exit %d %s", id, r.code, r.stderr)
	}

	// Steps share the allocation while a server speaks 4, as before
	// protocol 5 (which lets a step hold its CPUs and GPUs): two steps
	// that each wait (at most 120 s) for the other run at once, and srun
	// says nothing of waiting.
	out := filepath.Join(work, "shared.out")
	wait := `touch $0; i=0; while [ ! -e $1 ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done; [ -e $1 ] && echo "$0 saw $1"`
	id = sh.sbatch("-N1", "-w", a.Name, "--chdir", work, "-o", out, "--wrap", `
srun -n1 sh -c '`+wait+`' one two &
srun -n1 sh -c '`+wait+`' two one &
wait`)
	if j := waitJob(t, a, id, 180*time.Second); j.State != "COMPLETED" {
		t.Errorf("job %d = %s; want COMPLETED", id, j.State)
	}
	data, _ := os.ReadFile(out)
	if !strings.Contains(string(data), "one saw two") || !strings.Contains(string(data), "two saw one") || strings.Contains(string(data), "step creation") {
		t.Errorf("two steps with a server at protocol 4: want them run at once, sharing, with no wait:\n%s", data)
	}
}
