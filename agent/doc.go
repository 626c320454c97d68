// Package agent is the Shoal agent: it wires gossip, consensus, the FSM,
// the leader's control loops, the executor and the HTTP API into one
// process, the one every machine of a cluster runs.
//
// The agent (agent.go: Agent, New, Run, shutdown; config.go, security.go,
// cgroups.go, crash.go) only composes: it reads its configuration, opens
// the data dir, sets up security, the listeners, raft, gossip, the
// task namespaces, cgroups and the executor, builds the components from
// them, starts their loops in order and stops them in order. The
// components, each a type with its own fields, built from explicit
// dependencies:
//
//   - core (core.go): what every component shares, the node's hold on the
//     cluster: its configuration and record, security, the replica, raft,
//     gossip, the view it follows while a worker (worker.Remote) and the
//     peer clients; the one way to read the state (view, Readable), to
//     propose (apply, behind the protocol gate: versions.go) and to reach
//     the leader (callLeader, locally when it leads); and the loops every
//     node runs over them alone: bootstrap, certificate renewal
//     (renew.go), the gossip keyring (keyring.go), the CA offer (join.go),
//     topology discovery (topology.go), the server's side of a worker's
//     follow query (follow.go). To the HTTP API it is httpapi.Cluster
//     (who leads, the replica's progress: clusterapi.go, core.go) and
//     httpapi.Info (status, leader, members, the follow query).
//   - leaderSide (leader.go, with archive.go, policy.go, pack.go,
//     queueops.go, prolog.go's leaderScriptFailed): what a node does while
//     it leads. It is leader.Duties, leader.Proposer and
//     leader.SchedulerMetrics; it runs the lead loop and the
//     leader-only loops, answers the nodes' heartbeats, task reports,
//     leaves and drains at stop (httpapi.Internal: Heartbeat, TaskEvent,
//     NodeLeft, DrainSelf), and carries out the API's submits and queue
//     plans.
//   - workerSide (worker.go, with follow.go's agentFollow, prolog.go,
//     signal.go, gpuusage.go, archive.go's cleaner): what a node does with
//     its own tasks, leader or not: the heartbeat and its lease, the
//     executor driver, exit reports, following a server, GPU sampling and
//     output cleanup. It reaches the leader through callLeader, running
//     the leaderSide it was given when this node leads.
//   - the HTTP API's other parts (apibackend.go: apiRoles hands each
//     role of httpapi.Roles to the component whose role it is):
//     securityAPI (join.go, keyring.go, usertoken.go, over core) is
//     httpapi.Authority and httpapi.Security: callers' proofs, joins,
//     renewals, revocations, tokens, the keyring; relayAPI (relay.go,
//     with a job's output: Logs and LocalLogs; pty.go, bcast.go,
//     gpuseries.go) is httpapi.Relays: what lives on a job's nodes, served
//     from workerSide or relayed; and apiBackend (apibackend.go, http.go, queueops.go,
//     steps.go, signal.go, policy.go, switches.go), over core and
//     leaderSide, is httpapi.Queue and httpapi.Admin: it reads the replica
//     and carries out through leaderSide what package leader decides.
//
// Every control loop is gather → decide → act: take a consistent FSM
// view, call a pure function, and act on the result. The loops live
// beside their plans, behind plain interfaces this package implements
// over raft, the FSM, gossip, the executor and the wall clock; here they
// are only built and run:
//   - in package leader: leadership (Lead: TakeoverOf; HandOver, a
//     diverged leader's hand-off), scheduling
//     (Scheduler: Pass and Preemption), lease expiry (LeaseWatch:
//     ExpiredLeases) and the archive (Archiver: PlanArchive);
//   - in package consensus: raft membership (VoterReconciler: Candidates
//     and PlanVoters) and bootstrap (Bootstrapper: BootstrapNow);
//   - in package worker: the executor driver (Driver: Reconcile), the
//     exit reports (Reporter: Exits), the heartbeat with its fencing
//     (Heartbeater: Fence), the output cleanup (Cleaner: OutputsToForget),
//     GPU sampling (GPUSampler: GPUReportDue) and following a server
//     (Follower: PickKnown, PickMember, NextFollowStep, AfterFollow);
//   - in package pki: certificate renewal (Renewer: RenewNext), the gossip
//     keyring (KeyringFollower: FollowKeyring), the CA offer (CAOfferer)
//     and a join with a token (Joiner: JoinRetries);
//   - in package gossip: reading the membership events (LogEvents);
//   - in package topology: finding the node's place (Discoverer: its
//     sources and Merge).
//
// No loop runs here any more (a diverged leader's hand-off retry is
// leader.HandOver). A node's own loops reach the leader through one
// function, callLeader (locally when it leads).
//
// Leader-only loops (scheduling, leases, voter reconciliation, archive:
// leaderSide.Loops) are started by leader.Lead when this node gains
// leadership and stopped, and waited for, when it loses it. A replica that
// diverged (its FSM could not apply a committed entry) never leads:
// elected, it hands leadership over. Loops every node runs (heartbeats,
// the executor driver, exit reports, following, bootstrap) live as long as
// the agent.
//
// Leases. An agent renews its lease by a heartbeat to the leader, which
// answers with the TTL it grants and when to renew next
// (leader.GrantLease: LeaseTTL, stretched as the cluster grows so the
// leader sees a bounded number of renewals a second, up to
// leader.MaxLeaseStretch × LeaseTTL, and only as far as every live agent
// announces in gossip; leader.AgreedStretch; the answer is
// leader.PlanHeartbeat). The leader records, before it
// answers, the latest end of any lease it granted each node (leader.LeaseTable:
// when the heartbeat arrived + the TTL) and declares a node down only
// KillGrace + leaseMargin after that end; an agent whose last
// acknowledged renewal's TTL has passed, counted from when it sent that
// renewal, stops its ranks (SIGTERM, SIGKILL after KillGrace), and its
// tasks' supervisors do the same on their own from the deadline the agent
// writes (exec.RenewLease). The node never holds more than the leader
// granted (worker.GrantedTTL; an older leader's answer without a TTL
// means LeaseTTL). So, as long as the two clocks run at about the same
// rate (not the same time: only durations are compared, each on its own
// machine), a node cut off from the quorum has killed its ranks before
// the majority can place anything on its GPUs.
//
// A new leader does not know what its predecessors granted: it counts
// every node's lease from its own election with the longest TTL any
// leader could have granted, leader.GrantLease with MaxLeaseStretch for
// the nodes its replica holds (leader.LeaseWatch). That is safe because
// the TTL grows only with the number of node records, which the log
// never removes, and every predecessor granted from a replica at a
// committed index the new leader has applied (it leads only after a
// barrier); a predecessor cut off stops answering heartbeats when its
// raft leader lease runs out, about when another can first be elected,
// inside leaseMargin. An agent of an earlier release, were it elected,
// would wait only LeaseTTL: leases stretch only while every live agent
// announces that it waits the stretch (gossip.Meta.LeaseStretch). Every
// agent must have the same LeaseTTL and RenewalsPerSecond.
//
// The HTTP API (package httpapi) serves every route: it proves the caller,
// forwards writes to the leader and renders answers, and reaches this
// agent only through its roles (httpapi.Roles, built by apiRoles), whose
// methods take the caller as a cluster.Identity and return marked errors.
// The requests that act on jobs are decided in package leader, as pure
// plans over a view and the caller (leader.Caller: callerOf looks up the
// operator groups): cancel, hold, release, requeue, priority and update
// (PlanCancel, PlanHold, PlanRelease, PlanRequeue, PlanSetPriority,
// PlanUpdate), signals (PlanSignal), steps (PlanStartStep,
// PlanCancelStep), who may touch or see a job (MayTouch, MaySee), and
// root's drains, policies and switch reports (PlanSetDrain, PlanSetPolicy,
// PlanReportSwitch), a node's task reports (PlanTaskReport) and a submit's
// check (CheckSubmit, PlanTestOnly), its body decoded by httpapi.SpecOf;
// queueops.go, steps.go, signal.go, leader.go, apibackend.go, policy.go
// and switches.go only gather and carry a plan out (propose: each command
// in order, stamped with the wall clock, each refusal read by
// QueuePlan.Refusal). Which signal requests a node sends its tasks is
// worker.SignalsDue; which job a relayed request (a terminal, stdin,
// sbcast, a PMIx fence) is for, which node and task it reaches, and where
// a copy is written, worker.RelayJob, PtyTarget, StdinTarget, PMIxTarget
// and BcastHere (relay.go, pty.go and bcast.go relay and write).
//
// Identity (httpapi's caller.go, security.go). Unless --insecure, every node holds a
// certificate from the cluster CA (pki): raft is mutual TLS, the API on
// TCP is TLS only, gossip is encrypted. A request's caller comes from the
// Unix socket's SO_PEERCRED (root may act as another user), a user token
// signed with the replicated token key, or a node certificate whose node
// says it forwarded the request (then the identity headers are what it
// proved); declared headers are believed from nowhere else. A follower
// forwards writes to the leader with the identity it proved. Only nodes
// call /v1/internal/*, each about itself. The replicated security record
// (fsm) holds the CA with its key, the gossip keyring, join tokens and
// revocations, so whichever node leads can sign joins and renewals
// (join.go, renew.go, keyring.go, usertoken.go: the cryptography; who may
// join, renew, revoke, create join and user tokens and read or change the
// gossip keyring is decided in package leader: AdmitJoin, MayRenew,
// MayRevoke, JoinTokenTerms, UserTokenTerms, RevokeUserTokenKey,
// MayReadKeyring, MayChangeKeyring; whether a user token proves its user,
// in package httpapi: VerifyUserToken).
//
// Workers (follow.go: worker.Follower's adapter agentFollow over what the
// servers sent, worker.Remote; the server's side of the follow query,
// worker.FollowHolder over the replica (followSource), which
// worker.FollowStateOf, AnswerFollow and FollowHints decide; and the
// query's wire codec). Beyond the voters and --raft-replicas nonvoters
// (consensus.PlanVoters), a node is a worker: outside the raft
// configuration, its raft unconfigured (so it can be added and promoted),
// its replica unused. It follows the jobs that hold it, their nodes, the
// policy and the security state (without the CA key) from a server with a
// blocking query, reaches the leader through the servers' hints
// (leaderAPI), and its API forwards reads of the state to the leader. The
// executor driver, the keyring, token and revocation checks and the output
// cleanup read core.view or the remote view while it is one.
//
// Rolling upgrades (versions.go). Every agent announces its protocol
// version in gossip; core.apply, the one place commands are proposed,
// refuses (fsm.ErrUnsupportedByCluster, HTTP 409) a command type that a
// raft server alive in gossip announces too old a protocol for
// (leader.ProtocolGate decides over what node gathers).
package agent
