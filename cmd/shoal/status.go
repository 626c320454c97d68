package main

import (
	"fmt"

	"github.com/shoal-sched/shoal/api"
	"github.com/spf13/cobra"
)

func newStatusCmd(g *globalFlags) *cobra.Command {
	return showCmd(g, "status", "Show this agent's raft state, applied index and state hash", (*api.Client).Status, func(cmd *cobra.Command, st api.Status) error {
		fmt.Printf("Name=%s Version=%s RaftState=%s Leader=%s\n", st.Name, st.Version, st.RaftState, orNone(st.Leader))
		fmt.Printf("   AppliedIndex=%d Nodes=%d Jobs=%d\n", st.AppliedIndex, st.Nodes, st.Jobs)
		fmt.Printf("   StateHash=%s@%d\n", st.StateHash, st.HashIndex)
		switch st.Security {
		case "insecure":
			fmt.Printf("   Security=INSECURE (--insecure: no TLS, no gossip encryption; anyone who reaches its ports can act as any node or user)\n")
		default:
			fmt.Printf("   Security=%s CertExpires=%s\n", st.Security, st.CertExpires)
		}
		if st.Diverged != "" {
			fmt.Printf("   Diverged=%s\n", st.Diverged)
		}
		return nil
	})
}
