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

// elasticBatchScript runs steps at points the test sets (files it
// creates in the work directory, each waited for at most 180 s): a step
// on the nodes the job starts with, one after it grew, one that runs
// while it loses a node (Slurm kills such a step), and one after. Each
// task logs its node and what it sees of the allocation.
const elasticBatchScript = `#!/bin/sh
wait_for() { i=0; while [ ! -e "$1" ] && [ $i -lt 900 ]; do sleep 0.2; i=$((i+1)); done; }
step() { srun sh -c 'echo "'$1' $SLURMD_NODENAME $SLURM_JOB_NUM_NODES $SLURM_NNODES $SLURM_JOB_NODELIST" >> steps.log'; }
echo "script $SLURMD_NODENAME $SLURM_JOB_NUM_NODES" >> steps.log
step s1
wait_for grown.go
step s2
srun sh -c 'echo "s3 $SLURMD_NODENAME" >> steps.log; i=0; while [ ! -e end3.go ] && [ $i -lt 900 ]; do sleep 0.2; i=$((i+1)); done'
echo "s3 exit $?" >> steps.log
step s4
wait_for end.go
echo "script done" >> steps.log
`

// TestElasticBatch is issue 17's elastic batch job: sbatch -N 2-3 starts
// on the 2 nodes free while a third runs another job, and grows onto it
// when that job ends; a step started then runs on 3 nodes and sees 3
// (SLURM_JOB_NUM_NODES, SLURM_NNODES, SLURM_JOB_NODELIST). A node other
// than the batch host loses its agent: the step running there is killed
// (srun fails), the job shrinks to 2 and runs on (DESIGN, node liveness:
// the node's ranks are fenced before the leader declares it down), the
// next step runs on the 2 nodes left, and scontrol, squeue and sacct show
// the sizes. The script's exit decides the job: COMPLETED.
func TestElasticBatch(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1, HostOf: ownLoopback})
	lead := leaderIndex(t, c, 0)
	cli := c.Agents[lead]
	sh := newSlurmShims(t, cli)
	work := t.TempDir()
	logf := filepath.Join(work, "steps.log")
	touch := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(work, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { touch("grown.go"); touch("end3.go"); touch("end.go") })
	lines := func(prefix string) [][]string {
		data, _ := os.ReadFile(logf)
		var out [][]string
		for l := range strings.Lines(string(data)) {
			if f := strings.Fields(l); len(f) > 0 && f[0] == prefix {
				out = append(out, f)
			}
		}
		return out
	}
	logged := func() string { data, _ := os.ReadFile(logf); return string(data) }

	bj := startBusy(t, cli, work, 900)
	script := filepath.Join(work, "job.sh")
	if err := os.WriteFile(script, []byte(elasticBatchScript), 0o755); err != nil {
		t.Fatal(err)
	}
	id := sh.sbatch("-N", "2-3", "--gpus-per-node=1", "--chdir", work, "-o", filepath.Join(work, "job.out"), script)
	var j api.Job
	eventually(t, 60*time.Second, "the first step on 2 nodes", func() error {
		if got := lines("s1"); len(got) != 2 {
			return fmt.Errorf("%d s1 lines:\n%s", len(got), logged())
		}
		return nil
	})
	jsonOf(t, cli, &j, "job", fmt.Sprint(id))
	if j.State != "RUNNING" || j.NumNodes != 2 || !j.Elastic {
		t.Fatalf("batch job %s on %v (elastic %v); want RUNNING on 2 nodes, elastic", j.State, j.Nodes, j.Elastic)
	}
	host := j.Nodes[0]
	for _, f := range lines("s1") {
		if len(f) != 5 || f[2] != "2" || f[3] != "2" {
			t.Errorf("first step saw %q; want 2 nodes", strings.Join(f, " "))
		}
	}

	// The busy job ends: the batch job grows onto its node.
	touch("busy.go")
	eventually(t, 60*time.Second, "the batch job grown to 3 nodes", func() error {
		jsonOf(t, cli, &j, "job", fmt.Sprint(id))
		if j.State != "RUNNING" || j.NumNodes != 3 {
			return fmt.Errorf("%s on %v", j.State, j.Nodes)
		}
		return nil
	})
	if j.Nodes[0] != host {
		t.Fatalf("batch host moved: %v, was %s first", j.Nodes, host)
	}
	touch("grown.go")
	eventually(t, 60*time.Second, "the second step on 3 nodes", func() error {
		if got := lines("s2"); len(got) != 3 {
			return fmt.Errorf("%d s2 lines:\n%s", len(got), logged())
		}
		return nil
	})
	var s2nodes []string
	for _, f := range lines("s2") {
		if len(f) != 5 || f[2] != "3" || f[3] != "3" {
			t.Errorf("step after the grow saw %q; want 3 nodes", strings.Join(f, " "))
		}
		s2nodes = append(s2nodes, f[1])
	}
	if !slices.Contains(s2nodes, bj.Nodes[0]) {
		t.Errorf("step after the grow ran on %v; want the node it grew onto, %s, among them", s2nodes, bj.Nodes[0])
	}
	eventually(t, 60*time.Second, "the third step on 3 nodes", func() error {
		if got := lines("s3"); len(got) != 3 {
			return fmt.Errorf("%d s3 lines:\n%s", len(got), logged())
		}
		return nil
	})

	// Kill the agent of a node the job may lose: not the batch host, not
	// the leader.
	victim := -1
	for i, a := range c.Agents {
		if i != lead && a.Name != host {
			victim = i
			break
		}
	}
	lost := c.Agents[victim].Name
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the step that ran on "+lost+" killed and the next one run on 2 nodes", func() error {
		if got := lines("s4"); len(got) != 2 {
			return fmt.Errorf("%d s4 lines:\n%s", len(got), logged())
		}
		return nil
	})
	if got := lines("s3"); len(got) != 4 || len(got[3]) != 3 || got[3][1] != "exit" || got[3][2] == "0" {
		t.Errorf("srun of the step that lost %s: want a failed exit:\n%s", lost, logged())
	}
	for _, f := range lines("s4") {
		if len(f) != 5 || f[2] != "2" || f[3] != "2" || f[1] == lost || strings.Contains(f[4], lost) {
			t.Errorf("step after the shrink saw %q; want 2 nodes, without %s", strings.Join(f, " "), lost)
		}
	}
	// The script waits for end.go, so the job still runs here.
	show := sh.must("scontrol", "show", "job", fmt.Sprint(id))
	for _, want := range []string{"JobState=RUNNING ", "NumNodes=2 ", "ResizeTime="} {
		if !strings.Contains(show, want) {
			t.Errorf("scontrol show job lacks %q:\n%s", want, show)
		}
	}
	if got := sh.must("squeue", "-h", "-j", fmt.Sprint(id), "-o", "%D"); got != "2" {
		t.Errorf("squeue NODES %q; want 2", got)
	}
	touch("end.go")
	j = waitJob(t, cli, id, 3*time.Minute)
	if j.State != "COMPLETED" || j.NumNodes != 2 || j.Nodes[0] != host {
		t.Fatalf("batch job %s on %v (exit %d); want COMPLETED on 2 nodes from %s:\n%s", j.State, j.Nodes, j.ExitCode, host, logged())
	}
	var hist []string
	for _, r := range j.Resizes {
		hist = append(hist, fmt.Sprintf("%s %s %d", r.Cause, r.Node, r.NumNodes))
	}
	if want := []string{"grow " + bj.Nodes[0] + " 3", "shrink " + lost + " 2"}; !slices.Equal(hist, want) {
		t.Errorf("resizes %q; want %q", hist, want)
	}
	acct := sh.must("sacct", "-j", fmt.Sprint(id), "-D", "-X", "-n", "-P", "--format", "JobID,State,NNodes")
	if want := fmt.Sprintf("%d|RESIZING|2\n%d|RESIZING|3\n%d|COMPLETED|2", id, id, id); acct != want {
		t.Errorf("sacct -D -X:\n%s\nwant:\n%s", acct, want)
	}
}
