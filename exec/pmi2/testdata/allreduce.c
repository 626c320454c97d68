/* An MPI program for srun --mpi=pmi2: each rank checks its rank and the
 * world's size against what srun said (SLURM_PROCID, argv[1]), checks
 * that the ranks MPI thinks share its node (MPI_COMM_TYPE_SHARED, from
 * PMI_process_mapping) are those on its node (the host name, or
 * TEST_NODE where the test runs every "node" on one host), all-reduces
 * rank+1 and prints one line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAMELEN 64

int main(int argc, char **argv) {
	int rank, size, sum, one, want, local, same = 0, i;
	char host[NAMELEN] = {0}, *all;
	const char *procid = getenv("SLURM_PROCID"), *node = getenv("TEST_NODE");
	MPI_Comm shared;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	want = argc > 1 ? atoi(argv[1]) : -1;
	if (size != want || (procid != NULL && atoi(procid) != rank)) {
		fprintf(stderr, "rank %d of %d, SLURM_PROCID %s, want size %d\n", rank, size, procid ? procid : "unset", want);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	if (node != NULL)
		strncpy(host, node, NAMELEN - 1);
	else
		gethostname(host, NAMELEN - 1);
	all = malloc((size_t)size * NAMELEN);
	MPI_Allgather(host, NAMELEN, MPI_CHAR, all, NAMELEN, MPI_CHAR, MPI_COMM_WORLD);
	for (i = 0; i < size; i++)
		same += strcmp(all + (size_t)i * NAMELEN, host) == 0;
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
	MPI_Comm_size(shared, &local);
	if (local != same) {
		fprintf(stderr, "rank %d on %s: MPI puts %d ranks on this node, %d run here\n", rank, host, local, same);
		MPI_Abort(MPI_COMM_WORLD, 5);
	}
	one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (sum != size * (size + 1) / 2) {
		fprintf(stderr, "rank %d: sum %d\n", rank, sum);
		MPI_Abort(MPI_COMM_WORLD, 4);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
	fflush(stdout);
	MPI_Comm_free(&shared);
	free(all);
	MPI_Finalize();
	return 0;
}
