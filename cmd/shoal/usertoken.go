package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/user"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
)

func newTokenCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "User tokens for clients that reach an agent over the network (like scontrol token)"}
	var (
		userName string
		ttl      time.Duration
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Print a signed token for --user (root): SHOAL_TOKEN=T shoal --addr https://HOST:7070 ... acts as that user",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if userName == "" {
				return errors.New("--user: empty, want the user the token acts as")
			}
			if ttl <= 0 {
				return fmt.Errorf("--ttl %s: want more than 0", ttl)
			}
			u, err := user.Lookup(userName)
			if err != nil {
				return fmt.Errorf("--user %s: %w", userName, err)
			}
			uid, err1 := strconv.Atoi(u.Uid)
			gid, err2 := strconv.Atoi(u.Gid)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("--user %s: uid %q, gid %q: want numbers", userName, u.Uid, u.Gid)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			var out api.UserTokenResponse
			req := api.UserTokenRequest{User: u.Username, UID: uid, GID: gid, TTLS: int64(ttl / time.Second)}
			if _, err := c.Do(cmd.Context(), http.MethodPost, "/v1/tokens", req, &out); err != nil {
				return err
			}
			if g.json {
				return printJSON(out)
			}
			fmt.Printf("SHOAL_TOKEN=%s\n", out.Token)
			return nil
		},
	}
	create.Flags().StringVar(&userName, "user", "", "the user the token acts as")
	create.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token is valid (Slurm's lifespan=)")
	create.Flags().BoolVar(&g.json, "json", false, "print JSON (token, id, expiry)")
	revoke := &cobra.Command{
		Use:   "revoke TOKEN",
		Short: "Refuse a user token from now until it expires (root)",
		Args:  cobra.ExactArgs(1),
		RunE: actRun(g, func(ctx context.Context, c *api.Client, args []string) (string, error) {
			_, err := c.Do(ctx, http.MethodPost, "/v1/tokens/revoke", api.RevokeUserTokenRequest{Token: args[0]}, nil)
			return "Revoked.", err
		}),
	}
	cmd.AddCommand(create, revoke)
	return cmd
}
