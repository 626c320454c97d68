package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

func newPolicyCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show or set the queue policy: queue order, priority weights, fair-share accounts, QoS levels",
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the queue policy in force, as a policy file",
		Args:  cobra.NoArgs,
		RunE: showRun(g, (*api.Client).Policy, func(cmd *cobra.Command, p api.PolicyResponse) error {
			if !p.Set {
				fmt.Fprintln(cmd.ErrOrStderr(), "no policy set: these are the defaults")
			}
			return printJSON(p.Policy)
		}),
	}
	show.Flags().BoolVar(&g.json, "json", false, `print {"set": ..., "policy": ...}`)
	cmd.AddCommand(show)
	cmd.AddCommand(&cobra.Command{
		Use:   "set FILE",
		Short: "Replace the queue policy with a policy file's (root only)",
		Long: `Replaces the replicated queue policy with FILE's (JSON; see README,
"Priority and fair-share"). An agent started with --policy puts its own
file's policy back when it next becomes leader: keep the files in step.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := readPolicyFile(args[0])
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := c.SetPolicy(cmd.Context(), p.File()); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "Queue policy set")
			return nil
		},
	})
	return cmd
}

// readPolicyFile reads and checks a policy file; errors name the file and
// the field.
func readPolicyFile(path string) (cluster.Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return cluster.Policy{}, fmt.Errorf("--policy: %w", err)
	}
	p, err := cluster.ParsePolicyJSON(b)
	if err != nil {
		return cluster.Policy{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
