package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/shoal-sched/shoal/api"
	"github.com/spf13/cobra"
)

func newMembersCmd(g *globalFlags) *cobra.Command {
	return showCmd(g, "members", "List the gossip members this agent sees, with their status", (*api.Client).Members, func(cmd *cobra.Command, ms []api.Member) error {
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tADDRESS\tSTATUS\tAPI\tGPUS\tSWITCH\tVERSION")
		for _, m := range ms {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.Name, m.Address, m.Status, m.APIAddr, m.GPUs, dash(m.Switch), m.Version)
		}
		return tw.Flush()
	})
}

func newLeaderCmd(g *globalFlags) *cobra.Command {
	return showCmd(g, "leader", "Show the current raft leader", (*api.Client).Leader, func(cmd *cobra.Command, l api.Leader) error {
		fmt.Printf("%s %s\n", l.Name, l.Address)
		return nil
	})
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Shoal's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Printf("shoal %s\n", version)
		},
	}
}
