package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
)

// newLeaveCmd is `shoal leave`: the local agent stops gracefully, as on
// SIGTERM (it hands leadership over, stops or drains its jobs, and leaves
// the cluster), and the command waits until it has.
func newLeaveCmd(g *globalFlags) *cobra.Command {
	var (
		drain   time.Duration
		noWait  bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "leave",
		Short: "Make the local agent leave the cluster gracefully (as on SIGTERM), then wait until it has stopped",
		Example: `  shoal leave                   # stop now: running jobs are requeued
  shoal leave --drain 1h        # drain first: running jobs may finish for up to an hour`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var req api.LeaveRequest
			if cmd.Flags().Changed("drain") {
				s := int64(drain / time.Second)
				req.DrainWaitS = &s
			}
			var res api.LeaveResponse
			if _, err := c.Do(cmd.Context(), http.MethodPost, "/v1/agent/leave", req, &res); err != nil {
				return err
			}
			fmt.Printf("agent %s is leaving\n", res.Node)
			if noWait {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), drain+timeout)
			defer cancel()
			// Through the Unix socket the agent is on this host: it stops
			// answering before it has closed its tasks, raft and data dir,
			// so wait for its process to exit too.
			local := c.Base() == "http://unix" && res.PID > 0
			for {
				// The agent answers until it has stopped.
				rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := c.Status(rctx)
				rcancel()
				if err != nil && !errors.As(err, new(*api.StatusError)) && (!local || !processAlive(res.PID)) {
					fmt.Printf("agent %s has stopped\n", res.Node)
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("agent %s has not stopped after %s", res.Node, drain+timeout)
				case <-time.After(200 * time.Millisecond):
				}
			}
		},
	}
	f := cmd.Flags()
	f.DurationVar(&drain, "drain", 0, "drain the node first and let its jobs run for up to this long (default: the agent's --drain-on-stop)")
	f.BoolVar(&noWait, "no-wait", false, "return once the agent has accepted, without waiting for it to stop")
	f.DurationVar(&timeout, "timeout", time.Minute, "how long to wait, beyond --drain, for the agent to stop")
	return cmd
}
