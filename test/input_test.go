package test

import (
	"fmt"
	"os"
	osexec "os/exec"
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

// TestSrunInputLocal: srun --input=FILE with no %t, %n or %N is read by
// srun on its own host and relayed to every task, as Slurm's srun does:
// the file is on a tmpfs mounted in srun's private mount namespace, which
// the tasks' nodes cannot see, and they read it all the same (srun
// expands %j itself; its stdin is /dev/null, as in a batch script). A
// per-task pattern is still opened by each task on its node, where that
// file is not.
func TestSrunInputLocal(t *testing.T) {
	if _, err := osexec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare (util-linux) is needed: %v", err)
	}
	_, sh := startWithShims(t, localcluster.Options{Nodes: 2})
	work := t.TempDir()
	id := sh.allocation("-N2", "--chdir", work)
	hidden := t.TempDir() // empty for the nodes; a tmpfs with the files for srun
	srun := filepath.Join(sh.dir, "srun")
	task := filepath.Join(work, "task.sh")
	if err := os.WriteFile(task, []byte("#!/bin/sh\necho \"$SLURM_PROCID read=[$(tr '\\n' ,)]\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`set -e
mount -t tmpfs shoal-test %[1]s
printf 'one\ntwo\n' > %[1]s/in.txt
printf 'job\n' > %[1]s/in-%[2]d.txt
printf 'zero\n' > %[1]s/task-0.txt
printf 'one\n' > %[1]s/task-1.txt
set +e
%[3]s -N2 -n2 -l --input=%[1]s/in.txt %[4]s
echo "plain exit $?"
%[3]s -N2 -n2 -l --input=in-%%j.txt --chdir=%[1]s %[4]s
echo "jobid exit $?"
%[3]s -N2 -n2 -l --input=%[1]s/task-%%t.txt %[4]s
echo "per-task exit $?"
`, hidden, id, srun, task)
	env := append(append([]string{}, sh.env...), "SLURM_JOB_ID="+fmt.Sprint(id))
	r := runEnv(t, env, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	slices.Sort(lines)
	want := []string{
		"0: 0 read=[one,two,]", "1: 1 read=[one,two,]", "plain exit 0",
		"0: 0 read=[job,]", "1: 1 read=[job,]", "jobid exit 0",
		"per-task exit 127",
	}
	slices.Sort(want)
	if !slices.Equal(lines, want) {
		t.Errorf("srun in a mount namespace of its own: exit %d, stderr %s\nstdout:\n%s\nwant the lines\n%s",
			r.code, r.stderr, strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(hidden, "in.txt")); !os.IsNotExist(err) {
		t.Errorf("%s/in.txt is seen outside srun's namespace (%v): the test shows nothing", hidden, err)
	}
}
