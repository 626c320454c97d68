package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// srunOutputScript runs steps whose tasks write to files (srun -o/-e):
// one file per task for both streams, one stdout file per node shared by
// its two tasks with stderr in a file per task, and none.
const srunOutputScript = `#!/bin/sh
srun -N2 -n4 -o step-%t.out sh -c 'echo "out $SLURM_PROCID"; echo "err $SLURM_PROCID" >&2'
srun -N2 -n4 -o node-%n.out -e err-%t.txt sh -c 'echo "o$SLURM_PROCID"; echo "e$SLURM_PROCID" >&2'
srun -N1 -n1 -o none echo hidden
echo after
`

// TestSrunOutput: srun -o/-e inside a batch job send each task's output
// to the files their patterns name on its node, as slurmstepd does, not
// to srun (so not to the batch script's output): %t per task, %n per
// node (a file two tasks share, neither wiping the other's lines), -e
// apart from -o, and "none" for nothing.
func TestSrunOutput(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "job.sh"), []byte(srunOutputScript), 0o755); err != nil {
		t.Fatal(err)
	}
	// A stale file the first rank naming it must truncate.
	if err := os.WriteFile(filepath.Join(work, "node-0.out"), []byte("stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := newSlurmShims(t, a)
	out := sh.must("sbatch", "--parsable", "-N2", "-o", "batch.out", "--chdir", work, filepath.Join(work, "job.sh"))
	var id uint64
	if _, err := fmt.Sscan(out, &id); err != nil {
		t.Fatalf("sbatch --parsable printed %q", out)
	}
	j := waitJob(t, a, id, 60*time.Second)
	if j.State != "COMPLETED" {
		t.Fatalf("job %d: %s", id, j.State)
	}
	read := func(name string) []string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Errorf("job %d: %v", id, err)
			return nil
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(lines)
		return lines
	}
	want := map[string][]string{
		"batch.out":  {"after"},
		"node-0.out": {"o0", "o1"},
		"node-1.out": {"o2", "o3"},
	}
	for r := range 4 {
		want[fmt.Sprintf("step-%d.out", r)] = []string{fmt.Sprintf("err %d", r), fmt.Sprintf("out %d", r)}
		want[fmt.Sprintf("err-%d.txt", r)] = []string{fmt.Sprintf("e%d", r)}
	}
	for name, w := range want {
		if got := read(name); !slices.Equal(got, w) {
			t.Errorf("%s: %q; want %q", name, got, w)
		}
	}
}
