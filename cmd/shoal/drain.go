package main

import (
	"errors"
	"fmt"

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
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := c.Drain(cmd.Context(), args[0], reason); err != nil {
				return err
			}
			fmt.Printf("Node %s drained: %s\n", args[0], reason)
			return nil
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
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := c.Resume(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Printf("Node %s resumed\n", args[0])
			return nil
		},
	}
}
