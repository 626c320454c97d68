package test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestSalloc: salloc allocates, runs its command here with the
// allocation's environment, srun inside starts a step on the allocated
// nodes, the command's exit code is salloc's, and the allocation is
// released with the job COMPLETED.
func TestSalloc(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[2]
	shims, env := shimsOnPath(t, a)

	r := runEnv(t, env, filepath.Join(shims, "salloc"), "-N2", "--gpus-per-node=1", "-J", "inter", "sh", "-c",
		`echo "alloc $SLURM_JOB_ID $SLURM_NNODES $SLURM_JOB_NODELIST"; srun sh -c 'echo "task $SLURM_PROCID on $SLURMD_NODENAME job $SLURM_JOB_ID"'; exit 7`)
	if r.code != 7 {
		t.Fatalf("salloc: exit %d, want the command's 7\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`alloc (\d+) 2 (\S+)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("the command did not see the allocation:\n%s", r.stdout)
	}
	id, _ := strconv.ParseUint(m[1], 10, 64)
	for _, want := range []string{
		fmt.Sprintf("salloc: Granted job allocation %d", id),
		fmt.Sprintf("salloc: Relinquishing job allocation %d", id),
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for rank := range 2 {
		if !strings.Contains(r.stdout, fmt.Sprintf("task %d on ", rank)) || !strings.Contains(r.stdout, fmt.Sprintf("job %d", id)) {
			t.Errorf("srun's task %d did not run in the allocation:\n%s", rank, r.stdout)
		}
	}
	j := waitJob(t, a, id, 30*time.Second)
	if j.State != "COMPLETED" || len(j.Nodes) != 2 || j.Name != "inter" {
		t.Errorf("salloc's job: %s on %v named %q; want COMPLETED on 2 nodes named inter", j.State, j.Nodes, j.Name)
	}
	if len(j.Steps) != 1 || j.Steps[0].State != "COMPLETED" || j.Steps[0].NTasks != 2 {
		t.Errorf("steps %+v; want one COMPLETED 2-task step", j.Steps)
	}
	if got := strings.Join(j.Nodes, ","); m[2] != got && !strings.Contains(m[2], "[") {
		t.Errorf("SLURM_JOB_NODELIST %s; the job ran on %s", m[2], got)
	}
}
