package test

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// mpiHello is an MPI hello with an all-reduce: each rank prints its rank,
// the world size, its host name and the sum of rank+1 over the world.
const mpiHello = `#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int rank, size, one, sum = 0;
	char host[256];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	gethostname(host, sizeof host);
	one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
	MPI_Finalize();
	return 0;
}
`

// requireMPI checks for mpirun and returns the path of mpicc (Debian's
// openmpi-bin and libopenmpi-dev, which .ci/run installs): missing, the
// test fails under CI=true and is skipped elsewhere.
func requireMPI(t *testing.T) (mpicc string) {
	t.Helper()
	_, err1 := osexec.LookPath("mpirun")
	mpicc, err2 := osexec.LookPath("mpicc")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs Open MPI (openmpi-bin, libopenmpi-dev; .ci/run installs them): %v %v", err1, err2)
		}
		t.Skip("needs Open MPI's mpirun and mpicc")
	}
	return mpicc
}

// buildMPIHello compiles mpiHello in a new directory and returns both.
func buildMPIHello(t *testing.T) (work, hello string) {
	t.Helper()
	mpicc := requireMPI(t)
	work = t.TempDir()
	src := filepath.Join(work, "hello.c")
	hello = filepath.Join(work, "hello")
	if err := os.WriteFile(src, []byte(mpiHello), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := osexec.Command(mpicc, "-o", hello, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	return work, hello
}

// TestMPIThroughSrun: Open MPI's mpirun in a Shoal allocation finds it
// through the SLURM_* environment and starts its daemons (orted) with
// Shoal's srun, one per node; 2 nodes x 2 ranks say hello and all-reduce
// across the two agents. mpirun runs under salloc on the submitting host,
// outside the allocation's nodes, so it asks srun for every node of the
// allocation.
func TestMPIThroughSrun(t *testing.T) {
	requireRootForNamespaces(t)
	work, hello := buildMPIHello(t)
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	env := []string{"SHOAL_DATA_DIR=" + a.DataDir, "PATH=" + shims + ":" + os.Getenv("PATH"),
		// Every "node" is this machine: the ranks talk over loopback, which
		// Open MPI leaves out unless told.
		"OMPI_MCA_btl=self,vader,tcp", "OMPI_MCA_btl_tcp_if_include=lo", "OMPI_MCA_oob_tcp_if_include=lo"}
	// mpirun by name, as users type it: run by its absolute path it acts
	// as if given --prefix and puts its own bin directory first on srun's
	// PATH, where a host with Slurm installed has the real srun.
	r := runEnv(t, env, filepath.Join(shims, "salloc"), "-N", "2", "--ntasks-per-node=2", "--chdir", work,
		"mpirun", "--allow-run-as-root", "-np", "4", hello)
	if r.code != 0 {
		t.Fatalf("salloc mpirun: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	checkRanks(t, r.stdout, 4, twoPerNode) // Open MPI fills a node's slots first
	if t.Failed() {
		t.Logf("stderr: %s", r.stderr)
	}
}

// TestMPIInBatchScript: the usual form, mpirun inside an sbatch script:
// it runs on the allocation's first node and starts one daemon on each
// other node with `srun --nodes=1 --nodelist=NODE orted ...`, a step on a
// subset of the allocation; 2 nodes x 2 ranks all-reduce.
func TestMPIInBatchScript(t *testing.T) {
	requireRootForNamespaces(t)
	work, hello := buildMPIHello(t)
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	script := filepath.Join(work, "mpi.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
#SBATCH -N 2
#SBATCH --ntasks-per-node=2
#SBATCH --output=mpi-%j.out
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
mpirun --allow-run-as-root -np 4 `+hello+`
`), 0o755); err != nil {
		t.Fatal(err)
	}
	// PATH without the real Slurm's srun: the agent puts its own first.
	id := batch(t, a, "--chdir", work, "--export=ALL,PATH=/usr/bin:/bin", script)
	j := waitJob(t, a, id, 90*time.Second)
	data, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("mpi-%d.out", id)))
	if j.State != "COMPLETED" {
		t.Fatalf("MPI batch job %s (exit %d):\n%s", j.State, j.ExitCode, data)
	}
	checkRanks(t, string(data), 4, twoPerNode)
	var steps []string
	for _, st := range j.Steps {
		steps = append(steps, fmt.Sprintf("%s@%s", st.Name, strings.Join(st.Nodes, ",")))
	}
	if len(j.Steps) != 1 || j.Steps[0].NTasks != 1 || len(j.Steps[0].Nodes) != 1 || j.Steps[0].Nodes[0] != j.Nodes[1] {
		t.Errorf("steps %v; want one daemon step on the second node %s", steps, j.Nodes[1])
	}
}
