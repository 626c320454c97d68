// Package task is what the agent's tracker (package exec) and a task's
// supervisor (package stepd) agree on: a task's key and Launch, the Plan
// derived from it, the files of its task directory and their formats, the
// supervisor's command line and socket protocol, the lease record, the
// identity of an output file, and how a task's processes are recognised
// in /proc.
//
// The two sides run in different processes and, after an agent upgrade
// in place, from different binaries: a new agent must find its
// predecessor's tasks and adopt their supervisors. So everything here is
// a format: JSON field names, file names, the argv and the socket's
// requests only ever gain optional fields; none is renamed or removed.
//
// # What it owns
//
// Definitions and the small functions that read and write them. It runs
// no task, keeps no state and starts no goroutine; it must never hold the
// policy of either side (when to stop, what to record as lost).
//
// # On disk
//
//	DataDir/jobs/<job>.<incarnation>/    mode 0700, the job's own task
//	DataDir/jobs/<job>.<incarnation>.<step>/   a step's task
//	    start.json       the agent, before the supervisor starts (with a
//	                     batch script's output paths)
//	    stepd.json       the agent: the supervisor's input, the Launch
//	                     and the agent's settings
//	    stepd.log        the supervisor's log
//	    stepd.sock       the supervisor's control socket, while it runs
//	    pty.sock         the supervisor: rank 0's terminal, for a --pty
//	                     task, while it runs (see pty.go)
//	    stdin.sock       the supervisor: srun's stdin for the ranks that
//	    stdin2.sock      read it, raw and resumable, while they run (see
//	                     stdin.go)
//	    script           the supervisor: a batch job's script, owned by
//	                     the job's user
//	    proc-<RANK>.json the supervisor: pid and /proc start time of each
//	                     rank's leader
//	    rank-<RANK>.out  stdout of the rank (RANK is the global rank, in
//	                     the step for a step), unless redirected
//	    rank-<RANK>.err  stderr of the rank
//	    output.json      the supervisor: a batch script's output files as
//	                     it opened them (device, inode, birth, user) or
//	                     why it could not: what the agent's ReadLog checks
//	    pmix.sock        the supervisor: the fences of a PMIx step (srun
//	                     --mpi=pmix) on its first node, while it runs
//	    hosts            the ranks' /etc/hosts, with task namespaces only
//	    stop.json        the agent: a stop's cause, also sent on the socket
//	    exit.json        exit code, cause, start and end; once all are
//	                     dead (the supervisor), or when the task is lost
//	                     (the agent)
//	    ack.json         the agent: the exit was reported; it is not
//	                     pending again
//	DataDir/lease.json   the node's lease deadline (CLOCK_BOOTTIME), for
//	                     the supervisors' watchdog
//
// The task directory is the agent's alone, so a script run as another
// user is executed through an inherited descriptor (/dev/fd/3, its $0).
//
// Every record is a small JSON file written atomically (WriteJSON:
// temporary file, fsync, rename, fsync of the directory); the lease file
// is replaced atomically and not synced. Directories are removed only by
// the agent's Forget, once every task of the job is acknowledged.
package task
