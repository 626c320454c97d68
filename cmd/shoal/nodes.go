package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
)

func newNodesCmd(g *globalFlags) *cobra.Command {
	return showCmd(g, "nodes", "List the cluster's nodes, their GPUs, switches and raft roles (like sinfo -N)", (*api.Client).Nodes, func(cmd *cobra.Command, nodes []api.Node) error {
		printNodes(os.Stdout, nodes)
		return nil
	})
}

func printNodes(w io.Writer, nodes []api.Node) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tGPUS\tFREE\tSWITCH\tPARENT\tRAFT\tADDRESS\tFEATURES\tREASON")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.State, n.GPUs, n.GPUsFree,
			dash(n.Switch), dash(n.SwitchParent), n.Raft, n.Address, dash(strings.Join(n.Features, ",")), n.Reason)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
