package main

import (
	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
)

func newRunCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "run [srun options] COMMAND [ARGS...]",
		Short: "Allocate, run a command on every node, stream its output, release: the interactive path (srun outside a job)",
		Long: `Takes srun's options: allocates the nodes, runs the command as
--ntasks-per-node ranks on each, streams their output (--label prefixes
ranks) and exits with the job's exit code. While the job waits, a line says
why it is still pending. Ctrl-C cancels the job.`,
		DisableFlagParsing: true,
		RunE: ownOptions(g, func(cmd *cobra.Command, args []string) error {
			// srun outside a job allocates one of its own, so a command run
			// from inside a job's shell still gets its own allocation here.
			t := cmd.Context()
			opts, rest, err := slurmcli.ParseSrunOutside(args)
			if err != nil {
				return err
			}
			connect, err := slurmcli.AsCaller(g.client, opts)
			if err != nil {
				return err
			}
			code, err := slurmcli.RunOwnJob(t, connect, opts, rest, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if code != 0 {
				return exitcode.Code(code)
			}
			return nil
		}),
	}
}
