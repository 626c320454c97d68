// Command shoal is Shoal's binary: the agent every node runs, the local
// dev cluster, and the CLI that talks to an agent. It plays the Slurm
// commands too; the small shoal-slurm (cmd/shoal/shim) plays only those,
// and starts faster, for the links that scripts call.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/exec/rankexec"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	// The task namespace helper and the exec shim exec a rank's program at
	// once: no signal handlers, no flag parsing of the rank's argv.
	if code, ok := rankexec.Main(os.Args); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if code, ok := runStepd(ctx); ok {
		stop()
		os.Exit(code)
	}
	if name, ok := isShim(os.Args[0]); ok {
		code := runShim(ctx, &globalFlags{}, name, os.Args[1:])
		stop()
		os.Exit(code)
	}
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		var se *api.StatusError
		var ec exitcode.Code
		if errors.As(err, &ec) {
			os.Exit(int(ec))
		}
		if errors.As(err, &se) {
			fmt.Fprintf(os.Stderr, "shoal: %s\n", se.Message)
		} else {
			fmt.Fprintf(os.Stderr, "shoal: %v\n", err)
		}
		os.Exit(1)
	}
}

// globalFlags are the flags every CLI subcommand shares.
type globalFlags struct {
	addr    string
	dataDir string
	json    bool
	// token is a user token for a remote agent ($SHOAL_TOKEN); for
	// `shoal agent`, the join token.
	token string
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "shoal",
		Short:         "Shoal: a peer-to-peer GPU cluster scheduler",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.addr, "addr", "", "agent to talk to: unix:///path/shoal.sock, or https://host:port with $SHOAL_CA_CERT and a user token (default: the socket in --data-dir, else $SHOAL_ADDR, else ./shoal-data/shoal.sock or /run/shoal/shoal.sock)")
	root.PersistentFlags().StringVar(&g.token, "token", "", "a user token from 'shoal token create', sent to an agent over https (default $SHOAL_TOKEN); for 'shoal agent', a join token from 'shoal join-token create'")
	root.PersistentFlags().StringVar(&g.dataDir, "data-dir", "", "the local agent's data dir (default $SHOAL_DATA_DIR or ./shoal-data)")
	root.AddCommand(
		newAgentCmd(g),
		newDevCmd(g),
		newSubmitCmd(g),
		newQueueCmd(g),
		newJobCmd(g),
		newReportCmd(g),
		newLogsCmd(g),
		newCancelCmd(g),
		newNodesCmd(g),
		newTopologyCmd(g),
		newTLSCmd(g),
		newJoinTokenCmd(g),
		newTokenCmd(g),
		newKeyringCmd(g),
		newNodeCmd(g),
		newLeaveCmd(g),
		newMembersCmd(g),
		newLeaderCmd(g),
		newBatchCmd(g),
		newRunCmd(g),
		newStepCmd(g),
		newSlurmCmd(g),
		newInstallShimsCmd(),
		newDrainCmd(g),
		newResumeCmd(g),
		newStatusCmd(g),
		newPriorityCmd(g),
		newPolicyCmd(g),
		newBenchCmd(),
		newSimCmd(),
		newVersionCmd(),
		newChaosCmd(),
	)
	return root
}
