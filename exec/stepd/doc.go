// Package stepd is a task's supervisor: the `shoal stepd` process that
// runs one task — this node's share of a job incarnation or of a step —
// from the fork of its ranks to its exit record, apart from the agent, as
// a Slurm step runs under slurmstepd. The agent (package exec) starts one
// per task and talks to it only through the task directory and the
// supervisor's socket (package task).
//
// # What it owns
//
// One task's processes, from fork to reaping: one process group per rank
// (Setpgid), the environment contract (Env for ranks and step tasks,
// BatchEnv for batch scripts: torchrun's, Slurm's and Shoal's names, in
// Slurm's formats), the ranks' stdout and stderr files (a batch script's
// output files, opened as the job's user and never through a symbolic
// link, with what was opened recorded for the agent's ReadLog), the time
// limit, signals (SIGTERM, then SIGKILL after the kill-wait, or the
// shorter kill-grace when the task is fenced; the --signal warning before
// the time limit; signals on request), stopping the siblings of a failed
// rank, and the exit record. For a --pty task (srun --pty) it also holds
// rank 0's terminal: the rank runs in a session of its own with the
// terminal as its controlling terminal, input and output, and the
// supervisor serves the master on pty.sock in the task directory to one
// connection at a time (the agent's relay of srun; see pty.go). Ranks
// that read srun's stdin read pipes the supervisor writes what it gets on
// stdin.sock or, resumable across an agent's restart, stdin2.sock (see
// stdin.go and exec/task's stdin.go). A task
// ends when every rank's leader is
// reaped; the supervisor then SIGKILLs whatever is left in the ranks'
// process groups and waits for it, so a recorded exit means nothing of
// the task runs any more and its GPUs may go to another job.
//
// With a cgroup tree in its stepd.json, every process of the task lives
// in cgroups of its own from birth, confined to the node's share of the
// allocation (CPUs, memory, GPU devices, a pids bound), and the end of a
// task also kills everything left in its cgroup — what left the process
// groups too — before the exit is recorded; a kernel OOM kill makes the
// exit's cause "oom", and the exit carries the cgroup's usage (see
// cgroup.go and package cgroup). With a task namespace helper, each rank
// also gets a UTS and mount namespace of its own, named after the node,
// with an /etc/hosts of the cluster's nodes (Launch.Hosts; see taskns.go;
// the helper is package rankexec's NamespaceMain). Otherwise, with
// an exec shim in stepd.json (rankexec.ExecMain; see taskexec.go), each rank
// is forked into it, already as the user, and it execs the rank's
// program in place with the rank's own pid as SLURM_TASK_PID.
//
// With --container (Launch.Container), each rank runs in an OCI
// container of its own: its leader is the node's OCI runtime (crun or
// runc, StepdConfig.OCIRuntime), run as root in the foreground, forked
// as any rank (process group, Pdeathsig, the task's cgroup), from a
// bundle the supervisor writes in the task directory — the user's
// config.json with the rank's command, environment, working directory
// and user (see container.go). The runtime forwards signals to the
// container; a SIGKILL of the runtime is followed by its `delete
// --force`, so the container never outlives the task.
//
// For a PMIx step (srun --mpi=pmix) it also runs the ranks' PMIx server
// (package pmix): up before the first rank forks, each rank's PMIx
// variables added to its environment, down once the ranks are gone. On
// the step's first node it serves the other nodes' fences on pmix.sock;
// on the others it reaches that socket through its agent's Unix socket
// (StepdConfig.AgentSocket), the one connection a supervisor opens
// beyond its task directory.
// A PMI-2 step (srun --mpi=pmi2) is served the same way by package pmi2:
// each rank gets its end of a socket pair as PMI_FD, and the fences
// travel through the same exchange.
//
// No process that runs as root — the supervisor, the task namespace
// helper, the OCI runtime — runs with the job's environment: the supervisor gets a fixed
// one from the agent, the helper gets the task's on a descriptor and
// applies it only at its final exec, as the user.
//
// The ranks are started with Pdeathsig SIGKILL from a goroutine locked to
// its OS thread for the life of the rank, so the leaders die with their
// supervisor, not with the agent. The supervisor fences its task by
// itself: it reads the agent's lease file every 100 ms and stops the task
// with cause "fenced" once the lease has ended (or cannot be read), and
// so does a SIGTERM to the supervisor.
//
// # What it must never touch
//
// The raft log, the FSM, the network (a PMIx step's supervisor talks to
// its own agent's socket, which relays), and any task but its own: a
// supervisor signals only the ranks it forked (and what is left in their
// groups and cgroup), and reports only through its task directory — the
// launch result on descriptor 3, the proc, output and exit records, its
// socket (and a --pty task's terminal socket). It never imports package exec and keeps no state beyond its
// one task: pending exits, acknowledgements and recovery are the
// agent's.
//
// # Contracts
//
// The command line (`shoal stepd [--detach] TASKDIR`), stepd.json, the
// socket's requests and replies and every record are package task's
// formats, shared with agents of other versions: an agent adopts the
// supervisors its predecessor started. The exit record is written once,
// after every process of the task is dead; the agent records a task as
// lost if the supervisor is gone without one.
package stepd
