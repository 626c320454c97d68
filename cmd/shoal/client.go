package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/shim"
	"github.com/spf13/cobra"
)

// defaultDataDir is --data-dir's default: $SHOAL_DATA_DIR or ./shoal-data.
func defaultDataDir() string { return shim.DefaultDataDir() }

// target is the agent the global flags name.
func (g *globalFlags) target() shim.Target {
	return shim.Target{Addr: g.addr, DataDir: g.dataDir, Token: g.token}
}

// client connects to the agent the global flags name (shim.Target.Client:
// --addr, the data dir's socket, $SHOAL_ADDR, the system socket).
func (g *globalFlags) client() (*api.Client, error) { return g.target().Client() }

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// actRun is the RunE of a command that changes something through the
// agent: act does it and says what it did, printed as a line.
func actRun(g *globalFlags, act func(ctx context.Context, c *api.Client, args []string) (string, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		done, err := act(cmd.Context(), c, args)
		if err != nil {
			return err
		}
		fmt.Println(done)
		return nil
	}
}

// showRun is the RunE of a command that shows what get fetches: as JSON
// with --json, else as show writes it.
func showRun[T any](g *globalFlags, get func(*api.Client, context.Context) (T, error), show func(cmd *cobra.Command, v T) error) func(*cobra.Command, []string) error {
	return showArgRun(g, func(string) (struct{}, error) { return struct{}{}, nil },
		func(c *api.Client, ctx context.Context, _ struct{}) (T, error) { return get(c, ctx) }, show)
}

// showCmd is a command of no arguments, use, that shows what get
// fetches: as JSON with --json, else as show writes it.
func showCmd[T any](g *globalFlags, use, short string, get func(*api.Client, context.Context) (T, error), show func(cmd *cobra.Command, v T) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs, RunE: showRun(g, get, show)}
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}

// showArgRun is showRun for a command whose argument, read by parse
// before anything is fetched, names what get fetches.
func showArgRun[A, T any](g *globalFlags, parse func(string) (A, error), get func(*api.Client, context.Context, A) (T, error), show func(cmd *cobra.Command, v T) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		var arg A
		if len(args) > 0 {
			var err error
			if arg, err = parse(args[0]); err != nil {
				return err
			}
		}
		c, err := g.client()
		if err != nil {
			return err
		}
		v, err := get(c, cmd.Context(), arg)
		if err != nil {
			return err
		}
		if g.json {
			return printJSON(v)
		}
		return show(cmd, v)
	}
}
