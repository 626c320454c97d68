package test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestNodeSets runs -w, -x, -C and --exclusive on real agents: a job
// pinned to a named node runs there, an excluded node is avoided, a
// constraint picks the featured node (and one no node can meet is refused
// at submit), and an exclusive job waits for a busy node to empty, then
// takes all its GPUs while a job that would share it waits.
func TestNodeSets(t *testing.T) {
	t.Parallel()
	c := startCluster(t, localcluster.Options{Nodes: 3, Initial: 2, BootstrapExpect: 2, GPUsPerNode: 2})
	n1, n2, n3 := c.Agents[0].Name, c.Agents[1].Name, c.Agents[2].Name
	c.Agents[2].Args = append(c.Agents[2].Args, "--features", "ib,h100")
	if err := c.StartAgent(2); err != nil {
		t.Fatal(err)
	}
	a := c.Agents[0]
	eventually(t, 60*time.Second, n3+" registered with its features", func() error {
		n, ok := nodesByName(t, a)[n3]
		if !ok || n.State != "IDLE" || !slices.Equal(n.Features, []string{"ib", "h100"}) {
			return fmt.Errorf("node %s: %+v", n3, n)
		}
		return nil
	})
	if out := mustShoal(t, a, "slurm", "scontrol", "show", "nodes", n3); !strings.Contains(out, "AvailableFeatures=ib,h100") {
		t.Errorf("scontrol show nodes %s:\n%s\nwant AvailableFeatures=ib,h100", n3, out)
	}

	ranOn := func(id uint64) []string {
		t.Helper()
		j := waitJob(t, a, id, 60*time.Second)
		if j.State != "COMPLETED" {
			t.Fatalf("job %d: %s (%s); want COMPLETED", id, j.State, j.Reason)
		}
		return j.Nodes
	}
	if got := ranOn(submit(t, a, "-w", n2, "--", "true")); !slices.Equal(got, []string{n2}) {
		t.Errorf("-w %s ran on %v", n2, got)
	}
	if got := ranOn(submit(t, a, "-N", "2", "-x", n1, "--", "true")); !slices.Equal(got, []string{n2, n3}) {
		t.Errorf("-N 2 -x %s ran on %v", n1, got)
	}
	if got := ranOn(submit(t, a, "-C", "ib&h100", "--gpus-per-node", "1", "--", "true")); !slices.Equal(got, []string{n3}) {
		t.Errorf("-C ib&h100 ran on %v", got)
	}
	if r := shoal(t, a, "submit", "-C", "v100", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, `constraint "v100": no node has these features`) {
		t.Errorf("submit -C v100: exit %d, stderr %q; want refused naming the feature", r.code, r.stderr)
	}

	// --exclusive waits for n1 to empty: a GPU-less job holds it.
	busy := submit(t, a, "-w", n1, "--", "sleep", "300")
	waitState(t, a, busy, "RUNNING", "")
	excl := submit(t, a, "--exclusive", "-w", n1, "--", "sleep", "300")
	waitState(t, a, excl, "PENDING", "Resources")
	mustShoal(t, a, "cancel", fmt.Sprint(busy))
	j := waitState(t, a, excl, "RUNNING", "")
	if g := j.GPUs[n1]; len(g) != 2 {
		t.Errorf("exclusive job's GPUs on %s = %v; want both", n1, g)
	}
	if out := mustShoal(t, a, "job", fmt.Sprint(excl)); !strings.Contains(out, "ReqNodeList="+n1) || !strings.Contains(out, "OverSubscribe=NO") {
		t.Errorf("shoal job %d:\n%s\nwant ReqNodeList=%s and OverSubscribe=NO", excl, out, n1)
	}
	// Nothing joins the exclusive job's node, GPU-less or not.
	share := submit(t, a, "-w", n1, "--", "true")
	waitState(t, a, share, "PENDING", "Resources")
	mustShoal(t, a, "cancel", fmt.Sprint(excl))
	if got := ranOn(share); !slices.Equal(got, []string{n1}) {
		t.Errorf("job %d ran on %v; want %s", share, got, n1)
	}
}
