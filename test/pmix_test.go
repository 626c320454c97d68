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

// pmixHello is an mpi4py program started by srun itself, one task per
// rank, with no mpirun: Open MPI's ranks find the step's PMIx server,
// which tells them their rank, the world and where the others run, and
// exchange their addresses through its fence. Each rank checks
// COMM_WORLD against SLURM_PROCID and the size srun was asked for
// (argv[1]), all-reduces rank+1 and prints one line.
const pmixHello = `import socket, sys, os
from mpi4py import MPI
comm = MPI.COMM_WORLD
want = int(sys.argv[1])
rank, size = comm.Get_rank(), comm.Get_size()
if size != want or rank != int(os.environ["SLURM_PROCID"]):
    sys.stderr.write("rank %d of %d, SLURM_PROCID %s, want size %d\n" % (rank, size, os.environ["SLURM_PROCID"], want))
    sys.exit(3)
total = comm.allreduce(rank + 1, op=MPI.SUM)
if total != want * (want + 1) // 2:
    sys.stderr.write("rank %d: sum %d\n" % (rank, total))
    sys.exit(4)
comm.Barrier()
sys.stdout.write("rank %d of %d on %s sum %d\n" % (rank, size, socket.gethostname(), total))
sys.stdout.flush()
`

// requirePMIx fails the test where the shoal under test cannot serve
// PMIx: it is built with libpmix's development files (Debian's
// libpmix-dev and pkg-config, which .ci/run installs; the harness builds
// with -tags pmix where pkg-config finds them).
func requirePMIx(t *testing.T) {
	t.Helper()
	if out, err := osexec.Command("pkg-config", "--exists", "--print-errors", "pmix").CombinedOutput(); err != nil {
		t.Fatalf("needs libpmix-dev and pkg-config (.ci/run installs them) to build shoal with -tags pmix: %v %s", err, out)
	}
}

// TestSrunPMIx: srun --mpi=pmix starts an mpi4py program's ranks as the
// step's tasks, with no mpirun, as MPI users on Slurm clusters launch:
// each node's supervisor serves PMIx to its ranks and the step's first
// node gathers every node's fence. Two nodes x two ranks from salloc,
// and from srun outside an allocation; a rank lost before MPI_Init fails
// the step instead of hanging it; and one node's two ranks (its fence
// is the node's own) from a batch script that names the type once in
// SLURM_MPI_TYPE (pmix_v4, as Slurm built against PMIx 4 names it).
func TestSrunPMIx(t *testing.T) {
	requireRootForNamespaces(t)
	requirePMIx(t)
	c, python, work, prog := startMPI4py(t, pmixHello)
	a := c.Agents[0]
	shims, env := shimsOnPath(t, a, mpiLoopback...)

	t.Run("two nodes", func(t *testing.T) {
		r := runEnv(t, env, filepath.Join(shims, "salloc"), "-N", "2", "--ntasks-per-node=2", "--chdir", work,
			"srun", "--mpi=pmix", "-N", "2", "-n", "4", python, prog, "4")
		checkStep(t, c, r, "salloc srun --mpi=pmix", 4, twoPerNode)
	})

	t.Run("outside an allocation", func(t *testing.T) {
		// srun allocates and runs the ranks as step 0, as Slurm's srun.
		r := runEnv(t, env, filepath.Join(shims, "srun"), "--mpi=pmix", "-N", "2", "--ntasks-per-node=2",
			"--chdir", work, python, prog, "4")
		checkStep(t, c, r, "srun --mpi=pmix", 4, twoPerNode)
	})

	t.Run("a node lost before the fence", func(t *testing.T) {
		// Rank 3 (on n2) dies before MPI_Init: n2's ranks end, its
		// supervisor leaves the fence, and n1's ranks get an error from
		// it instead of waiting for n2 forever; the step fails.
		lost := filepath.Join(work, "lost.py")
		if err := os.WriteFile(lost, []byte("import os, sys\nif os.environ['SLURM_PROCID'] == '3':\n    sys.exit(7)\n"+pmixHello), 0o644); err != nil {
			t.Fatal(err)
		}
		checkRankLost(t, c, env, shims, work, "pmix", python, lost, "4")
	})

	t.Run("one node", func(t *testing.T) {
		checkOneNodeBatch(t, c, work, "pmix", "SLURM_MPI_TYPE=pmix_v4 "+strings.Join(mpiLoopback, " "), python+" "+prog)
	})
}

