package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/shoal-sched/shoal/api"
	"github.com/spf13/cobra"
)

func newDrainCmd(g *globalFlags) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "drain NODE --reason WHY",
		Short: "Keep new jobs off a node; jobs running there finish (root only)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason == "" {
				return errors.New("--reason: empty, want why the node is drained (it shows in shoal nodes)")
			}
			return actRun(g, func(ctx context.Context, c *api.Client, args []string) (string, error) {
				return fmt.Sprintf("Node %s drained: %s", args[0], reason), c.Drain(ctx, args[0], reason)
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the node is drained (required)")
	return cmd
}

func newResumeCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "resume NODE",
		Short: "Let jobs land on a drained node again (root only)",
		Args:  cobra.ExactArgs(1),
		RunE: actRun(g, func(ctx context.Context, c *api.Client, args []string) (string, error) {
			return fmt.Sprintf("Node %s resumed", args[0]), c.Resume(ctx, args[0])
		}),
	}
}
