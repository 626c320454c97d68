// Command shoal-slurm plays the Slurm commands (sbatch, srun, squeue,
// scontrol, sacct, ...: slurm.Commands) when invoked under their name, as
// the full shoal binary does, but links only the Slurm front-ends and the
// API client: none of the agent's packages (raft, gossip, metrics,
// plotting), whose package initialisation and size made every call of
// the full binary slower. Scripts call these commands thousands of times;
// install-shims and the agent's shim directory link them here when this
// binary sits beside shoal (slurm.ShimTarget).
//
// It also serves what an agent runs once per task when this binary sits
// beside shoal: the supervisor (stepd) of a task that serves no PMIx,
// and the exec shim and task namespace helper every rank starts through
// (package rankexec).
//
// Invoked under its own name it takes the command as its first word,
// like `shoal slurm`: shoal-slurm [--addr A] [--data-dir D] COMMAND ARGS...
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/shoal-sched/shoal/cmd/shoal/internal/shim"
	"github.com/shoal-sched/shoal/exec/rankexec"
	"github.com/shoal-sched/shoal/exec/stepd"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/slurm"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	// What an agent runs through this binary (never under a Slurm
	// command's name): before anything else, since it runs once per task
	// or rank.
	if _, slurmName := shim.Is(os.Args[0]); !slurmName {
		if code, ok := hidden(os.Args); ok {
			os.Exit(code)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args)
	stop()
	os.Exit(code)
}

// hidden runs the subcommands an agent hands to this binary, and reports
// whether argv was one: a rank's exec shim or task namespace helper
// (package rankexec), or a task's supervisor (stepd, for tasks that
// serve no PMIx: this binary links no libpmix).
func hidden(argv []string) (code int, ok bool) {
	if code, ok := rankexec.Main(argv); ok {
		return code, true
	}
	if len(argv) < 2 || argv[1] != task.StepdArg {
		return 0, false
	}
	// It may supervise only when it resolves users and groups as the
	// agent's binary does, through libc (NSS): built with cgo.
	if len(argv) == 3 && argv[2] == task.StepdProbe {
		if !withCgo {
			fmt.Fprintf(os.Stderr, "%s: built without cgo: a supervisor would resolve the job's groups from /etc/group only\n", slurm.ShimBinary)
			return 1, true
		}
		return 0, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return stepd.Main(ctx, argv[2:]), true
}

func run(ctx context.Context, argv []string) int {
	var t shim.Target
	name, ok := shim.Is(argv[0])
	args := argv[1:]
	if !ok {
		var err error
		if args, err = shim.TakeGlobalFlags(&t, args); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", slurm.ShimBinary, err)
			return 1
		}
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
			w, code := os.Stdout, 0
			if len(args) == 0 {
				w, code = os.Stderr, 1
			}
			fmt.Fprintf(w, "usage: %s [--addr ADDR] [--data-dir DIR] COMMAND [ARGS...]\nCOMMAND is one of %s; linked under a command's name, it plays that command.\n",
				slurm.ShimBinary, strings.Join(shim.Names, ", "))
			return code
		}
		if name, ok = shim.Is(args[0]); !ok {
			fmt.Fprintf(os.Stderr, "%s: %s: want one of %s\n", slurm.ShimBinary, args[0], strings.Join(shim.Names, ", "))
			return 1
		}
		args = args[1:]
	}
	return shim.Run(ctx, t.Client, name, args, version, os.Stdout, os.Stderr)
}
