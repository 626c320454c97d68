package main

import (
	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/cmd/shoal/internal/shim"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
)

func newBatchCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "batch [sbatch options] SCRIPT [ARGS...]",
		Short: "Submit a batch script, as sbatch does (#SBATCH directives, then command-line options)",
		Long: `Submits a batch script: its #SBATCH directives, overridden by the options
given here, ask for the allocation; the script runs on its first node with
the Slurm environment, its output in slurm-%j.out (--output/--error), and
launches steps on every node with srun. Takes sbatch's options.`,
		DisableFlagParsing: true, // sbatch's own option table parses them
		RunE: ownOptions(g, func(cmd *cobra.Command, args []string) error {
			return slurmcli.Sbatch(cmd.Context(), g.client, args, cmd.OutOrStdout())
		}),
	}
}

// ownOptions is the RunE of a command that parses its own options
// (DisableFlagParsing): -h or --help first shows the command's help, and
// run gets the arguments without shoal's global flags (takeGlobalFlags).
func ownOptions(g *globalFlags, run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return cmd.Help()
		}
		args, err := takeGlobalFlags(g, args)
		if err != nil {
			return err
		}
		return run(cmd, args)
	}
}

// takeGlobalFlags removes shoal's own --addr and --data-dir from the front
// of args (cobra passes them through to a command that parses its own
// flags) and sets them on g.
func takeGlobalFlags(g *globalFlags, args []string) ([]string, error) {
	t := g.target()
	args, err := shim.TakeGlobalFlags(&t, args)
	g.addr, g.dataDir = t.Addr, t.DataDir
	return args, err
}
