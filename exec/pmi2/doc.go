// Package pmi2 is the PMI server of srun --mpi=pmi2: what lets MPICH's
// ranks (and any client of PMI-1 or PMI-2) started by srun itself, one
// task per rank with no mpiexec, learn who they are and find each other,
// as Slurm's mpi/pmi2 plugin does inside slurmstepd. It is pure Go.
//
// # What it owns
//
// One step's PMI service on one node, inside that node's task supervisor
// (package stepd): the supervisor calls Start before it forks the ranks,
// passes each rank File(local) as a descriptor and Env(local, fd) in its
// environment (PMI_FD, PMI_RANK, PMI_SIZE, PMI_JOBID, PMI_SPAWNED=0),
// calls Started once the rank has it, and Close once the ranks are gone.
//
//   - The job (Job, from the Launch alone through pmix.JobOf, so every
//     node derives the same): the step's nodes and ranks, its id
//     "JOB.STEP" (PMI_JOBID, the KVS name) and PMI_process_mapping in
//     MPICH's "(vector,(START,NODES,PPN),...)" form (ProcessMapping).
//   - The wire (wire.go): every client starts with PMI-1's line
//     "cmd=init pmi_version=V pmi_subversion=S\n". Version 1 goes on in
//     PMI-1 lines ("cmd=NAME k=v ...\n", at most MaxLine bytes), version
//     2 in PMI-2 commands (a six-character decimal length, then
//     "cmd=NAME;k=v;...;", ';' in a value written ";;", at most MaxFrame
//     bytes). Parse1 and Parse2 are fuzzed (FuzzParse).
//   - The server (server.go): one socket pair per local rank, one
//     goroutine per connection, each command answered as Slurm's plugin
//     answers it (pmi1.c, pmi2.c): the sizes, the KVS, node attributes,
//     job attributes, finalize and abort. Spawn, publish/lookup, connect
//     and getbyidx are answered as failures (or, where the protocol has
//     no answer, the connection ends, so that no client waits forever).
//
// # The fences
//
// A fence (PMI-1 barrier_in, PMI-2 kvs-fence) completes on this node once
// every local rank entered it; then this node's puts since the last fence,
// serialized canonically (keys sorted, each key and value after its
// length), go to the Fencer of package pmix, which gathers every node's
// on the step's first node through the agents (see package pmix) and
// returns them concatenated in node order; they decode into the KVS every
// rank reads with get, and each rank is answered. So a get sees every
// rank's puts of the fences before it, as under Slurm.
//
// Every wait is bounded: a fence FenceTimeout (pmix.FenceTimeout, 5
// minutes) from a rank's entry, a wait for a node attribute the same. A
// fence that failed (another node lost, not met in time), an abort of the
// world (PMI-1's abort, PMI-2's with isworld=TRUE, as Slurm), or a rank
// that left PMI without finalizing (it exited, died or aborted) while its
// node's ranks fence, or before they do, calls OnFail: the supervisor
// kills the node's ranks, and the step fails instead of hanging (MPICH's
// PMI-1 client reads no error from barrier_out).
//
// # What it must never touch
//
// Anything but its own step's ranks: it never signals a process (OnFail
// asks the supervisor) and never writes a task record.
package pmi2
