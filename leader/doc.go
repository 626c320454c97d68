// Package leader holds the decisions the Raft leader makes for the whole
// cluster, as pure functions its loops (in package node) call between
// gathering their inputs and applying the result through raft (STYLE.md
// section 1):
//
//   - Pass: one scheduling round — jobs cancelled because their dependency
//     can never hold, the reasons of jobs kept from placement, the
//     preemptions whose grace is over, the allocations placement chooses
//     and the pending reasons that changed;
//   - Preemption: the victims that make room for the first job waiting on
//     resources, judged on the state after the pass's allocations;
//   - ExpiredLeases: the nodes to declare down;
//   - Priorities: every pending job's multifactor priority, in queue
//     order (the pass and `shoal priority` share it).
//
// It reads no clock (now is an argument), does no I/O, starts no
// goroutine and proposes nothing: the FSM checks every decision again when
// it is applied. The scenarios live in testdata as datadriven scripts.
package leader
