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
//     cut-off; PlanArchive: the archive entry, also due when request ids
//     are to be stamped or forgotten;
//   - Priorities: every pending job's multifactor priority, in queue
//     order (the pass and `shoal priority` share it);
//   - the queue operations a caller asks of the leader (queueops.go):
//     PlanCancel, PlanHold, PlanRelease, PlanRequeue, PlanSetPriority,
//     PlanUpdate, PlanSignal, PlanStartStep and PlanCancelStep — who may
//     act on which job (MayTouch, MaySee, over a Caller), which jobs a
//     reference names (Resolve), the commands to propose, and what each
//     FSM refusal means to the caller (QueuePlan.Refusal: passed over, or
//     the answer's error, marked with its HTTP kind);
//   - administrators' requests (admin.go): PlanSetDrain, PlanSetPolicy,
//     PlanReportSwitch (root only, the request checked);
//   - the security state (security.go): a join token's terms and
//     addresses (JoinTokenTerms, JoinAddrs), which join may spend a token
//     (AdmitJoin, TokenMatches), whose certificate is renewed (MayRenew),
//     which node root may revoke (MayRevoke); the agent does the
//     cryptography (pki).
//
// The plans read no clock (now is an argument), do no I/O and propose
// nothing: the FSM checks every decision again when it is applied. The
// scenarios live in testdata as datadriven scripts.
//
// The loops (Scheduler, LeaseWatch, Archiver) gather and act only
// through the plain interfaces of loop.go — State, Proposer, Leadership,
// Clock — which the agent (package agent) implements over its FSM, raft
// and the wall clock. They start no goroutine: the agent runs each one
// while it leads and cancels it on losing leadership.
package leader
