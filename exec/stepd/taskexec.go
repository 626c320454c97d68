package stepd

import (
	"fmt"
	"os"
	osexec "os/exec"
	"syscall"
)

// SLURM_TASK_PID is a task's own pid, which only the task knows: Go
// cannot run code between fork and exec, so a rank that needs it is
// forked into a tiny exec shim, the shoal binary's hidden subcommand
// TaskExecCommand, which adds its pid to the environment and execs the
// rank's program in place (the pid, process group, cgroup, ids and
// parent-death signal the fork gave it stay the rank's). The task
// namespace helper, when ranks go through it, does the same at its
// final exec.

// TaskExecCommand is the hidden subcommand of the shoal binary that runs
// TaskExecMain.
const TaskExecCommand = "__task-exec"

// viaTaskExec makes cmd, a rank's command as the supervisor builds it,
// start through the exec shim shim (exec.Config.TaskExec): argv becomes
// shim... -- PATH ARGV..., with cmd's environment, ids and attributes
// unchanged. With shim empty it leaves cmd alone.
func viaTaskExec(cmd *osexec.Cmd, shim []string) {
	if len(shim) == 0 {
		return
	}
	args := append(append(append([]string{}, shim...), "--", cmd.Path), cmd.Args...)
	cmd.Path, cmd.Args = shim[0], args
}

// TaskExecMain is the exec shim: args are "--", the program's path and
// its argv (argv[0] first). It execs the program with this process's
// environment plus SLURM_TASK_PID, this pid, and returns only on
// failure, with the code a shell would give (126, 127) after a message
// on stderr, which is the rank's.
//
// With detachUnifiedFlag first, it runs an OCI runtime (see
// container.go): started in a mount namespace of its own, it first
// detaches a hybrid host's cgroup v2 mount there, which crun refuses.
func TaskExecMain(args []string) int {
	if len(args) > 0 && args[0] == detachUnifiedFlag {
		if err := detachHybridUnified(); err != nil {
			fmt.Fprintf(os.Stderr, "shoal: task exec: %v\n", err)
			return 126
		}
		args = args[1:]
	}
	if len(args) < 3 || args[0] != "--" {
		fmt.Fprintf(os.Stderr, "shoal: task exec: want -- PATH ARGV0 [ARGS...], got %q\n", args)
		return 1
	}
	err := syscall.Exec(args[1], args[2:], withTaskPID(os.Environ(), os.Getpid()))
	fmt.Fprintf(os.Stderr, "shoal: task exec: %s: %v\n", args[1], err)
	if err == syscall.ENOENT {
		return 127
	}
	return 126
}
