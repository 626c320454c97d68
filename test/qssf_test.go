package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestQSSFPolicyOrdersTheQueue: with the queue policy's scheduler set to
// qssf (`shoal policy set`), a short job (10 min limit) queued behind a
// long one (2 h) of the same size starts first once the cluster frees;
// back under the default shoal scheduler, the same two start in
// submission order.
func TestQSSFPolicyOrdersTheQueue(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 2})
	a := c.Agents[0]
	dir := t.TempDir()
	setPolicy := func(name, body string) {
		t.Helper()
		f := filepath.Join(dir, name+".json")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		mustShoal(t, a, "policy", "set", f)
		var p api.PolicyResponse
		jsonOf(t, a, &p, "policy", "show")
		if p.Policy.Scheduler != name {
			t.Fatalf("policy show after setting %s: scheduler %q", name, p.Policy.Scheduler)
		}
	}
	state := func(id uint64) string {
		t.Helper()
		var j api.Job
		jsonOf(t, a, &j, "job", fmt.Sprint(id))
		return j.State
	}
	// round fills the node, queues a long then a short job of the same
	// size, frees the node and returns the job that started and the one
	// still pending.
	round := func() (long, short, started, pending uint64) {
		t.Helper()
		filler := submit(t, a, "--gpus-per-node", "2", "--", "sleep", "600")
		eventually(t, 30*time.Second, "the filler running", func() error {
			if s := state(filler); s != "RUNNING" {
				return fmt.Errorf("job %d %s", filler, s)
			}
			return nil
		})
		long = submit(t, a, "--gpus-per-node", "2", "--time", "2:00:00", "--", "sleep", "600")
		short = submit(t, a, "--gpus-per-node", "2", "--time", "10:00", "--", "sleep", "600")
		mustShoal(t, a, "cancel", fmt.Sprint(filler))
		// Only one fits: once one runs, the other must still pend.
		eventually(t, 30*time.Second, "one of the queued jobs running", func() error {
			sl, ss := state(long), state(short)
			switch {
			case sl == "RUNNING" && ss == "PENDING":
				started, pending = long, short
			case ss == "RUNNING" && sl == "PENDING":
				started, pending = short, long
			default:
				return fmt.Errorf("long %d %s, short %d %s", long, sl, short, ss)
			}
			return nil
		})
		mustShoal(t, a, "cancel", fmt.Sprint(started), fmt.Sprint(pending))
		for _, id := range []uint64{filler, started, pending} {
			waitJob(t, a, id, 30*time.Second)
		}
		return long, short, started, pending
	}

	setPolicy("qssf", `{"scheduler": "qssf"}`)
	if out := mustShoal(t, a, "policy", "show"); !strings.Contains(out, `"scheduler": "qssf"`) {
		t.Errorf("policy show:\n%s\nwant \"scheduler\": \"qssf\"", out)
	}
	if long, short, started, _ := round(); started != short {
		t.Errorf("qssf: job %d (long) started before job %d (short); want the short one first", long, short)
	}
	setPolicy("shoal", `{}`)
	if long, short, started, _ := round(); started != long {
		t.Errorf("shoal: job %d (short) started before job %d (long); want submission order", short, long)
	}
}
