package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
	"github.com/shoal-sched/shoal/slurm"
)

// TestShimBinary: with shoal-slurm beside shoal (as make build installs
// them), install-shims links the Slurm names to it, a batch script's
// sbatch and squeue (the agent's shim dir) are it, and it answers like
// shoal does, through the links and under its own name. The agent runs
// tasks through it too: a batch script's supervisor is shoal-slurm, and
// the script, started through its exec shim or namespace helper, has its
// own pid as SLURM_TASK_PID.
func TestShimBinary(t *testing.T) {
	small := filepath.Join(filepath.Dir(shoalBin), slurm.ShimBinary)
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	a := c.Agents[0]
	s := newSlurmShims(t, a)
	for _, name := range slurm.Commands {
		if got, err := os.Readlink(filepath.Join(s.dir, string(name))); err != nil || got != small {
			t.Errorf("install-shims: %s -> %q (%v), want %s", name, got, err, small)
		}
	}

	// Inside a job: the agent's shim dir is first on PATH.
	work := t.TempDir()
	id := s.sbatch("--chdir", work, "-o", "job.out",
		"--wrap", `readlink "$(command -v sbatch)"; readlink "$(command -v shoal)"; squeue -h -j "$SLURM_JOB_ID" -o %i; `+
			`readlink /proc/$PPID/exe; [ "$SLURM_TASK_PID" = $$ ] && echo task-pid-ok`)
	if j := waitJob(t, a, id, 60*time.Second); j.ExitCode != 0 {
		t.Fatalf("job %d exited %d", id, j.ExitCode)
	}
	data, err := os.ReadFile(filepath.Join(work, "job.out"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	if len(lines) != 5 || filepath.Base(lines[0]) != slurm.ShimBinary || filepath.Base(lines[1]) != "shoal" || lines[2] != fmt.Sprint(id) ||
		lines[3] != small || lines[4] != "task-pid-ok" {
		t.Errorf("job output %q: want the shim dir's sbatch -> %s, shoal -> shoal, squeue printing job %d, the supervisor %s, and task-pid-ok",
			lines, slurm.ShimBinary, id, small)
	}

	// Under its own name, with the global flags first, as shoal slurm.
	r := runEnv(t, nil, small, "--data-dir", a.DataDir, "squeue", "-h", "-j", fmt.Sprint(id), "-t", "all", "-o", "%i %t")
	if r.code != 0 || strings.TrimSpace(r.stdout) != fmt.Sprintf("%d CD", id) {
		t.Errorf("%s squeue: exit %d, stdout %q, stderr %q; want %q", slurm.ShimBinary, r.code, r.stdout, r.stderr, fmt.Sprintf("%d CD", id))
	}
	r = shoal(t, a, "slurm", "squeue", "-h", "-j", fmt.Sprint(id), "-t", "all", "-o", "%i %t")
	if r.code != 0 || strings.TrimSpace(r.stdout) != fmt.Sprintf("%d CD", id) {
		t.Errorf("shoal slurm squeue: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
