package stepd

import (
	osexec "os/exec"

	"github.com/shoal-sched/shoal/exec/rankexec"
)

// SLURM_TASK_PID is a task's own pid, which only the task knows: Go
// cannot run code between fork and exec, so a rank that needs it is
// forked into a tiny exec shim, the hidden subcommand TaskExecCommand
// (package rankexec, served by shoal-slurm and shoal), which adds its
// pid to the environment and execs the rank's program in place (the
// pid, process group, cgroup, ids and parent-death signal the fork gave
// it stay the rank's). The task namespace helper, when ranks go through
// it, does the same at its final exec.

// TaskExecCommand is the hidden subcommand that runs the exec shim
// (rankexec.ExecMain).
const TaskExecCommand = rankexec.ExecCommand

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
