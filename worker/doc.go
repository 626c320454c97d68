// Package worker holds the decisions a node makes about its own tasks,
// as pure functions, and the loops that call them between gathering their
// inputs and acting on them (STYLE.md section 1). The plans:
//
//   - Reconcile: given the replicated jobs, the tasks the executor runs and
//     the exits it has not yet reported, which tasks to stop, which to
//     start, and what to tell the leader;
//   - Exits: which recorded exits may be reported now;
//   - MayStart: whether the node's lease lets it start anything;
//   - Fence: whether its lease ran out with tasks running (stop them all);
//   - SignalsDue: which recorded signal requests to send to the tasks
//     running here (SignalTarget: to which task of a job);
//   - a server's side of a worker's follow query: what to send
//     (FollowStateOf) and when to answer (AnswerFollow);
//   - the requests relayed to one node of a job (a terminal, stdin, an
//     sbcast copy): which job, for whom (RelayJob), and where a copy is
//     written (BcastHere).
//
// The plans read no clock and do no I/O. The loops, Driver (drive.go),
// Reporter (reports.go) and Heartbeater (heartbeat.go), gather and act
// only through plain interfaces — Node (the replica's view, the lease,
// starting a task, reporting to the leader, local or remote), Tasks and
// ExitLog (the executor), ExitReporter, Lessee (renewing the lease,
// fencing) and Clock — which the agent (package agent) implements. Each
// Driver round acts stops first, so that a slow or unreachable leader
// never holds up stopping a task that is no longer wanted. They start no
// goroutine: the agent runs them. The scenarios, a round's actions
// included, live in testdata as datadriven scripts.
package worker
