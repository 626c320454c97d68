/* An MPI program for srun --mpi=pmi2: each rank checks its rank and the
 * world's size against what srun said (SLURM_PROCID, argv[1]),
 * all-reduces rank+1 and prints one line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, size, sum, one, want;
	char host[256];
	const char *procid = getenv("SLURM_PROCID");
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	want = argc > 1 ? atoi(argv[1]) : -1;
	if (size != want || (procid != NULL && atoi(procid) != rank)) {
		fprintf(stderr, "rank %d of %d, SLURM_PROCID %s, want size %d\n", rank, size, procid ? procid : "unset", want);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (sum != size * (size + 1) / 2) {
		fprintf(stderr, "rank %d: sum %d\n", rank, sum);
		MPI_Abort(MPI_COMM_WORLD, 4);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	gethostname(host, sizeof host);
	printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
	fflush(stdout);
	MPI_Finalize();
	return 0;
}
