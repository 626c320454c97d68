// Package fsm is Shoal's replicated state machine: the job queue, every
// allocation, and the node table, changed only by applying committed log
// entries in index order. table.go is the command table: every type byte,
// its name, its decode-and-apply function and the protocol version that
// introduced it.
//
// What it owns: the command format and its deterministic Apply; the
// protocol versions (which version introduced which command type and
// snapshot format); the canonical snapshot format (Snapshot/Restore); the
// running hash and the snapshot digest that replicas compare (DESIGN invariant 5); immutable
// read views with a change channel for blocking queries.
//
// What it must never touch: clocks, randomness, files, the network,
// goroutines, raft or memberlist. Time enters only through the leader's
// stamp in each command. purity_test.go enforces this. The consensus layer
// adapts State to raft.FSM; fsm imports only the standard library, msgpack
// and the domain types in package cluster.
//
// Contracts that are not obvious:
//
//   - Apply is called from one goroutine with strictly increasing indexes
//     (starting at 1). Every entry, even one refused, advances the index
//     and the running hash: sum_i = sha256(sum_{i-1} || be64(index) ||
//     data). A non-increasing index, empty data, an unknown type byte (one a
//     newer agent wrote: ErrUnknownCommand, "upgrade it") or an
//     undecodable body marks the replica diverged (Diverged, ErrDiverged);
//     the caller must then stop serving reads and give up leadership. A
//     refused command (Result.Err without ErrDiverged) is normal: every
//     replica refuses it identically and nothing changed.
//   - Records are copy-on-write. A *cluster.Job or *cluster.Node reachable
//     from a View is shared with the State and with other views and is
//     never modified after it was stored: callers must not mutate it (clone
//     first). This supersedes the "copy the reader owns" remark in package
//     cluster, which would cost a deep copy of the whole state per view.
//   - GPUs stay held by an allocation until its NodeAlloc is Released (a
//     TaskExited report or NodeDown), even after the job turned terminal;
//     Allocate refuses any decision naming a held GPU (DESIGN invariant 1).
//   - Batch jobs (Spec.Batch set) run their script on Alloc.Nodes[0] only.
//     That node's TaskExited decides the job (0: COMPLETED, else FAILED
//     with the code; timeout: TIMEOUT; fenced or lost: NODE_FAIL or
//     REQUEUED) while the other nodes stay unreleased until they report.
//     The other nodes run only steps, so they report while the job is
//     RUNNING only when fenced or lost (which fails or requeues the job);
//     any other report from them just releases the node.
//   - Steps (StartStep) belong to one incarnation: IDs count from 0, a
//     requeue forgets them. A step runs on the allocation's first
//     Spec.Nodes nodes in rank order (or the nodes Spec.NodeList names,
//     kept in that order; srun -n spreads Spec.NTasks over them in
//     blocks). The job's NodeAllocs hold its GPUs and CPUs; an Exclusive
//     step (srun without --overlap, protocol 5) holds some of those on
//     each of its nodes while its tasks there are live (StepNode.GPUs
//     and CPUs, chosen by stepHolds), no GPU or CPU held by two live
//     step nodes, and StartStep refuses it with ErrStepBusy while they
//     are held. A shared step holds nothing. A step's State is the node's order:
//     RUNNING means run it; anything else means stop it (or it ended).
//     CancelStep, and the job leaving RUNNING, set CANCELLED at once while
//     the step's nodes stay live until they report (StepExited) or their
//     NodeAlloc is released, which marks them lost (an agent reports its
//     job's tasks dead only once its step tasks are dead too). A step ends
//     — EndTime set, ExitCode the largest node code, and unless CANCELLED
//     COMPLETED when every node exited 0, else FAILED — exactly when its
//     last live node is done. A step never outlives its job's GPUs.
//   - What keeps a pending job from starting besides resources (a hold, a
//     dependency, an array's throttle, its partition's time limit, its
//     QoS's GPU cap) is decided by Gates, which the leader asks before
//     placement and Allocate asks again per decision: no job starts early
//     whatever the leader believed. A SubmitJob with Spec.Array makes one
//     job per index with consecutive IDs; the queue policy (SetPolicy)
//     names partitions, QoS levels and preemption rules; PreemptJob marks
//     a running victim and sends it SIGTERM, and only past its deadline
//     may it be cancelled as Preempted or requeued (RequeueJob, the one
//     way out of a terminal state).
//   - Stored records are canonical: empty slices are stored as nil, so
//     identical histories give identical snapshot bytes whether a replica
//     applied the log or restored a snapshot.
//   - Log bodies and snapshots are checked for well-formed msgpack whose
//     declared lengths fit in the input before they are decoded: msgpack
//     v5.4.1 otherwise allocates whatever length a hostile header claims.
package fsm