// checkStep checks run r of a step's n ranks (what: its command, for
// the message): a zero exit (else the supervisors' logs, and a failure),
// and the ranks' lines (checkRanks).
func checkStep(t *testing.T, c *localcluster.Cluster, r cliResult, what string, n int, host func(rank int) string) {
	t.Helper()
	if r.code != 0 {
		logStepds(t, c)
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", what, r.code, r.stdout, r.stderr)
	}
	checkRanks(t, r.stdout, n, host)
}

// checkRankLost runs `srun --mpi=mpi argv` in a salloc of two nodes x
// two ranks whose rank 3 exits before MPI_Init, and checks that the step
// fails (srun's own code) with no rank past MPI_Init, rather than hangs.
func checkRankLost(t *testing.T, c *localcluster.Cluster, env []string, shims, work, mpi string, argv ...string) {
	t.Helper()
	r := runEnv(t, env, filepath.Join(shims, "salloc"), append([]string{"-N", "2", "--ntasks-per-node=2", "--chdir", work,
		"srun", "--mpi=" + mpi}, argv...)...)
	// A code of its own: srun's, not the kill of runEnv's bound.
	if r.code <= 0 || strings.Contains(r.stdout, "rank ") {
		logStepds(t, c)
		t.Fatalf("srun --mpi=%s with a rank lost: exit %d; want a failed step and no rank past MPI_Init\nstdout: %s\nstderr: %s", mpi, r.code, r.stdout, r.stderr)
	}
}

// checkOneNodeBatch runs a batch script of one node and two ranks
// through agent 0 of c that exports exports and runs `srun prog 2`
// (its output in work/NAME-JOB.out), and checks that it completes,
// srun with it, on one node, where both ranks ran prog.
func checkOneNodeBatch(t *testing.T, c *localcluster.Cluster, work, name, exports, prog string) {
	t.Helper()
	script := filepath.Join(work, name+".sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
#SBATCH -N 1
#SBATCH -n 2
#SBATCH --output=`+name+`-%j.out
export `+exports+`
srun `+prog+` 2
echo "srun exit $?"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	a := c.Agents[0]
	id := batch(t, a, "--chdir", work, "--export=ALL,PATH=/usr/bin:/bin", script)
	j := waitJob(t, a, id, pmixWait)
	data, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("%s-%d.out", name, id)))
	if j.State != "COMPLETED" || !strings.Contains(string(data), "srun exit 0") {
		logStepds(t, c)
		t.Fatalf("%s batch job %s (exit %d):\n%s", name, j.State, j.ExitCode, data)
	}
	if len(j.Nodes) != 1 {
		t.Fatalf("job ran on %q; want one node", j.Nodes)
	}
	checkRanks(t, string(data), 2, func(int) string { return j.Nodes[0] })
}

// pmixWait bounds a PMIx batch job: Open MPI's start in each rank and
// the fences on a busy machine.
const pmixWait = 3 * time.Minute

// logStepds logs the task supervisors' logs of c's agents: where the
// PMIx servers say what they did.
func logStepds(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	for _, a := range c.Agents {
		logs, _ := filepath.Glob(filepath.Join(a.DataDir, "exec", "jobs", "*", "stepd.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			t.Logf("---- %s ----\n%s", l, data)
		}
	}
}

// twoPerNode is the node of rank in a step of two nodes x two ranks in
// blocks: n1, n1, n2, n2.
func twoPerNode(rank int) string { return fmt.Sprintf("n%d", rank/2+1) }

// checkRanks checks the ranks' lines in out: ranks 0..n-1 of n, each
// on the node host names, all with the sum of 1..n.
func checkRanks(t *testing.T, out string, n int, host func(rank int) string) {
	t.Helper()
	var lines []string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "rank ") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	slices.Sort(lines)
	var want []string
	for rank := range n {
		want = append(want, fmt.Sprintf("rank %d of %d on %s sum %d", rank, n, host(rank), n*(n+1)/2))
	}
	if !slices.Equal(lines, want) {
		t.Errorf("ranks said %q; want %q\n%s", lines, want, out)
	}
}
