// Package placement decides which pending jobs start now and on which
// nodes and GPUs. It owns gang placement over the switch tree, the choice
// of GPUs inside a node, queue order and the pending reasons it explains
// itself with.
//
// It is pure: the same View, queue and now always give the same Result.
// It must never read the clock (now is an argument), do I/O, start
// goroutines, use global randomness, or depend on Go's map iteration
// order; purity_test.go enforces the first four. It knows nothing of raft,
// memberlist, HTTP or processes, and imports only the standard library and
// the cluster domain types.
//
// Contracts that are not obvious:
//
//   - NewView, Place and PlaceWith never modify the nodes, jobs or queue
//     they are given, nor the View: every Place call starts from the view as it was
//     built, and each decision it makes takes its GPUs away only for the
//     jobs after it in the same call.
//   - A GPU is free unless some job's Alloc lists it on that node with
//     Released false, whatever that job's state (a terminal job keeps its
//     GPUs until its tasks are known dead: DESIGN invariant 1). The FSM
//     checks every decision again on apply; this is the first of the two
//     checks.
//   - GPU numbers in Assignment.GPUs, like cluster.NodeAlloc.GPUs, are
//     positions in the node's GPUs list. NVLinkPeers name GPUs by their
//     Index field.
//   - Place's queue policy is Slurm's sched/builtin without backfill: jobs
//     are taken in ascending ID order; the first one that would fit the
//     usable nodes were they empty, but does not fit now, pends with
//     Resources and every later job pends with Priority. A job that could
//     not fit even the empty usable nodes pends with ReqNodeNotAvail and
//     blocks nothing. PlaceWith offers the policies the trace simulator
//     compares: fifo (that order, first-fit nodes), backfill (EASY backfill,
//     first fit), shoal (Place's topology preferences with EASY
//     backfill) and qssf (shoal taking jobs in QSSFOrder: starving jobs,
//     then shortest predicted service first, aged and weighted by fair
//     share; see qssf.go); backfill reads the jobs' time limits, recorded
//     by the View.
//     Options.Order replaces ID order with another (the leader's pass,
//     leader.Pass, uses PolicyShoal with the multifactor priority order of
//     Priorities; see priority.go), and the
//     reservation then goes to the first job in that order that waits.
//   - Beyond GPUs a job may be held to: its partition's nodes (View.
//     WithPartitions), its node set (-w, -x, -C, --exclusive), the CPUs
//     and memory it consumes on each node (free CPUs and memory are
//     tracked like free GPUs, and each decision takes them out too), at
//     most --switches leaves while it may still wait, and
//     -N MIN-MAX (the most nodes that fit). Nodes reporting an NVLink
//     block are grouped by block instead of leaf switch. Victims chooses
//     preemption victims and EarliestStart answers --test-only, both with
//     the same placement rules.
//   - Priorities uses maps only to look associations up; every sum over
//     them adds whole numbers, so the result does not depend on their
//     iteration order. The usage itself is summed record by record in
//     the records' order.
//   - History is what a pass derives from the accounting archive and
//     carries to the next (the caller keeps it: leader.Scheduler; nothing
//     in placement does). PrioritiesWith(p, h, live) and
//     PredictorWith(h, live) equal Priorities and PredictorFrom over the
//     archive then live, bit for bit; History holds nothing that depends
//     on now or the policy, and NewHistory reuses a record only if the
//     same pointer is still at its ID (records are never modified in
//     place).
//   - A View is read-only for Place and PlaceWith. Start and Finish update
//     it in place, for the simulator, which keeps one View for a whole
//     replay instead of building one per event.
//   - Node names are unique in the FSM; should two nodes share a name, the
//     first one given wins.
package placement
