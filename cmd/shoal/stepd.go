package main

import (
	"context"
	"os"

	"github.com/shoal-sched/shoal/exec/stepd"
	"github.com/shoal-sched/shoal/exec/task"
)

// runStepd runs `shoal stepd [--detach] TASKDIR`, the hidden subcommand
// the agent's executor starts as each task's supervisor (stepd.Main),
// when os.Args asks for it. It is dispatched before the command tree: its
// arguments are the executor's, never a user's, and it is not listed in
// the help. ctx ending (SIGTERM) makes the supervisor fence its task.
func runStepd(ctx context.Context) (code int, ok bool) {
	if len(os.Args) < 2 || os.Args[1] != task.StepdArg {
		return 0, false
	}
	return stepd.Main(ctx, os.Args[2:]), true
}
