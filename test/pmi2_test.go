package test

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/localcluster"
)

// buildMPICHProgram builds exec/pmi2's all-reduce program with MPICH's
// mpicc into dir; without Debian's mpich and libmpich-dev (.ci/run
// installs them) the test fails.
func buildMPICHProgram(t *testing.T, dir string) string {
	t.Helper()
	mpicc, err := osexec.LookPath("mpicc.mpich")
	if err != nil {
		t.Fatalf("needs MPICH's mpicc.mpich (Debian's mpich and libmpich-dev; .ci/run installs them): %v", err)
	}
	src, err := filepath.Abs(filepath.Join("..", "exec", "pmi2", "testdata", "allreduce.c"))
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "allreduce")
	if out, err := osexec.Command(mpicc, "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc.mpich: %v\n%s", err, out)
	}
	return prog
}

// TestSrunPMI2: srun --mpi=pmi2 starts a real MPICH program's ranks as
// the step's tasks, with no mpiexec, as MPICH users on Slurm clusters
// launch: each rank finds its end of a socket pair to its node's
// supervisor in PMI_FD (Debian's MPICH speaks PMI-1 over it; the
// supervisor serves PMI-1 and PMI-2, as Slurm's mpi/pmi2 plugin), and
// the step's first node gathers every node's fence. Each rank checks
// its rank against SLURM_PROCID and the world's size, all-reduces and
// prints one line. Two nodes x two ranks from salloc, and from srun
// outside an allocation; uneven and cyclic layouts; a client of PMI-2's
// framed protocol (Slurm's libpmi2) outside an allocation; a rank lost before MPI_Init fails the step
// instead of hanging it; and one node's two ranks from a batch script
// that names the type once in SLURM_MPI_TYPE.
func TestSrunPMI2(t *testing.T) {
	requireRootForNamespaces(t)
	work := t.TempDir()
	prog := buildMPICHProgram(t, work)
	c := startCluster(t, localcluster.Options{Nodes: 2, HostOf: ownLoopback})
	a := c.Agents[0]
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	env := []string{"SHOAL_DATA_DIR=" + a.DataDir, "PATH=" + shims + ":/usr/bin:/bin"}
	onNode := func(rank int) string { return fmt.Sprintf("n%d", rank/2+1) }

	t.Run("two nodes", func(t *testing.T) {
		r := runEnv(t, env, filepath.Join(shims, "salloc"), "-N", "2", "--ntasks-per-node=2", "--chdir", work,
			"srun", "--mpi=pmi2", "-N", "2", "--ntasks-per-node=2", prog, "4")
		if r.code != 0 {
			logStepds(t, c)
			t.Fatalf("salloc srun --mpi=pmi2: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		checkPMIxRanks(t, r.stdout, 4, onNode)
	})

	t.Run("outside an allocation", func(t *testing.T) {
		// srun allocates and runs the ranks as step 0, as Slurm's srun.
		r := runEnv(t, env, filepath.Join(shims, "srun"), "--mpi=pmi2", "-N", "2", "--ntasks-per-node=2",
			"--chdir", work, prog, "4")
		if r.code != 0 {
			logStepds(t, c)
			t.Fatalf("srun --mpi=pmi2: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		checkPMIxRanks(t, r.stdout, 4, onNode)
	})

	t.Run("uneven and cyclic layouts", func(t *testing.T) {
		// PMI_process_mapping tells MPICH which ranks share a node (and
		// so shared memory): (vector,(0,1,2),(1,1,1)) for -n 3 in blocks,
		// (vector,(0,2,1),(0,2,1)) for -n 4 dealt cyclically.
		for _, tc := range []struct {
			args []string
			n    int
			node func(rank int) string
		}{
			{[]string{"-n", "3"}, 3, func(rank int) string { return fmt.Sprintf("n%d", rank/2+1) }},
			{[]string{"-n", "4", "-m", "cyclic"}, 4, func(rank int) string { return fmt.Sprintf("n%d", rank%2+1) }},
		} {
			args := append([]string{"-N", "2", "--ntasks-per-node=2", "--chdir", work, "srun", "--mpi=pmi2", "-N", "2"}, tc.args...)
			r := runEnv(t, env, filepath.Join(shims, "salloc"), append(args, prog, fmt.Sprint(tc.n))...)
			if r.code != 0 {
				logStepds(t, c)
				t.Fatalf("srun --mpi=pmi2 %q: exit %d\nstdout: %s\nstderr: %s", tc.args, r.code, r.stdout, r.stderr)
			}
			checkPMIxRanks(t, r.stdout, tc.n, tc.node)
		}
	})

	t.Run("a PMI-2 client", func(t *testing.T) {
		// Slurm's libpmi2 speaks PMI-2's framed protocol: job id,
		// mapping, a node attribute, puts, fences and gets.
		if _, err := os.Stat("/usr/include/slurm/pmi2.h"); err != nil {
			t.Fatalf("needs Slurm's libpmi2 (Debian's libpmi2-0-dev; .ci/run installs it): %v", err)
		}
		client := filepath.Join(work, "pmi2client")
		src, _ := filepath.Abs(filepath.Join("..", "exec", "pmi2", "testdata", "pmi2client.c"))
		if out, err := osexec.Command("gcc", "-o", client, src, "-lpmi2").CombinedOutput(); err != nil {
			t.Fatalf("gcc -lpmi2: %v\n%s", err, out)
		}
		r := runEnv(t, env, filepath.Join(shims, "srun"), "--mpi=pmi2", "-N", "2", "--ntasks-per-node=2",
			"--chdir", work, client, "4", "(vector,(0,2,2))")
		if r.code != 0 {
			logStepds(t, c)
			t.Fatalf("srun --mpi=pmi2 pmi2client: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		checkPMIxRanks(t, r.stdout, 4, onNode)
	})

	t.Run("a rank lost before MPI_Init", func(t *testing.T) {
		// Rank 3 (on n2) exits before MPI_Init: n2's supervisor fails its
		// fence (rank 2 waits in it for a rank that is gone), kills its
		// ranks and leaves the exchange, and n1's ranks are killed as
		// their fence fails instead of waiting for n2 forever.
		lost := filepath.Join(work, "lost.sh")
		if err := os.WriteFile(lost, []byte("#!/bin/sh\n[ \"$SLURM_PROCID\" = 3 ] && exit 7\nexec "+prog+" 4\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		r := runEnv(t, env, filepath.Join(shims, "salloc"), "-N", "2", "--ntasks-per-node=2", "--chdir", work,
			"srun", "--mpi=pmi2", lost)
		// A code of its own: srun's, not the kill of runEnv's bound.
		if r.code <= 0 || strings.Contains(r.stdout, "rank ") {
			logStepds(t, c)
			t.Fatalf("srun --mpi=pmi2 with a rank lost: exit %d; want a failed step and no rank past MPI_Init\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("one node", func(t *testing.T) {
		script := filepath.Join(work, "pmi2.sh")
		if err := os.WriteFile(script, []byte(`#!/bin/sh
#SBATCH -N 1
#SBATCH -n 2
#SBATCH --output=pmi2-%j.out
export SLURM_MPI_TYPE=pmi2
srun `+prog+` 2
echo "srun exit $?"
`), 0o755); err != nil {
			t.Fatal(err)
		}
		id := batch(t, a, "--chdir", work, "--export=ALL,PATH=/usr/bin:/bin", script)
		j := waitJob(t, a, id, pmixWait)
		data, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("pmi2-%d.out", id)))
		if j.State != "COMPLETED" || !strings.Contains(string(data), "srun exit 0") {
			logStepds(t, c)
			t.Fatalf("PMI-2 batch job %s (exit %d):\n%s", j.State, j.ExitCode, data)
		}
		if len(j.Nodes) != 1 {
			t.Fatalf("job ran on %q; want one node", j.Nodes)
		}
		checkPMIxRanks(t, string(data), 2, func(int) string { return j.Nodes[0] })
	})
}
