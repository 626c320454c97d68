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

// TestNoKill: a batch job submitted with --no-kill keeps running when its
// second node's agent is killed (the node fences its ranks and is marked
// down); its script then runs a step on the node left and ends
// COMPLETED. The same job without --no-kill (and --no-requeue) ends
// NODE_FAIL.
func TestNoKill(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	// The job's first node is the first of its nodes by name, as Slurm
	// orders a nodelist: it must stay, and the other one (killed) must not
	// be the leader. So kill the last-named agent that does not lead, keep
	// the first-named one (never that one), and send commands through the
	// third agent's shims.
	first, second, cli, sh := noKillNodes(t, c)
	work := t.TempDir()
	script := filepath.Join(work, "job.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
# Wait (at most 120 s) for the test to say the second node is gone.
i=0
while [ ! -e "$1.go" ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done
srun -N1 -w `+c.Agents[first].Name+` hostname
echo done
`), 0o755); err != nil {
		t.Fatal(err)
	}
	nodes := c.Agents[first].Name + "," + c.Agents[second].Name
	ids := map[string]uint64{}
	for _, name := range []string{"nokill", "kill"} {
		args := []string{"-N2", "-w", nodes, "--gpus-per-node=1", "--chdir", work,
			"-o", filepath.Join(work, name+".out"), "-J", name}
		if name == "nokill" {
			args = append(args, "--no-kill")
		} else {
			args = append(args, "--no-requeue") // else it pends again
		}
		ids[name] = sh.sbatch(append(args, script, filepath.Join(work, name))...)
	}
	eventually(t, 30*time.Second, "both jobs running", func() error {
		for name, id := range ids {
			var j api.Job
			jsonOf(t, cli, &j, "job", fmt.Sprint(id), "--json")
			if j.State != "RUNNING" {
				return fmt.Errorf("%s: %s", name, j.State)
			}
		}
		return nil
	})
	if err := c.Kill(second); err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, cli, ids["kill"], 60*time.Second)
	if j.State != "NODE_FAIL" {
		t.Errorf("job without --no-kill after losing %s: %s; want NODE_FAIL", c.Agents[second].Name, j.State)
	}
	// The same NodeDown left the --no-kill job running.
	jsonOf(t, cli, &j, "job", fmt.Sprint(ids["nokill"]), "--json")
	if j.State != "RUNNING" {
		t.Fatalf("--no-kill job after losing %s: %s (%s); want RUNNING", c.Agents[second].Name, j.State, j.Reason)
	}
	for _, name := range []string{"nokill", "kill"} {
		if err := os.WriteFile(filepath.Join(work, name+".go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j = waitJob(t, cli, ids["nokill"], 60*time.Second)
	out, _ := os.ReadFile(filepath.Join(work, "nokill.out"))
	if j.State != "COMPLETED" || !strings.Contains(string(out), c.Agents[first].Name) || !strings.Contains(string(out), "done") {
		t.Errorf("--no-kill job: %s; want COMPLETED, with its step's output:\n%s", j.State, out)
	}
}

// noKillNodes picks, from a 3-agent cluster, a job's two nodes and the
// agent that talks to it: first, the first-named agent (a job's first
// node, by name as Slurm orders a nodelist: it must stay); second, the
// last-named one that does not lead (the one to kill); cli, the one left,
// with its shims (they send the commands).
func noKillNodes(t *testing.T, c *localcluster.Cluster) (first, second int, cli *localcluster.Agent, sh *slurmShims) {
	t.Helper()
	lead := leaderIndex(t, c, 0)
	byName := []int{0, 1, 2}
	slices.SortFunc(byName, func(x, y int) int { return strings.Compare(c.Agents[x].Name, c.Agents[y].Name) })
	first, second = byName[0], byName[2]
	if second == lead {
		second = byName[1]
	}
	cli = c.Agents[3-first-second]
	return first, second, cli, newSlurmShims(t, cli)
}
