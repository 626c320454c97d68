package test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestBoundedMembership protects DESIGN "Membership and roles": with
// --raft-voters 3 --raft-replicas 1, six agents settle to 3 voters, 1 nonvoter and 2
// workers outside the raft configuration. The workers run a 2-node job
// to completion (they follow their jobs from a server and report to the
// leader through its hints), answer squeue through their own socket
// (reads go to the leader), and when a voter dies the nonvoter takes its
// place and a worker becomes the new replica, so any node can still lead.
func TestBoundedMembership(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 6, GPUsPerNode: 1, ExtraArgs: []string{"--raft-voters", "3", "--raft-replicas", "1"}})
	// roles are the nodes by raft role, as `shoal nodes` shows them
	// (none: a worker); an error while the cluster elects a leader.
	roles := func(from *localcluster.Agent) (voters, nonvoters, workers []string, err error) {
		r := shoal(t, from, "nodes", "--json")
		if r.code != 0 {
			return nil, nil, nil, fmt.Errorf("shoal nodes: %s", r.stderr)
		}
		var ns []api.Node
		if err := json.Unmarshal([]byte(r.stdout), &ns); err != nil {
			return nil, nil, nil, fmt.Errorf("shoal nodes --json: %w", err)
		}
		for _, n := range ns {
			name := n.Name
			switch n.Raft {
			case "leader", "voter":
				voters = append(voters, name)
			case "nonvoter":
				nonvoters = append(nonvoters, name)
			default:
				workers = append(workers, name)
			}
		}
		slices.Sort(workers)
		return voters, nonvoters, workers, nil
	}
	var workers []string
	eventually(t, 60*time.Second, "3 voters, 1 nonvoter and 2 workers", func() error {
		v, nv, w, err := roles(c.Agents[0])
		if err != nil {
			return err
		}
		if len(v) != 3 || len(nv) != 1 || len(w) != 2 {
			return fmt.Errorf("voters %v, nonvoters %v, workers %v", v, nv, w)
		}
		workers = w
		return nil
	})
	agent := func(name string) int {
		for i, a := range c.Agents {
			if a.Name == name {
				return i
			}
		}
		t.Fatalf("no agent %s", name)
		return -1
	}
	w0 := c.Agents[agent(workers[0])]

	// A 2-node job placed on the workers, submitted through one of them.
	id := submit(t, w0, "-N", "2", "-w", strings.Join(workers, ","), "--", "/bin/sh", "-c", "echo ran on $(hostname) $SLURM_NODEID")
	j := waitJob(t, w0, id, 60*time.Second)
	if j.State != "COMPLETED" {
		t.Fatalf("job %d on the workers = %s (%s); want COMPLETED", id, j.State, j.Reason)
	}
	if out := mustShoal(t, w0, "logs", fmt.Sprint(id)); strings.Count(out, "ran on") != 2 {
		t.Errorf("logs of job %d = %q; want both ranks' lines", id, out)
	}

	// squeue through the worker's own socket answers, from the leader.
	shims := t.TempDir()
	mustShoal(t, w0, "install-shims", shims)
	held := submit(t, w0, "--hold", "--", "true")
	r := runEnv(t, []string{"SHOAL_DATA_DIR=" + w0.DataDir}, filepath.Join(shims, "squeue"), "-h", "-o", "%i %t")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%d PD", held)) {
		t.Errorf("squeue through worker %s: exit %d, %q %q; want job %d pending", w0.Name, r.code, r.stdout, r.stderr, held)
	}

	// A voter killed (not the leader) is replaced: the nonvoter is
	// promoted and a worker becomes the replica.
	leader := leaderIndex(t, c, 0)
	var victim int
	for i, a := range c.Agents {
		if i != leader && nodesByName(t, c.Agents[leader])[a.Name].Raft == "voter" {
			victim = i
			break
		}
	}
	dead := c.Agents[victim].Name
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "3 voters and a former worker as the nonvoter, without "+dead, func() error {
		v, nv, w, err := roles(c.Agents[leader])
		if err != nil {
			return err
		}
		if len(v) != 3 || len(nv) != 1 || slices.Contains(v, dead) || !slices.Contains(workers, nv[0]) {
			return fmt.Errorf("voters %v, nonvoters %v, workers %v (workers before: %v)", v, nv, w, workers)
		}
		return nil
	})
	// The cluster still runs jobs on what is left of its workers.
	id = submit(t, w0, "-N", "2", "--", "true")
	if j := waitJob(t, w0, id, 60*time.Second); j.State != "COMPLETED" {
		t.Fatalf("job %d after the replacement = %s (%s); want COMPLETED", id, j.State, j.Reason)
	}
}
