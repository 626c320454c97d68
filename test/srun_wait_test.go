package test

import (
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestSrunWait: srun -W N ends the tasks still running N seconds after
// the first one ended, with Slurm's messages, and exits with the worst
// task's code (143: the tasks it ends get SIGTERM then SIGKILL, as
// scancel's; Slurm's srun SIGKILLs them and exits 137), for a step inside an allocation and for srun's own job;
// -W 0 (Slurm's default) waits for every task. Beside it, on the same
// cluster, steps' --exclusive/--dependency hints and --ntasks-per-gpu.
func TestSrunWait(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 2})
	sh := newSlurmShims(t, c.Agents[0])
	sh.env = append(sh.env, "PATH="+sh.dir+":/usr/bin:/bin") // salloc's srun is Shoal's
	// Task 0 ends at once; task 1 would run for 10 minutes.
	prog := []string{"sh", "-c", `if [ "$SLURM_PROCID" = 0 ]; then echo first-done; exit 0; fi; exec sleep 600`}

	check := func(what string, r cliResult, step string) {
		t.Helper()
		if r.code != 143 {
			t.Errorf("%s: exit %d, want 143\nstdout: %s\nstderr: %s", what, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "first-done") {
			t.Errorf("%s: stdout %q lacks task 0's output", what, r.stdout)
		}
		for _, w := range []string{
			"srun: First task exited 1s ago\n",
			"srun: StepId=" + step + " task 1: running\n",
			"srun: StepId=" + step + " task 0: exited\n",
			"srun: launch/slurm: _step_signal: Terminating StepId=" + step + "\n",
		} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", what, w, r.stderr)
			}
		}
	}

	// A step in an allocation: salloc's job is the first, its step 0.
	r := sh.run("salloc", append([]string{"-N2", "srun", "-N2", "-n2", "-W", "1"}, prog...)...)
	check("salloc srun -W 1", r, "1.0")

	// srun outside an allocation: its own job (the second), Slurm's step 0.
	r = sh.run("srun", append([]string{"-N2", "--wait=1"}, prog...)...)
	check("srun --wait=1", r, "2.0")

	// A step takes --exclusive (the pre-20.11 way to run steps side by
	// side: --exact, as Slurm 20.11+) and --dependency as a hint, as
	// Slurm's srun in an allocation.
	r = sh.run("salloc", "-N2", "srun", "--exclusive", "--dependency=afterok:1", "-n1", "echo", "hinted")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "hinted" || !strings.Contains(r.stderr, "srun: warning: --dependency for a step") {
		t.Errorf("salloc srun --exclusive: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// srun --ntasks-per-gpu=2: two tasks for each of the job's GPUs, each
	// seeing one, two to a GPU in local order.
	r = sh.run("salloc", "-N2", "--gpus-per-node=2", "srun", "--ntasks-per-gpu=2", "sh", "-c", `echo "$SLURMD_NODENAME $SLURM_LOCALID $CUDA_VISIBLE_DEVICES $SLURM_STEP_NUM_TASKS"`)
	gpuOf := map[[2]string]string{}
	for l := range strings.Lines(r.stdout) {
		f := strings.Fields(l)
		if len(f) != 4 || f[3] != "8" || strings.Contains(f[2], ",") {
			t.Errorf("srun --ntasks-per-gpu=2: line %q; want NODE LOCALID one GPU and 8 tasks", l)
			continue
		}
		gpuOf[[2]string{f[0], f[1]}] = f[2]
	}
	if r.code != 0 || len(gpuOf) != 8 {
		t.Fatalf("srun --ntasks-per-gpu=2: exit %d, %d tasks\nstdout: %s\nstderr: %s", r.code, len(gpuOf), r.stdout, r.stderr)
	}
	for key, g := range gpuOf {
		if key[1] == "1" || key[1] == "3" {
			if prev := gpuOf[[2]string{key[0], map[string]string{"1": "0", "3": "2"}[key[1]]}]; prev != g {
				t.Errorf("%s task %s sees GPU %s, its pair GPU %s: want two tasks to a GPU", key[0], key[1], g, prev)
			}
		}
	}

	// -W 0: every task runs to its end.
	r = sh.run("srun", "-N2", "-W", "0", "sh", "-c", `[ "$SLURM_PROCID" = 0 ] || sleep 2; echo done-$SLURM_PROCID`)
	if r.code != 0 || strings.Count(r.stdout, "done-") != 2 || strings.Contains(r.stderr, "Terminating") {
		t.Errorf("srun -W 0: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
