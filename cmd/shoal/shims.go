package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/shim"
	"github.com/shoal-sched/shoal/slurm"
)

// shimNames are the Slurm commands this binary answers to when invoked
// under their name: slurm.Commands.
var shimNames = shim.Names

// isShim reports whether argv0 names a Slurm command this binary plays.
func isShim(argv0 string) (string, bool) { return shim.Is(argv0) }

// runShim runs a Slurm command with its own argument syntax and returns
// the process exit code.
func runShim(ctx context.Context, g *globalFlags, name string, args []string) int {
	return shim.Run(ctx, g.client, name, args, version, os.Stdout, os.Stderr)
}

// InstallShims links each Slurm command name in dir to target: the small
// shoal-slurm beside this binary when it is installed
// (slurm.ShimTarget), else this binary.
func InstallShims(dir, target string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("shim dir %s: %w", dir, err)
	}
	for _, n := range shimNames {
		link := filepath.Join(dir, n)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("link %s: %w", link, err)
		}
	}
	return nil
}

func newInstallShimsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "install-shims DIR",
		Short: "Link the Slurm commands (" + strings.Join(shimNames, ", ") + ") in DIR to " + slurm.ShimBinary + " beside this binary, else to this binary",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if self, err = filepath.EvalSymlinks(self); err != nil {
				return err
			}
			target := slurm.ShimTarget(self)
			if err := InstallShims(args[0], target); err != nil {
				return err
			}
			fmt.Printf("Linked %s in %s to %s\n", strings.Join(shimNames, ", "), args[0], target)
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
