package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/pki"
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
// default HTTP address. Over the socket the agent learns who we are from
// the kernel; over TCP nothing we could declare would be believed, so
// only what needs no identity (status, leader) works there.
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
		// A packaged agent (contrib/systemd) keeps its socket in /run.
		addr = "unix://" + filepath.Join(defaultDataDir(), "shoal.sock")
		if st, err := os.Stat(systemSocket); err == nil && st.Mode()&os.ModeSocket != 0 {
			addr = "unix://" + systemSocket
		}
	}
	var tlsConf *tls.Config
	if strings.HasPrefix(addr, "https://") {
		var err error
		if tlsConf, err = userTLS(); err != nil {
			return nil, err
		}
	}
	c, err := api.NewTLSClient(addr, tlsConf)
	if err != nil {
		return nil, fmt.Errorf("--addr: %w", err)
	}
	token := g.token
	if token == "" {
		token = os.Getenv("SHOAL_TOKEN")
	}
	if token != "" && tlsConf != nil {
		// Only over TLS: a token sent in the clear is anyone's.
		c = c.WithToken(token)
	}
	return c, nil
}

// systemSocket is where the systemd unit's agent listens.
const systemSocket = "/run/shoal/shoal.sock"

// userTLS is how the CLI verifies an agent's HTTPS API: against the
// cluster CA in $SHOAL_CA_CERT, else the local data dir's.
func userTLS() (*tls.Config, error) {
	path := os.Getenv("SHOAL_CA_CERT")
	if path == "" {
		path = pki.DefaultPaths(defaultDataDir()).CA
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("https needs the cluster CA certificate: set $SHOAL_CA_CERT: %w", err)
	}
	certs, err := pki.ParseCerts(data)
	if err != nil {
		return nil, fmt.Errorf("$SHOAL_CA_CERT %s: %w", path, err)
	}
	roots := x509.NewCertPool()
	for _, c := range certs {
		roots.AddCert(c)
	}
	return pki.UserClientConfig(roots), nil
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
