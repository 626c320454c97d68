package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
)

func newJoinTokenCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "join-token", Short: "Tokens that let new nodes join the cluster"}
	var (
		ttl  time.Duration
		uses int
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Print a join token (root): 'shoal agent --join ADDR --token T' gets a node its certificate with it",
		Long: `Creates a join token valid for --ttl and --uses nodes, and prints it. The
token names the cluster CA's fingerprint (a joining node trusts only a
server that proves it holds a certificate of that CA) and API addresses to
ask. Only a hash of its secret is kept by the cluster: the token is shown
once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl <= 0 {
				return fmt.Errorf("--ttl %s: want more than 0", ttl)
			}
			if uses < 1 {
				return fmt.Errorf("--uses %d: want 1 or more", uses)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			var out api.JoinTokenResponse
			if _, err := c.Do(cmd.Context(), http.MethodPost, "/v1/join-tokens", api.JoinTokenRequest{TTLS: int64(ttl / time.Second), Uses: uses}, &out); err != nil {
				return err
			}
			if g.json {
				return printJSON(out)
			}
			fmt.Println(out.Token)
			return nil
		},
	}
	create.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the token is valid (at most 168h)")
	create.Flags().IntVar(&uses, "uses", 1, "how many nodes may join with it")
	create.Flags().BoolVar(&g.json, "json", false, "print JSON (token, expiry, uses)")
	cmd.AddCommand(create)
	return cmd
}

func newNodeCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "node", Short: "Act on one node: revoke its certificate"}
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Refuse node NAME's certificates from now on (root); it leaves raft, and its jobs are requeued when its lease ends",
		Args:  cobra.ExactArgs(1),
		RunE: actRun(g, func(ctx context.Context, c *api.Client, args []string) (string, error) {
			_, err := c.Do(ctx, http.MethodPost, "/v1/nodes/"+url.PathEscape(args[0])+"/revoke", nil, nil)
			return fmt.Sprintf("Revoked node %s's certificates.", args[0]), err
		}),
	}
	cmd.AddCommand(revoke)
	return cmd
}
