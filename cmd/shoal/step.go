package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
)

func newStepCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "step [srun options] [--] COMMAND [ARGS...]",
		Short: "Run a step on the current job's allocation (srun inside a batch job)",
		Long: `Inside a job (SHOAL_JOB_ID or SLURM_JOB_ID set, as in a batch script),
runs COMMAND as a step on the job's allocation, exactly as srun does there:
one task per node by default (-N, --ntasks-per-node, --ntasks,
--gpus-per-task change it), the tasks' output streamed back (--label
prefixes ranks), the worst task exit code returned; Ctrl-C stops the step.
Outside a job it refuses to run: use shoal run for a job of its own.`,
		DisableFlagParsing: true,
		RunE: ownOptions(g, func(cmd *cobra.Command, args []string) error {
			if os.Getenv("SHOAL_JOB_ID") == "" && os.Getenv("SLURM_JOB_ID") == "" {
				return errors.New("shoal step: not inside a job (SHOAL_JOB_ID and SLURM_JOB_ID are unset); use shoal run to allocate one")
			}
			code, err := slurmcli.Srun(cmd.Context(), g.client, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
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
