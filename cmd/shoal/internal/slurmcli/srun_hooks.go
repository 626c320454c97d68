package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"

	"github.com/shoal-sched/shoal/slurm"
)

// taskHookScript runs a task's command between srun's --task-prolog and
// --task-epilog, as slurmstepd does: the prolog runs in the task's
// environment, and each line it prints is read as Slurm reads it
// ("export NAME=VALUE" sets a variable for the task, "unset NAME" removes
// one, "print TEXT" writes TEXT to the task's stdout); the epilog runs
// once the command has ended, in the environment the task started with,
// and the task keeps the command's exit code. $1 and $2 are the prolog
// and epilog ("" for none), the rest the command.
const taskHookScript = `p=$1 e=$2
shift 2
run() {
	if [ -n "$p" ]; then
		out=$("$p")
		while IFS= read -r line; do
			case $line in
			"export "*=*) kv=${line#export }; export "${kv%%=*}=${kv#*=}" ;;
			"unset "*) unset -- "${line#unset }" 2>/dev/null ;;
			"print "*) printf '%s\n' "${line#print }" ;;
			esac
		done <<EOF
$out
EOF
	fi
	exec "$@"
}
if [ -z "$e" ]; then run "$@"; fi
(run "$@")
rc=$?
"$e"
exit $rc
`

// withTaskHooks is the command every task runs for srun's
// --task-prolog/--task-epilog: command itself without them.
func withTaskHooks(opts slurm.Options, command []string) []string {
	p, e := hookPath(opts.TaskProlog), hookPath(opts.TaskEpilog)
	if p == "" && e == "" {
		return command
	}
	return append([]string{"/bin/sh", "-c", taskHookScript, "shoal-task-hooks", p, e}, command...)
}

// hookPath is a hook option's program, "" for none.
func hookPath(v string) string {
	if v == "none" {
		return ""
	}
	return v
}

// runSrunHook runs srun's --prolog or --epilog here, as Slurm's srun does:
// the program gets the step's command as its arguments. A prolog that
// fails aborts the step with Slurm's message.
func runSrunHook(ctx context.Context, which, prog string, command []string, stderr io.Writer) error {
	if prog = hookPath(prog); prog == "" {
		return nil
	}
	cmd := osexec.CommandContext(ctx, prog, command...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, stderr
	err := cmd.Run()
	if xe := (*osexec.ExitError)(nil); errors.As(err, &xe) {
		//lint:ignore ST1005 Slurm's srun prints these words, and scripts match them
		return fmt.Errorf("srun %s failed rc = %d. Aborting step.", which, xe.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("srun %s: %w", which, err)
	}
	return nil
}
