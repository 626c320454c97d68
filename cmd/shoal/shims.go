package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
	"github.com/shoal-sched/shoal/slurm"
)

// shimNames are the Slurm commands this binary answers to when invoked
// under their name (a link made by install-shims, or the agent's shim
// directory on a batch script's PATH): slurm.Commands.
var shimNames = func() []string {
	names := make([]string, len(slurm.Commands))
	for i, c := range slurm.Commands {
		names[i] = string(c)
	}
	return names
}()

// isShim reports whether argv0 names a Slurm command this binary plays.
func isShim(argv0 string) (string, bool) {
	base := filepath.Base(argv0)
	if slices.Contains(shimNames, base) {
		return base, true
	}
	return "", false
}

// runShim runs a Slurm command with its own argument syntax and returns
// the process exit code.
func runShim(ctx context.Context, g *globalFlags, name string, args []string) int {
	var code int
	var err error
	switch name {
	case "sbatch":
		err = slurmcli.Sbatch(ctx, g.client, args, os.Stdout)
		var ec exitcode.Code
		switch {
		case errors.As(err, &ec): // sbatch --wait: the job's exit code
			code = int(ec)
		case err != nil:
			code = 1
		}
	case "srun":
		code, err = slurmcli.Srun(ctx, g.client, args, os.Stdout, os.Stderr)
	case "salloc":
		code, err = slurmcli.Salloc(ctx, g.client, args, os.Stderr)
	case "scontrol":
		err = slurmcli.Scontrol(ctx, g.client, args, os.Stdout)
		if err != nil {
			code = 1
		}
	case "squeue":
		if err = slurmcli.Squeue(ctx, g.client, args, os.Stdout, os.Stderr); err != nil {
			code = 1
		}
	case "scancel":
		if err = slurmcli.Scancel(ctx, g.client, args, os.Stderr); err != nil {
			code = 1
		}
	case "sinfo":
		if err = slurmcli.Sinfo(ctx, g.client, args, os.Stdout, os.Stderr); err != nil {
			code = 1
		}
	case "sacct":
		if err = slurmcli.Sacct(ctx, g.client, args, os.Stdout, os.Stderr); err != nil {
			code = 1
		}
	case "sprio":
		if err = slurmcli.Sprio(ctx, g.client, args, os.Stdout, os.Stderr); err != nil {
			code = 1
		}
	case "sacctmgr":
		if err = slurmcli.Sacctmgr(ctx, g.client, args, os.Stdout, os.Stderr); err != nil {
			code = 1
		}
	case "sshare":
		if err = slurmcli.Sshare(ctx, g.client, args, os.Stdout, os.Stderr); err != nil {
			code = 1
		}
	case "sreport":
		if err = slurmcli.Sreport(ctx, g.client, args, os.Stdout, os.Stderr); err != nil {
			code = 1
		}
	default:
		err, code = fmt.Errorf("unknown command %q", name), 1
	}
	if hr := (*slurm.HelpRequest)(nil); errors.As(err, &hr) {
		// --help, --usage, --version: answered, and nothing runs.
		fmt.Fprint(os.Stdout, hr.Text(version))
		return 0
	}
	if msg := exitcode.Message(err); msg != "" {
		fmt.Fprintf(os.Stderr, "%s: error: %s\n", name, msg)
	}
	return code
}

// InstallShims links each Slurm command name in dir to this binary.
func InstallShims(dir, self string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("shim dir %s: %w", dir, err)
	}
	for _, n := range shimNames {
		link := filepath.Join(dir, n)
		if cur, err := os.Readlink(link); err == nil && cur == self {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(self, link); err != nil {
			return fmt.Errorf("link %s: %w", link, err)
		}
	}
	return nil
}

func newInstallShimsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "install-shims DIR",
		Short: "Link the Slurm commands (" + strings.Join(shimNames, ", ") + ") in DIR to this binary",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if self, err = filepath.EvalSymlinks(self); err != nil {
				return err
			}
			if err := InstallShims(args[0], self); err != nil {
				return err
			}
			fmt.Printf("Linked %s in %s to %s\n", strings.Join(shimNames, ", "), args[0], self)
			return nil
		},
	}
}

func newSlurmCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:                "slurm COMMAND [ARGS...]",
		Short:              "Run a Slurm command (" + strings.Join(shimNames, ", ") + ") with its own options",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
				return cmd.Help()
			}
			args, err := takeGlobalFlags(g, args)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				return cmd.Help()
			}
			name, ok := isShim(args[0])
			if !ok {
				return fmt.Errorf("slurm %s: want one of %s", args[0], strings.Join(shimNames, ", "))
			}
			if code := runShim(cmd.Context(), g, name, args[1:]); code != 0 {
				return exitcode.Code(code)
			}
			return nil
		},
	}
}
