package test

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// prologScript records its environment in $DIR/<kind>-<node>-<job> and
// fails where $DIR/fail-<kind>-<node> exists.
const prologScript = `#!/bin/sh
f="%s/$SLURM_SCRIPT_CONTEXT-$SLURMD_NODENAME-$SLURM_JOB_ID"
echo "user=$SLURM_JOB_USER uid=$SLURM_JOB_UID nodes=$SLURM_JOB_NODELIST whoami=$(id -u)" > "$f.tmp"
mv "$f.tmp" "$f"
test ! -e "%s/fail-$SLURM_SCRIPT_CONTEXT-$SLURMD_NODENAME"
`

// TestPrologEpilog: the agents' --prolog and --epilog run as Slurm's
// Prolog= and Epilog=: as root on each node of a job, the prolog before
// the job's first task there (a batch job's second node: before its
// first step), the epilog after the job ended there, also when it was
// cancelled; a failing prolog drains its node ("Prolog error") and
// requeues the job held by its user (or cancels one that may not be
// requeued); a failing epilog drains its node ("Epilog
// error").
func TestPrologEpilog(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(prologScript, dir, dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	a, sh := startWithShims(t, localcluster.Options{Nodes: 2, ExtraArgs: []string{"--prolog", script, "--epilog", script, "--prolog-epilog-timeout", "30s"}})
	work := t.TempDir()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b)), err
	}

	// A batch job on both nodes: each task finds its node's prolog done.
	out := sh.must("sbatch", "--parsable", "-N2", "-w", "n1,n2", "-o", "out.txt", "--chdir", work, "--wrap",
		fmt.Sprintf(`srun -N2 -n2 sh -c 'test -e %s/prolog_slurmd-$SLURMD_NODENAME-$SLURM_JOB_ID && echo "prolog seen on $SLURMD_NODENAME"'`, dir))
	var id uint64
	if _, err := fmt.Sscan(out, &id); err != nil {
		t.Fatalf("sbatch --parsable printed %q", out)
	}
	if j := waitJob(t, a, id, 60*time.Second); j.State != "COMPLETED" {
		t.Fatalf("job %d: %s", id, j.State)
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || !strings.Contains(string(b), "prolog seen on n1") || !strings.Contains(string(b), "prolog seen on n2") {
		t.Errorf("job %d output: %q, %v; want the prolog seen on n1 and n2", id, b, err)
	}
	for _, n := range []string{"n1", "n2"} {
		want := fmt.Sprintf("user=%s uid=%d nodes=n[1-2] whoami=0", me.Username, os.Getuid())
		if got, err := read(fmt.Sprintf("prolog_slurmd-%s-%d", n, id)); got != want {
			t.Errorf("prolog on %s: %q, %v; want %q", n, got, err, want)
		}
		eventually(t, 30*time.Second, "epilog on "+n, func() error {
			_, err := read(fmt.Sprintf("epilog_slurmd-%s-%d", n, id))
			return err
		})
	}

	// Cancelled: the epilog runs too.
	id = submit(t, a, "-w", "n2", "--", "sleep", "300")
	waitState(t, a, id, "RUNNING", "")
	sh.must("scancel", fmt.Sprint(id))
	eventually(t, 30*time.Second, "epilog of the cancelled job", func() error {
		_, err := read(fmt.Sprintf("epilog_slurmd-n2-%d", id))
		return err
	})

	// A failing prolog: n1 drained, the job requeued held.
	if err := os.WriteFile(filepath.Join(dir, "fail-prolog_slurmd-n1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out = sh.must("sbatch", "--parsable", "--requeue", "-w", "n1", "--chdir", work, "--wrap", "true")
	if _, err := fmt.Sscan(out, &id); err != nil {
		t.Fatalf("sbatch --parsable printed %q", out)
	}
	var j api.Job
	eventually(t, 30*time.Second, "job held", func() error {
		jsonOf(t, a, &j, "job", fmt.Sprint(id))
		if j.State != "PENDING" || j.Hold != "user" {
			return fmt.Errorf("job %d: %s hold %q (%s)", id, j.State, j.Hold, j.Reason)
		}
		return nil
	})
	if j.RestartCount != 1 {
		t.Errorf("job %d: restarts %d; want 1 (requeued once)", id, j.RestartCount)
	}
	waitNodeReason(t, a, "n1", "DRAIN", "Prolog error")

	// A job that may not be requeued (shoal submit's default) is
	// cancelled instead.
	mustShoal(t, a, "resume", "n1")
	id = submit(t, a, "-w", "n1", "--", "true")
	if j := waitJob(t, a, id, 60*time.Second); j.State != "CANCELLED" {
		t.Errorf("job %d (no requeue) after a failing prolog: %s; want CANCELLED", id, j.State)
	}
	waitNodeReason(t, a, "n1", "DRAIN", "Prolog error")

	// A failing epilog: n2 drained once its job ended.
	if err := os.WriteFile(filepath.Join(dir, "fail-epilog_slurmd-n2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id = submit(t, a, "-w", "n2", "--", "true")
	if j := waitJob(t, a, id, 60*time.Second); j.State != "COMPLETED" {
		t.Errorf("job %d with a failing epilog: %s; want COMPLETED", id, j.State)
	}
	waitNodeReason(t, a, "n2", "DRAIN", "Epilog error")
}

// waitNodeReason waits until node is in state with reason.
func waitNodeReason(t *testing.T, a *localcluster.Agent, node, state, reason string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("node %s %s (%s)", node, state, reason), func() error {
		var ns []api.Node
		jsonOf(t, a, &ns, "nodes")
		for _, n := range ns {
			if n.Name == node {
				if !strings.HasPrefix(n.State, state) || n.Reason != reason {
					return fmt.Errorf("node %s: %s (%s)", node, n.State, n.Reason)
				}
				return nil
			}
		}
		return fmt.Errorf("node %s: not listed", node)
	})
}
