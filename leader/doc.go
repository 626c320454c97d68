// Package leader holds the decisions the Raft leader makes for the whole
// cluster, as pure functions, and the loops that call them between
// gathering their inputs and applying the result through raft (STYLE.md
// section 1). The plans:
//
//   - Pass: one scheduling round — jobs cancelled because their dependency
//     can never hold, the reasons of jobs kept from placement, the
//     preemptions whose grace is over, the allocations placement chooses
//     and the pending reasons that changed; the archive's
//     placement.History comes in from the last round and goes out to the
//     next (Scheduler.Run keeps it for its term), and never changes a
//     decision;
//   - Preemption: the victims that make room for the first job waiting on
//     resources, judged on the state after the pass's allocations;
//   - ExpiredLeases: the nodes to declare down;
//   - ArchiveDue: whether finished jobs are due for the archive, and the
//     cut-off;
//   - Priorities: every pending job's multifactor priority, in queue
//     order (the pass and `shoal priority` share it).
//
// The plans read no clock (now is an argument), do no I/O and propose
// nothing: the FSM checks every decision again when it is applied. The
// scenarios live in testdata as datadriven scripts.
//
// The loops (Scheduler, LeaseWatch, Archiver) gather and act only
// through the plain interfaces of loop.go — State, Proposer, Leadership,
// Clock — which the agent (package node) implements over its FSM, raft
// and the wall clock. They start no goroutine: the agent runs each one
// while it leads and cancels it on losing leadership.
package leader
