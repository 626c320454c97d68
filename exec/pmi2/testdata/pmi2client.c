/* A client of PMI-2's wire protocol, through Slurm's libpmi2 (Debian's
 * libpmi2-0-dev: MPICH's simple PMI-2 client): each rank initializes,
 * checks its rank and size against SLURM_PROCID and argv[1], its job id
 * against PMI_JOBID and the process mapping against argv[2], meets its
 * node's ranks through a node attribute the node's first rank
 * (SLURM_LOCALID 0) puts, puts a value holding ';', fences, reads every
 * rank's value, and prints one line with the sum of what it read. */
#include <slurm/pmi2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fail(int rank, const char *what, int rc) {
	fprintf(stderr, "rank %d: %s: %d\n", rank, what, rc);
	exit(3);
}

int main(int argc, char **argv) {
	int spawned, size, rank, appnum, rc, found, vallen, i, sum = 0;
	char jobid[256], val[1024], key[64], host[64] = {0};
	const char *procid = getenv("SLURM_PROCID"), *localid = getenv("SLURM_LOCALID");
	const char *node = getenv("TEST_NODE");
	if ((rc = PMI2_Init(&spawned, &size, &rank, &appnum)) != PMI2_SUCCESS)
		fail(-1, "PMI2_Init", rc);
	if (argc < 3 || size != atoi(argv[1]) || spawned || (procid && atoi(procid) != rank))
		fail(rank, "size, rank or spawned", size);
	if ((rc = PMI2_Job_GetId(jobid, sizeof jobid)) != PMI2_SUCCESS || strcmp(jobid, getenv("PMI_JOBID")) != 0)
		fail(rank, "PMI2_Job_GetId", rc);
	rc = PMI2_Info_GetJobAttr("PMI_process_mapping", val, sizeof val, &found);
	if (rc != PMI2_SUCCESS || !found || strcmp(val, argv[2]) != 0) {
		fprintf(stderr, "rank %d: PMI_process_mapping %s, want %s\n", rank, found ? val : "(none)", argv[2]);
		exit(4);
	}
	if (localid && atoi(localid) == 0) {
		snprintf(val, sizeof val, "leader-%d", rank);
		if ((rc = PMI2_Info_PutNodeAttr("leader", val)) != PMI2_SUCCESS)
			fail(rank, "PMI2_Info_PutNodeAttr", rc);
	}
	rc = PMI2_Info_GetNodeAttr("leader", val, sizeof val, &found, 1);
	if (rc != PMI2_SUCCESS || !found || strncmp(val, "leader-", 7) != 0)
		fail(rank, "PMI2_Info_GetNodeAttr", rc);
	snprintf(key, sizeof key, "value-%d", rank);
	snprintf(val, sizeof val, "%d;%s", rank + 1, jobid);
	if ((rc = PMI2_KVS_Put(key, val)) != PMI2_SUCCESS)
		fail(rank, "PMI2_KVS_Put", rc);
	if ((rc = PMI2_KVS_Fence()) != PMI2_SUCCESS)
		fail(rank, "PMI2_KVS_Fence", rc);
	for (i = 0; i < size; i++) {
		char want[300];
		snprintf(key, sizeof key, "value-%d", i);
		snprintf(want, sizeof want, "%d;%s", i + 1, jobid);
		rc = PMI2_KVS_Get(jobid, PMI2_ID_NULL, key, val, sizeof val, &vallen);
		if (rc != PMI2_SUCCESS || strcmp(val, want) != 0) {
			fprintf(stderr, "rank %d: %s is %s (rc %d), want %s\n", rank, key, val, rc, want);
			exit(5);
		}
		sum += atoi(val);
	}
	if ((rc = PMI2_KVS_Fence()) != PMI2_SUCCESS)
		fail(rank, "second PMI2_KVS_Fence", rc);
	if (node != NULL)
		strncpy(host, node, sizeof host - 1);
	else
		gethostname(host, sizeof host - 1);
	printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
	fflush(stdout);
	if ((rc = PMI2_Finalize()) != PMI2_SUCCESS)
		fail(rank, "PMI2_Finalize", rc);
	return 0;
}
