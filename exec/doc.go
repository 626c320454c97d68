// Package exec is the agent's side of this node's share of a job
// incarnation — its ranks: it has each task run by a supervisor process
// of its own (package stepd), finds the tasks again after an agent
// restart, stops and signals them, and keeps how they ended, durably,
// until the agent has reported it.
//
// # Tasks
//
// A task is what one Start runs, named by a TaskKey {Job, Incarnation,
// Step}: the job's own ranks (Step NoStep: the `shoal submit` command on
// every node, or a batch job's script, one task on the first node only),
// or this node's share of an srun step (Step 0, 1, ...). Each task has its
// own records, exit and acknowledgement; stopping a step leaves the job's
// own task running. A job's time limit applies to its own task (for a
// batch job, the script); a step has none and ends with the job: when a
// batch script ends, exec stops the job's steps on its node, and the agent
// stops them elsewhere.
//
// # What it owns
//
// The Executor, one per agent: which tasks run here (Running), the exits
// recorded and not yet acknowledged (PendingExits, Ack), the task
// directories under DataDir/jobs (their start and stop records, their
// acknowledgements, Forget), the lease file the supervisors fence by
// (RenewLease), the output files a task wrote as `shoal logs` reads them
// (LogFiles, ReadLog: a file at a path the job chose only as the job's
// user and only while the path names the file the task opened), and the
// recovery of tasks whose supervisor died.
//
// Each task's supervisor owns its processes (package stepd): the fork,
// the environment, the output files, the cgroup and namespaces, the time
// limit, the kill-wait, the reaping and the exit record. The agent's
// Executor holds none of that: Stop and Signal are requests on the
// supervisor's socket, and a wait connection per task tells it when the
// exit record is written. What the two sides share — the task's key, its
// Launch, the files of a task directory and their formats, the
// supervisor's command line and socket protocol — is package task.
//
// # What it must never touch
//
// The raft log, the FSM and the network: exec neither reads cluster state
// nor reports exits. The agent (package agent) calls Start for allocations
// naming this node, Stop/StopAll on cancel or lost lease, reports
// PendingExits through the leader and calls Ack once one is committed.
// exec never forks, signals or waits for a rank itself; it kills only
// what is left of a task whose supervisor is gone, and only processes it
// can prove belong to that task (see below), never by name. It never
// imports package stepd: the supervisor is another process, started by
// its command line.
//
// # Supervisors
//
// Every task runs under a supervisor process of its own, as a Slurm step
// runs under slurmstepd: Start writes the start record and stepd.json
// (the Launch and Config's settings) and starts Config.StepdCommand
// (`shoal stepd DIR`) in a session of its own. The supervisor is the
// agent's child only until the agent ends (a goroutine reaps it); after a
// restart it belongs to init, and nothing of the agent has to reap it. The
// supervisor reports the launch on an inherited pipe (Start returns then),
// answers stop, signal and wait requests on stepd.sock, and reads the
// stop record (written before each stop request, so a request lost on the
// way still arrives). A supervisor that dies without an exit record
// leaves its task lost (see below).
//
// The ranks die with their supervisor, not with the agent: an agent
// killed -9, or stopped with Detach for a restart, leaves its tasks
// running.
//
// Fencing does not rely on the agent either. The agent writes each lease
// renewal to lease.json (RenewLease: a CLOCK_BOOTTIME deadline, sent time
// + the TTL the leader granted, Config.LeaseTTL or stretched; a deadline
// alone, as every release's supervisors read it); each supervisor reads it every 100 ms and, once it
// has passed (or cannot be read), stops its task with cause "fenced":
// SIGTERM, SIGKILL after KillGrace. So an agent that is dead, hung or
// SIGSTOPped cannot keep ranks running past lease + KillGrace, the bound
// the leader waits out before declaring the node down.
//
// # Crash and restart
//
// A task runs at most once per node: Start does nothing when its start
// record exists, also after a restart.
//
// New reattaches: a task with a start record, no exit record and a
// supervisor that answers on its socket is running again; its exit is
// pending once the supervisor records it. Stop, Signal and the time limit
// work on it as on any task. Supervisors started by an earlier agent
// binary are adopted the same way: the task directory's files, the
// supervisor's command line and its socket protocol are what both agree
// on (package task), and they do not change between versions.
//
// New recovers the rest: a task with a start record, no exit record and
// no supervisor belonged to a supervisor that died (or an agent that died
// while starting it). Its surviving processes are killed — a recorded
// leader only if its /proc start time matches the recorded one (a recycled
// pid is never killed), members of such a leader's group, and any process
// whose environment names the task (SHOAL_JOB_ID, SHOAL_INCARNATION,
// SHOAL_STEP_ID for a step, SHOAL_NODE_NAME of this node; a supervisor's
// environment carries them too) — and an exit with cause "lost" and code
// -1 is recorded. Pdeathsig reaches only a rank's leader; its children
// are found this way. Exits recorded and not acknowledged are pending again.
//
// Recovery also kills what is left in a lost task's cgroup (its
// stepd.json names the tree). Limits: without cgroups (Config.Cgroup nil:
// not root, no hierarchy, --cgroups=off), a descendant that left the
// rank's process group and rewrote or dropped its environment escapes
// both Slurm-style group kills and recovery.
package exec
