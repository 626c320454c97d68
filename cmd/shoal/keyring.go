package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/pki"
)

func newKeyringCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keyring",
		Short: "The gossip encryption keyring (root): rotate it with generate, install, use, remove",
		Long: `Gossip is encrypted with the cluster's keyring, replicated through raft:
messages go out with the primary key and are accepted with any. Rotate
with no downtime in three steps, letting each reach every node:

  K=$(shoal keyring generate)
  shoal keyring install $K      # every node accepts K
  shoal keyring use $K          # every node sends with K
  shoal keyring remove OLDKEY   # the old key is refused from now on`,
	}
	list := showCmd(g, "list", "Print the cluster's keyring (primary first) and this agent's", func(c *api.Client, ctx context.Context) (api.Keyring, error) {
		var out api.Keyring
		_, err := c.Do(ctx, http.MethodGet, "/v1/keyring", nil, &out)
		return out, err
	}, func(_ *cobra.Command, out api.Keyring) error {
		for i, k := range out.Cluster {
			role := "installed"
			if i == 0 {
				role = "primary"
			}
			local := "not yet here"
			for _, l := range out.Local {
				if l == k {
					local = "here"
				}
			}
			fmt.Printf("%s  %-9s  %s\n", k, role, local)
		}
		return nil
	})
	generate := &cobra.Command{
		Use:   "generate",
		Short: "Print a new random gossip key (base64 of 32 bytes)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			k, err := pki.NewGossipKey()
			if err != nil {
				return err
			}
			fmt.Println(pki.EncodeGossipKey(k))
			return nil
		},
	}
	cmd.AddCommand(list, generate)
	for _, op := range []string{"install", "use", "remove"} {
		cmd.AddCommand(&cobra.Command{
			Use:   op + " KEY",
			Short: map[string]string{"install": "Add KEY to every node's keyring", "use": "Make KEY (installed) the primary", "remove": "Remove KEY (not the primary) from every node's keyring"}[op],
			Args:  cobra.ExactArgs(1),
			RunE: actRun(g, func(ctx context.Context, c *api.Client, args []string) (string, error) {
				var out api.Keyring
				_, err := c.Do(ctx, http.MethodPost, "/v1/keyring", api.KeyringRequest{Op: op, Key: args[0]}, &out)
				return fmt.Sprintf("%s: the cluster's keyring now has %d keys", op, len(out.Cluster)), err
			}),
		})
	}
	return cmd
}
