package test

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
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
	shims, env := shimsOnPath(t, a)

	t.Run("two nodes", func(t *testing.T) {
		r := runEnv(t, env, filepath.Join(shims, "salloc"), "-N", "2", "--ntasks-per-node=2", "--chdir", work,
			"srun", "--mpi=pmi2", "-N", "2", "--ntasks-per-node=2", prog, "4")
		checkStep(t, c, r, "salloc srun --mpi=pmi2", 4, twoPerNode)
	})

	t.Run("outside an allocation", func(t *testing.T) {
		// srun allocates and runs the ranks as step 0, as Slurm's srun.
		r := runEnv(t, env, filepath.Join(shims, "srun"), "--mpi=pmi2", "-N", "2", "--ntasks-per-node=2",
			"--chdir", work, prog, "4")
		checkStep(t, c, r, "srun --mpi=pmi2", 4, twoPerNode)
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
			{[]string{"-n", "3"}, 3, twoPerNode},
			{[]string{"-n", "4", "-m", "cyclic"}, 4, func(rank int) string { return fmt.Sprintf("n%d", rank%2+1) }},
		} {
			args := append([]string{"-N", "2", "--ntasks-per-node=2", "--chdir", work, "srun", "--mpi=pmi2", "-N", "2"}, tc.args...)
			r := runEnv(t, env, filepath.Join(shims, "salloc"), append(args, prog, fmt.Sprint(tc.n))...)
			checkStep(t, c, r, fmt.Sprintf("srun --mpi=pmi2 %q", tc.args), tc.n, tc.node)
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
		checkStep(t, c, r, "srun --mpi=pmi2 pmi2client", 4, twoPerNode)
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
		checkRankLost(t, c, env, shims, work, "pmi2", lost)
	})

	t.Run("one node", func(t *testing.T) {
		checkOneNodeBatch(t, c, work, "pmi2", "SLURM_MPI_TYPE=pmi2", prog)
	})
}
