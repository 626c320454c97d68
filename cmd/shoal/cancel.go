package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newCancelCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID [ID...]",
		Short: "Cancel jobs: every rank on every node is stopped (SIGTERM, then SIGKILL)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var failed error
			for _, a := range args {
				id, err := parseJobID(a)
				if err == nil {
					err = c.Cancel(cmd.Context(), id)
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "shoal: cancel %s: %v\n", a, err)
					failed = errors.New("some jobs were not cancelled")
				}
			}
			return failed
		},
	}
}
