package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestSrunJobID: srun --jobid N from a login shell (no SLURM_JOB_ID) runs
// a step in running batch job N's allocation, as users run nvidia-smi or
// top on their job's nodes: it sees the job's environment, runs on the
// job's nodes, -w picks one of them, and its exit code is srun's. With
// --overlap it runs while another step holds every GPU of the job. Another
// user is refused, and so is a job that is unknown, pending or ended, in
// Slurm's words.
func TestSrunJobID(t *testing.T) {
	mustRoot(t)
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[2]
	sh := newSlurmShims(t, a)

	out := filepath.Join(t.TempDir(), "out")
	// Step 0 of the job holds both GPUs of both its nodes until cancelled.
	id, err := strconv.ParseUint(sh.must("sbatch", "--parsable", "-N2", "--gpus-per-node=2", "-o", out,
		"--wrap", "srun -n2 --gpus-per-task=2 sleep 300"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	job := strconv.FormatUint(id, 10)
	var nodes []string
	eventually(t, 60*time.Second, "the job's GPU step running", func() error {
		var j api.Job
		jsonOf(t, a, &j, "job", job)
		if j.State != "RUNNING" || len(j.Steps) != 1 || j.Steps[0].State != "RUNNING" {
			log, _ := os.ReadFile(out)
			return fmt.Errorf("job %s, steps %+v; want step 0 RUNNING; batch output: %q", j.State, j.Steps, log)
		}
		nodes = j.Nodes
		return nil
	})

	// From outside: every node of the job, the job's environment, the
	// worst exit code; --overlap, as under Slurm 20.11+, beside step 0
	// that holds every GPU and CPU of the job.
	r := sh.run("srun", "--jobid", job, "--overlap", "sh", "-c",
		`echo "task $SLURM_PROCID job $SLURM_JOB_ID nodes $SLURM_JOB_NUM_NODES on $SLURMD_NODENAME"; exit $((3 + SLURM_PROCID))`)
	if r.code != 4 {
		t.Fatalf("srun --jobid %s: exit %d, want the worst task's 4\nstdout: %s\nstderr: %s", job, r.code, r.stdout, r.stderr)
	}
	for rank, node := range nodes {
		want := fmt.Sprintf("task %d job %s nodes 2 on %s", rank, job, node)
		if !strings.Contains(r.stdout, want) {
			t.Errorf("srun --jobid output lacks %q:\n%s", want, r.stdout)
		}
	}

	// --overlap on one node, -w: both GPUs, which step 0 holds.
	r = sh.run("srun", "--jobid="+job, "--overlap", "-w", nodes[1], "-n1", "--gpus-per-task=2", "sh", "-c",
		`echo "gpus $CUDA_VISIBLE_DEVICES on $SLURMD_NODENAME step $SLURM_STEP_ID"`)
	if want := fmt.Sprintf("gpus 0,1 on %s step 2", nodes[1]); r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("srun --jobid --overlap: exit %d %q, want %q\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	j := waitState(t, a, id, "RUNNING", "")
	if len(j.Steps) != 3 || j.Steps[0].State != "RUNNING" || j.Steps[1].State != "FAILED" || j.Steps[2].State != "COMPLETED" {
		t.Errorf("steps %+v; want 0 RUNNING, 1 FAILED, 2 COMPLETED", j.Steps)
	}

	// Another user may not.
	other := newSecUser(t, "shoalsj")
	base, _ := secDirs(t, c, other)
	r = other.run(t, a, base, nil, "slurm", "srun", "--jobid", job, "hostname")
	if want := "srun: error: Unable to create step for job " + job + ": Access/permission denied"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("srun --jobid as another user: exit %d %q; want 1 and %q", r.code, r.stderr, want)
	}

	// Unknown, pending and ended jobs: Slurm 22.05's lines.
	check := func(id string) string {
		return "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job " + id + "\n"
	}
	r = sh.run("srun", "--jobid", "999999", "hostname")
	if want := "srun: error: Unable to confirm allocation for job 999999: Invalid job id specified\n" + check("999999"); r.code != 1 || r.stderr != want {
		t.Errorf("srun --jobid 999999: exit %d %q; want 1 %q", r.code, r.stderr, want)
	}
	held := sh.must("sbatch", "--parsable", "--hold", "--wrap", "true")
	r = sh.run("srun", "--jobid", held, "hostname")
	if want := "srun: error: Unable to confirm allocation for job " + held + ": Job is pending execution\n" + check(held); r.code != 1 || r.stderr != want {
		t.Errorf("srun --jobid %s (held): exit %d %q; want 1 %q", held, r.code, r.stderr, want)
	}
	sh.must("scancel", job)
	j = waitJob(t, a, id, 60*time.Second)
	r = sh.run("srun", "--jobid", job, "hostname")
	if want := "srun: error: Slurm job " + job + " has expired\n" + check(job); r.code != 1 || r.stderr != want {
		t.Errorf("srun --jobid %s (%s): exit %d %q; want 1 %q", job, j.State, r.code, r.stderr, want)
	}
	if r := sh.run("srun", "--jobid", "abc", "hostname"); r.code == 0 || !regexp.MustCompile(`--jobid`).MatchString(r.stderr) {
		t.Errorf("srun --jobid abc: exit %d %q; want refused naming --jobid", r.code, r.stderr)
	}
}
