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

// inputScript reads its stdin (sbatch -i), then runs steps with srun's
// --input: none, a file per task (%t), and task 0, which srun refuses
// (it does not relay its stdin) with exit code 1, as Slurm's srun exits
// on an error.
const inputScript = `#!/bin/sh
while read -r l; do echo "batch read $l"; done
srun -N2 -n2 --input=none sh -c 'echo "none $SLURM_PROCID read=[$(cat)]"'
srun -N2 -n2 -i step-%t.txt sh -c 'echo "file $SLURM_PROCID on $SLURMD_NODENAME read=[$(cat)]"'
printf 'x\ny\n' | srun -N2 -n2 -i 0 sh -c 'echo "task $SLURM_PROCID read=[$(tr "\n" ,)]"'
echo "task0 exit $?"
srun -N2 -n2 -i missing.txt cat
echo "missing exit $?"
srun -N2 -n2 -i missing-%t.txt cat
echo "missing-t exit $?"
`

// TestInput: sbatch --input's file (a pattern, %x here) is the batch
// script's stdin; srun --input=none gives tasks /dev/null and
// --input=step-%t.txt gives each task its own file on its node; srun
// --input=0 sends srun's stdin to task 0 alone, and a plain file srun
// cannot open is refused with Slurm's error, before any step starts.
func TestInput(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	work := t.TempDir()
	files := map[string]string{
		"in.sh":      inputScript,
		"inp.in":     "alpha\nbeta\n",
		"step-0.txt": "zero",
		"step-1.txt": "one",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	r := runEnv(t, []string{"SHOAL_DATA_DIR=" + a.DataDir}, filepath.Join(shims, "sbatch"),
		"--parsable", "-N2", "-J", "inp", "-i", "%x.in", "-o", "out-%j.txt", "--chdir", work, filepath.Join(work, "in.sh"))
	if r.code != 0 {
		t.Fatalf("sbatch: exit %d %s", r.code, r.stderr)
	}
	var id uint64
	if _, err := fmt.Sscan(r.stdout, &id); err != nil {
		t.Fatalf("sbatch --parsable printed %q", r.stdout)
	}
	j := waitJob(t, a, id, 60*time.Second)
	data, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("out-%d.txt", id)))
	if err != nil {
		t.Fatalf("job %d (%s): output: %v", id, j.State, err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	slices.Sort(lines)
	want := []string{
		"batch read alpha",
		"batch read beta",
		"file 0 on " + j.Nodes[0] + " read=[zero]",
		"file 1 on " + j.Nodes[1] + " read=[one]",
		"none 0 read=[]",
		"none 1 read=[]",
		"task 0 read=[x,y,]",
		"task 1 read=[]",
		"task0 exit 0",
		"srun: error: Could not open stdin file: No such file or directory",
		"missing exit 1",
		"missing-t exit 127",
	}
	slices.Sort(want)
	if !slices.Equal(lines, want) {
		t.Errorf("job %d (%s) output:\n%s\nwant the lines\n%s", id, j.State, strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	r = runEnv(t, []string{"SHOAL_DATA_DIR=" + a.DataDir}, filepath.Join(shims, "scontrol"), "show", "job", fmt.Sprint(id))
	if want := "StdIn=" + filepath.Join(work, "inp.in"); r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("scontrol show job %d: exit %d\n%s\nwant %s", id, r.code, r.stdout, want)
	}
	// The refused srun starts no step; the one whose tasks cannot open
	// their files fails to start, with the shell's 127.
	if j.State != "COMPLETED" || len(j.Steps) != 4 || j.Steps[3].State != "FAILED" || j.Steps[3].ExitCode != 127 {
		t.Errorf("job %d = %s with steps %+v; want COMPLETED with 4 steps, the last FAILED with 127", id, j.State, j.Steps)
	}
}
