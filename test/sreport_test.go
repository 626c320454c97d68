package test

import (
	"os/user"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestSreport: sreport through the install-shims links reports what a job
// held: a batch job holding both GPUs of a node for a few seconds shows
// in cluster Utilization's allocated GPU-seconds (at least its elapsed
// time × 2) and in user TopUsage under its user.
func TestSreport(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 1, GPUsPerNode: 2})
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	id, err := strconv.ParseUint(sh.must("sbatch", "--parsable", "--chdir", t.TempDir(), "-N", "1", "--gpus-per-node", "2", "--wrap", "sleep 3"), 10, 64)
	if err != nil {
		t.Fatalf("sbatch --parsable: %v", err)
	}
	j := waitJob(t, a, id, time.Minute)
	if j.State != "COMPLETED" {
		t.Fatalf("job %d: %s; want COMPLETED", id, j.State)
	}
	start, err1 := time.Parse(time.RFC3339, j.StartTime)
	end, err2 := time.Parse(time.RFC3339, j.EndTime)
	if err1 != nil || err2 != nil {
		t.Fatalf("job %d: start %q end %q", id, j.StartTime, j.EndTime)
	}
	ran := int64(end.Sub(start) / time.Second)

	// Cluster,TRES Name,Allocated,Down,PLND Down,Idle,Planned,Reported.
	out := sh.must("sreport", "-T", "gres/gpu", "-t", "Seconds", "-P", "-n", "cluster", "utilization", "start=now-1hours", "end=now+1hours")
	f := strings.Split(out, "|")
	if len(f) != 8 || f[0] != "shoal" || f[1] != "gres/gpu" {
		t.Fatalf("sreport cluster utilization: %q; want shoal|gres/gpu and 6 usage fields", out)
	}
	alloc, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || alloc < 2*ran {
		t.Errorf("sreport cluster utilization: Allocated %q; want at least %d GPU-seconds (2 GPUs × %d s)", f[2], 2*ran, ran)
	}
	idle, _ := strconv.ParseInt(f[5], 10, 64)
	reported, _ := strconv.ParseInt(f[7], 10, 64)
	if f[3] != "0" || f[4] != "0" || f[6] != "0" || alloc+idle != reported {
		t.Errorf("sreport cluster utilization: %q; want Down, PLND Down and Planned 0, Allocated+Idle = Reported", out)
	}

	// The header block and Slurm's columns.
	full := sh.must("sreport", "cluster", "Utilization", "start=now-1hours", "end=now+1hours")
	for _, want := range []string{"Cluster Utilization ", "Usage reported in CPU Minutes", "  Cluster Allocate     Down PLND Dow     Idle  Planned Reported"} {
		if !strings.Contains(full, want) {
			t.Errorf("sreport cluster Utilization:\n%s\nwant %q", full, want)
		}
	}

	t.Logf("sreport cluster Utilization:\n%s", full)

	// user TopUsage: Cluster,Login,Proper Name,Account,TRES Name,Used.
	top := sh.must("sreport", "-T", "gres/gpu", "-t", "Seconds", "-P", "-n", "user", "TopUsage", "start=now-1hours", "end=now+1hours")
	found := false
	for _, line := range strings.Split(top, "\n") {
		f := strings.Split(line, "|")
		if len(f) == 6 && f[1] == me.Username && f[4] == "gres/gpu" {
			found = true
			if used, err := strconv.ParseInt(f[5], 10, 64); err != nil || used < 2*ran {
				t.Errorf("sreport user top: %q; want at least %d GPU-seconds for %s", line, 2*ran, me.Username)
			}
		}
	}
	t.Logf("sreport user top:\n%s", top)
	if !found {
		t.Errorf("sreport user top:\n%s\nwant a line for %s", top, me.Username)
	}
	if r := sh.run("sreport", "job", "sizes"); r.code == 0 || !strings.Contains(r.stderr, "sreport: error:") {
		t.Errorf("sreport job sizes: exit %d, stderr %q; want a refusal", r.code, r.stderr)
	}
}
