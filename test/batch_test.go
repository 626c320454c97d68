package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/localcluster"
)

// trainScript is a typical multi-node training script, unchanged from
// what users run under Slurm: #SBATCH headers with comments, MASTER_ADDR
// from scontrol, srun steps, one failing step whose exit code the script
// sees.
const trainScript = `#!/bin/sh
#SBATCH --job-name=train   # shown in squeue
#SBATCH -N 2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-node=2
#SBATCH --time=05:00
#SBATCH --output=%x-%j.out

echo "batch SLURM_JOB_ID=$SLURM_JOB_ID SLURM_NNODES=$SLURM_NNODES PROCID=$SLURM_PROCID"
MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
echo "master $MASTER"
#SBATCH --nodes=9   this is in the body: ignored
srun --label sh -c 'echo "task $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME step $SLURM_STEP_ID rank $RANK gpus $CUDA_VISIBLE_DEVICES"'
srun -N1 -n1 sh -c 'exit 3'
echo "second step exit $?"
echo done
`

// TestBatchScriptWithSteps: an sbatch script runs on the allocation's
// first node with Slurm's environment, its srun steps run on every node
// with the step contract, their output reaches the script's output file,
// srun returns the step's exit code, and the steps are recorded.
func TestBatchScriptWithSteps(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[1]
	work := t.TempDir()
	script := filepath.Join(work, "train.sh")
	if err := os.WriteFile(script, []byte(trainScript), 0o644); err != nil {
		t.Fatal(err)
	}
	id := batch(t, a, "--chdir", work, script)
	j := waitJob(t, a, id, 60*time.Second)
	if j.State != "COMPLETED" || !j.Batch || j.Name != "train" || j.NumNodes != 2 {
		t.Fatalf("job %d = %s batch=%v name=%q nodes=%d; want a COMPLETED 2-node batch job named train", id, j.State, j.Batch, j.Name, j.NumNodes)
	}
	data, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("train-%d.out", id)))
	if err != nil {
		t.Fatalf("the script's output file: %v", err)
	}
	got := string(data)
	for _, want := range []string{
		fmt.Sprintf("batch SLURM_JOB_ID=%d SLURM_NNODES=2 PROCID=0", id),
		"master " + j.Nodes[0],
		"second step exit 3",
		"done",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	var tasks []string
	for _, line := range strings.Split(got, "\n") {
		if strings.Contains(line, ": task ") {
			tasks = append(tasks, line)
		}
	}
	slices.Sort(tasks)
	for rank := range 4 {
		node := j.Nodes[rank/2]
		want := fmt.Sprintf("%d: task %d of 4 on %s step 0 rank %d gpus %s", rank, rank, node, rank, cluster.IndexCSV(j.GPUs[node]))
		if rank >= len(tasks) || tasks[rank] != want {
			t.Errorf("step 0 task line %d = %q; want %q (all: %q)", rank, at(tasks, rank), want, tasks)
		}
	}
	if len(j.Steps) != 2 || j.Steps[0].State != "COMPLETED" || j.Steps[0].NTasks != 4 ||
		j.Steps[1].State != "FAILED" || j.Steps[1].ExitCode != 3 || j.Steps[1].NTasks != 1 {
		t.Errorf("steps = %+v; want 0 COMPLETED with 4 tasks, 1 FAILED exit 3 with 1 task", j.Steps)
	}

	// The same through the sbatch shim, as users type it.
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	r := runEnv(t, []string{"SHOAL_DATA_DIR=" + a.DataDir}, filepath.Join(shims, "sbatch"),
		"--parsable", "-N", "2", "--chdir", work, "-o", "wrap-%j.out", "--wrap", "srun hostname >/dev/null && echo wrapped ok")
	if r.code != 0 {
		t.Fatalf("sbatch --wrap: exit %d %s", r.code, r.stderr)
	}
	var wid uint64
	if _, err := fmt.Sscan(r.stdout, &wid); err != nil {
		t.Fatalf("sbatch --parsable printed %q", r.stdout)
	}
	if j := waitJob(t, a, wid, 60*time.Second); j.State != "COMPLETED" {
		t.Fatalf("wrapped job %d = %s", wid, j.State)
	}
	if data, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("wrap-%d.out", wid))); err != nil || !strings.Contains(string(data), "wrapped ok") {
		t.Errorf("wrap output = %q, %v; want it to say wrapped ok", data, err)
	}
	var all []api.Job
	jsonOf(t, a, &all, "queue", "--all")
	if len(all) != 2 {
		t.Errorf("queue has %d jobs; want 2", len(all))
	}
}

func at(xs []string, i int) string {
	if i < len(xs) {
		return xs[i]
	}
	return ""
}

// TestRunInteractive: shoal run (srun outside a job) allocates, streams
// every rank's output, says where it runs, and exits with the job's code.
func TestRunInteractive(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 1})
	// Rank 0 fails, after both have printed: the first failing task ends
	// the gang, so a rank that failed at once could cut the other short.
	r := shoal(t, c.Agents[1], "run", "-N", "2", "--label", "sh", "-c",
		`echo "hi $RANK of $WORLD_SIZE"; if [ "$RANK" = 0 ]; then sleep 1; exit 2; fi`)
	if r.code != 2 {
		t.Fatalf("shoal run: exit %d; want the job's exit code 2\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	slices.Sort(lines)
	if strings.Join(lines, "|") != "0: hi 0 of 2|1: hi 1 of 2" {
		t.Errorf("shoal run output = %q; want a labelled line from each rank", r.stdout)
	}
	if !strings.Contains(r.stderr, "has been allocated resources") {
		t.Errorf("shoal run stderr = %q; want the allocation line", r.stderr)
	}
}
