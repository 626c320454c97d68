package main

import (
	"encoding/json"
	"os"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/shim"
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
