package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/api"
)

// defaultDataDir is --data-dir's default: $SHOAL_DATA_DIR or ./shoal-data.
func defaultDataDir() string {
	if d := os.Getenv("SHOAL_DATA_DIR"); d != "" {
		return d
	}
	return "shoal-data"
}

// client finds the agent to talk to: --addr; else the Unix socket of the
// local agent's data dir when one exists; else $SHOAL_ADDR; else the
// default HTTP address.
func (g *globalFlags) client() (*api.Client, error) {
	addr := g.addr
	if addr == "" {
		dir := g.dataDir
		if dir == "" {
			dir = defaultDataDir()
		}
		sock := filepath.Join(dir, "shoal.sock")
		if st, err := os.Stat(sock); err == nil && st.Mode()&os.ModeSocket != 0 {
			addr = "unix://" + sock
		}
	}
	if addr == "" {
		addr = os.Getenv("SHOAL_ADDR")
	}
	if addr == "" {
		addr = "http://127.0.0.1:7070"
	}
	c, err := api.NewClient(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr: %w", err)
	}
	if !strings.HasPrefix(addr, "unix://") {
		// Over TCP the agent cannot see who we are; declare it (accepted
		// from loopback only).
		c = c.WithIdentity(currentIdentity())
	}
	return c, nil
}

func currentIdentity() api.Identity {
	id := api.Identity{UID: os.Getuid(), GID: os.Getgid(), User: strconv.Itoa(os.Getuid())}
	if u, err := user.Current(); err == nil {
		id.User = u.Username
	}
	return id
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
