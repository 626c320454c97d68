// Package exec runs this node's share of a job incarnation — its ranks —
// and records how it ended, durably, until the agent has reported it.
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
// The ranks' processes from fork to reaping: one process group per rank
// (Setpgid), the environment contract (Env for ranks and step tasks,
// BatchEnv for batch scripts: torchrun's, Slurm's and Shoal's names, in
// Slurm's formats), the ranks' stdout and stderr files (a batch script's
// output files, opened as the job's user and never through a symbolic
// link, and read back by ReadLog only as that user and only while their
// path names the file the task opened; see output.go),
// the time limit, signals (SIGTERM, then SIGKILL after Config.KillWait, or
// the shorter Config.KillGrace when the node is fenced; the --signal
// warning before the time limit; Signal on request), stopping the
// siblings of a failed rank, and the exit records. A task
// ends when every rank's leader is reaped; exec then SIGKILLs whatever is
// left in the ranks' process groups and waits for it, so a reported exit
// means nothing of the task runs any more and its GPUs may go to another
// job. With Config.Cgroup, every process of the task lives in cgroups of
// its own from birth, confined to the node's share of the allocation
// (CPUs, memory, GPU devices, a pids bound), and the end of a task also
// kills everything left in its cgroup — what left the process groups too
// — before the exit is recorded; a kernel OOM kill makes the exit's cause
// "oom", and the exit carries the cgroup's usage (see cgroup.go and
// package cgroup). With Config.TaskNamespace, each rank also gets a UTS and mount
// namespace of its own, named after the node, with an /etc/hosts of the
// cluster's nodes (Launch.Hosts; see taskns.go). No process that runs as
// root — the supervisor, the task namespace helper — runs with the job's
// environment: the supervisor gets a fixed one from the agent, the helper
// gets the task's on a descriptor and applies it only at its final exec,
// as the user.
//
// # What it must never touch
//
// The raft log, the FSM and the network: exec neither reads cluster state
// nor reports exits. The agent (package node) calls Start for allocations
// naming this node, Stop/StopAll on cancel or lost lease, reports
// PendingExits through the leader and calls Ack once one is committed.
// exec signals only processes it started, or, on recovery, processes it
// can prove are those (see below); it never kills by name.
//
// # On disk
//
//	DataDir/jobs/<job>.<incarnation>/    mode 0700, the job's own task
//	DataDir/jobs/<job>.<incarnation>.<step>/   a step's task
//	    start.json       written and synced before the first fork (with a
//	                     batch script's output paths)
//	    script           a batch job's script, owned by the job's user
//	    proc-<RANK>.json pid and /proc start time of each rank's leader
//	    rank-<RANK>.out  stdout of the rank (RANK is the global rank, in
//	                     the step for a step), unless redirected
//	    rank-<RANK>.err  stderr of the rank
//	    exit.json        exit code, cause, start and end; once all are dead
//	    ack.json         the exit was reported; it is not pending again
//	    hosts            the ranks' /etc/hosts, with task namespaces only
//	    stepd.json       the supervisor's input: the Launch and settings
//	    stepd.sock       the supervisor's control socket, while it runs
//	    stop.json        a Stop's cause, also sent on the socket
//	    stepd.log        the supervisor's log
//	    output.json      a batch script's output files as the supervisor
//	                     opened them (device, inode, birth, user) or why
//	                     it could not: what ReadLog checks
//	DataDir/lease.json   the node's lease deadline (CLOCK_BOOTTIME), for
//	                     the supervisors' watchdog
//
// The task directory is the agent's alone, so a script run as another
// user is executed through an inherited descriptor (/dev/fd/3, its $0).
//
// Every record is a small JSON file written atomically (temporary file,
// fsync, rename, fsync of the directory). Directories are never removed:
// garbage collection of old incarnations is left to a later change.
//
// # Supervisors
//
// Every task runs under a supervisor process of its own, as a Slurm step
// runs under slurmstepd: Start writes the start record and stepd.json and
// runs Config.StepdCommand (`shoal stepd --detach DIR`), which starts the
// supervisor in a session of its own and exits, so the supervisor is never
// the agent's child. The supervisor runs the task with this package's own
// code (the same run, supervise and finish as ever, on an Executor of its
// own), reports the launch on an inherited pipe (Start returns then), and
// answers stop, signal and wait requests on stepd.sock. The agent's
// Executor keeps the same API: Stop and Signal become requests, and a
// wait connection per task tells it when the exit record is written. A
// supervisor that dies without one leaves its task lost (see below).
//
// The ranks are started with Pdeathsig SIGKILL from a goroutine locked to
// its OS thread for the life of the rank, so the leaders die with their
// supervisor, not with the agent: an agent killed -9, or stopped with
// Detach for a restart, leaves its tasks running.
//
// Fencing does not rely on the agent either. The agent writes each lease
// renewal to lease.json (RenewLease: a CLOCK_BOOTTIME deadline, sent time
// + Config.LeaseTTL); each supervisor reads it every 100 ms and, once it
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
// work on it as on any task.
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
