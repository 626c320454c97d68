// Package worker holds the decisions a node makes about its own tasks,
// as pure functions the agent calls between gathering its inputs and
// acting on them (STYLE.md section 1):
//
//   - Reconcile: given the replicated jobs, the tasks the executor runs and
//     the exits it has not yet reported, which tasks to stop, which to
//     start, and what to tell the leader;
//   - Exits: which recorded exits may be reported now;
//   - MayStart: whether the node's lease lets it start anything.
//
// It owns no goroutine, reads no clock and does no I/O: the agent (package
// node) gathers, calls, and acts — stops first, so that a slow or
// unreachable leader never holds up stopping a task that is no longer
// wanted. The scenarios live in testdata as datadriven scripts.
package worker
