package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// mpi4pyHello is mpiHello in Python with mpi4py (Debian's python3-mpi4py
// over Open MPI): each rank prints its rank, the world size, its host and
// the all-reduced sum of rank+1. It writes its line in one write: mpirun
// forwards the ranks' output as it comes, so under PYTHONUNBUFFERED a
// print, which writes the text and the newline apart, could mix with
// another rank's line (as it can under Slurm: srun is not in that path).
const mpi4pyHello = `import socket, sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1, op=MPI.SUM)
sys.stdout.write("rank %d of %d on %s sum %d\n" % (comm.Get_rank(), comm.Get_size(), socket.gethostname(), total))
sys.stdout.flush()
`

// mpiLoopback makes Open MPI use loopback: every "node" is this machine,
// and Open MPI leaves lo out unless told.
var mpiLoopback = []string{"OMPI_MCA_btl=self,vader,tcp", "OMPI_MCA_btl_tcp_if_include=lo", "OMPI_MCA_oob_tcp_if_include=lo"}

// TestMPI4py: a real mpi4py program under Open MPI's mpirun in a Shoal
// allocation, in the two places users start mpirun: from salloc with a
// command, and inside an sbatch script. mpirun is given no -np, as users
// often type it: it takes the rank count and each node's slots from the
// allocation's SLURM_* variables. 2 nodes x 2 ranks all-reduce, and the
// ranks run on both nodes.
// startMPI4py starts a cluster of two nodes, each on a loopback address
// of its own, for an mpi4py program (Debian's python3-mpi4py, which it
// requires): it returns the cluster, python, a work directory and the
// program, written there.
func startMPI4py(t *testing.T, program string) (c *localcluster.Cluster, python, work, prog string) {
	t.Helper()
	python = requirePython(t)
	requireFile(t, "/usr/lib/python3/dist-packages/mpi4py/__init__.py", "python3-mpi4py")
	c = startCluster(t, localcluster.Options{Nodes: 2, HostOf: ownLoopback})
	work = t.TempDir()
	prog = filepath.Join(work, "hello.py")
	if err := os.WriteFile(prog, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, python, work, prog
}

func TestMPI4py(t *testing.T) {
	requireRootForNamespaces(t)
	requireFile(t, "/usr/bin/mpirun", "openmpi-bin")
	c, python, work, prog := startMPI4py(t, mpi4pyHello)
	a := c.Agents[0]

	t.Run("salloc", func(t *testing.T) {
		// mpirun by name, as users type it (see TestMPIThroughSrun).
		shims, env := shimsOnPath(t, a, mpiLoopback...)
		r := runEnv(t, env, filepath.Join(shims, "salloc"), "-N", "2", "--ntasks-per-node=2", "--chdir", work,
			"mpirun", "--allow-run-as-root", python, prog)
		if r.code != 0 {
			t.Fatalf("salloc mpirun: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		checkRanks(t, r.stdout+r.stderr, 4, twoPerNode)
	})

	t.Run("sbatch", func(t *testing.T) {
		script := filepath.Join(work, "mpi4py.sh")
		if err := os.WriteFile(script, []byte(`#!/bin/sh
#SBATCH -N 2
#SBATCH --ntasks-per-node=2
#SBATCH --output=mpi4py-%j.out
export `+strings.Join(mpiLoopback, " ")+`
mpirun --allow-run-as-root `+python+` `+prog+`
echo "mpirun exit $?"
`), 0o755); err != nil {
			t.Fatal(err)
		}
		id := batch(t, a, "--chdir", work, "--export=ALL,PATH=/usr/bin:/bin", script)
		j := waitJob(t, a, id, 90*time.Second)
		data, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("mpi4py-%d.out", id)))
		if j.State != "COMPLETED" || !strings.Contains(string(data), "mpirun exit 0") {
			t.Fatalf("mpi4py batch job %s (exit %d):\n%s", j.State, j.ExitCode, data)
		}
		checkRanks(t, string(data), 4, twoPerNode)
	})
}
