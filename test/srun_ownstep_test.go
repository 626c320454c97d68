package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestSrunOwnStep: srun outside an allocation with -o/-e, an --input
// file or --bcast runs its command as step 0 of an allocation of its own,
// as Slurm's srun always does: each task writes the file its pattern
// names, reads its input file, runs the broadcast copy; srun exits with
// the step's code and releases the allocation.
func TestSrunOwnStep(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	sh := newSlurmShims(t, a)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "in.txt"), []byte("from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := sh.run("srun", "-N2", "-n3", "--chdir", work, "-o", "out-%j-%t.txt", "-e", "err-%t.txt", "sh", "-c", `echo "out $SLURM_PROCID $SLURM_STEP_ID"; echo "err $SLURM_PROCID" >&2; exit $SLURM_PROCID`)
	if r.code != 2 || r.stdout != "" {
		t.Errorf("srun -o/-e: exit %d, stdout %q; want 2 (the worst task's) and nothing\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var job uint64
	for rank := range 3 {
		matches, _ := filepath.Glob(filepath.Join(work, fmt.Sprintf("out-*-%d.txt", rank)))
		if len(matches) != 1 {
			t.Fatalf("task %d: output files %q; want one", rank, matches)
		}
		if _, err := fmt.Sscanf(filepath.Base(matches[0]), "out-%d-", &job); err != nil {
			t.Fatalf("%s: %v", matches[0], err)
		}
		for file, want := range map[string]string{matches[0]: fmt.Sprintf("out %d 0", rank), filepath.Join(work, fmt.Sprintf("err-%d.txt", rank)): fmt.Sprintf("err %d", rank)} {
			b, err := os.ReadFile(file)
			if got := strings.TrimSpace(string(b)); err != nil || got != want {
				t.Errorf("%s: %q, %v; want %q", file, got, err, want)
			}
		}
	}
	// The allocation is released once the step ended.
	if j := waitJob(t, a, job, 60*time.Second); j.State != "COMPLETED" {
		t.Errorf("job %d: %s; want COMPLETED (released)", job, j.State)
	}

	if out := sh.must("srun", "-N2", "--chdir", work, "--input=in.txt", "cat"); out != "from-file\nfrom-file" {
		t.Errorf("srun --input=in.txt cat: %q; want the file from each task", out)
	}
	if out := sh.must("srun", "-N1", "--chdir", work, "--bcast=bcast-echo", "echo", "copied"); out != "copied" {
		t.Errorf("srun --bcast echo: %q", out)
	}
}
