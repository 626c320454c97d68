package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/pki"
)

// Security settings of an agent, part of Config.
type Security struct {
	// TLS is where the node's CA, certificate, key and gossip key are;
	// empty fields default to DataDir/tls (pki.DefaultPaths).
	TLS pki.Paths
	// Insecure (--insecure) runs with no TLS and no gossip encryption:
	// anyone who reaches the agent's ports can act as any node and any
	// user. Only for trying Shoal out on a network you control.
	Insecure bool
	// ClusterName names the CA a first node creates.
	ClusterName string
	// CertLifetime (--cert-lifetime) is how long the certificates this
	// node signs as leader (joins, renewals) are valid; 0 means
	// pki.DefaultNodeLifetime.
	CertLifetime time.Duration
	// JoinToken (--token) is a join token ('shoal join-token create'): a
	// node without a certificate uses it to get one from the cluster.
	JoinToken string
}

// security is what an agent proves itself with and checks others
// against; nil fields in insecure mode.
type security struct {
	bundle *pki.Bundle
	// gossipKeys is the keyring this node started with, the primary first.
	gossipKeys [][]byte
}

// errNoCertificate explains what a node without TLS material can do.
var errNoCertificate = errors.New("no node certificate")

// setupSecurity loads the node's TLS material or, on a first node that
// joins nobody, creates the cluster CA, this node's certificate and the
// gossip key in the data dir. hasRaftState says whether the node was
// ever part of a cluster: such a node never mints a new CA, which would
// cut it off from the cluster it belonged to.
func setupSecurity(ctx context.Context, cfg *Config, hasRaftState bool, log *slog.Logger) (*security, error) {
	if cfg.Insecure {
		log.Warn("INSECURE: --insecure: no TLS and no gossip encryption; anyone who reaches this agent's ports can act as any node and any user",
			"bind", cfg.BindAddr, "reachable_beyond_this_host", cfg.bindsBeyondLoopback())
		return &security{}, nil
	}
	p := cfg.tlsPaths()
	if !p.HasNode() && cfg.JoinToken != "" {
		if err := joinWithToken(ctx, cfg, p, log); err != nil {
			return nil, err
		}
	}
	if !p.HasNode() {
		if len(cfg.Join) > 0 || hasRaftState {
			return nil, fmt.Errorf("%w in %s (node.pem, node-key.pem and ca.pem): a node that joins a cluster needs one signed by the cluster's CA: join with --token T from 'shoal join-token create' on any node; or create one on the node that has the CA with 'shoal tls cert create --name %s --ip %s' and copy the folder here; or give --tls-ca, --tls-cert and --tls-key; or --insecure to run without TLS",
				errNoCertificate, p.Cert, cfg.Name, cfg.AdvertiseAddr)
		}
		if err := initFirstNode(cfg, p, log); err != nil {
			return nil, err
		}
	}
	b, err := pki.LoadBundle(p)
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	if b.Name != cfg.Name {
		return nil, fmt.Errorf("TLS: certificate %s names node %s, but this node is --name %s: the names must match (raft and gossip identify the node by it)", p.Cert, b.Name, cfg.Name)
	}
	if left := time.Until(b.NotAfter()); left <= 0 {
		return nil, fmt.Errorf("TLS: certificate %s expired at %s", p.Cert, b.NotAfter().Format(time.RFC3339))
	}
	keys, err := pki.LoadGossipKeys(p.GossipKey)
	if err != nil {
		return nil, fmt.Errorf("gossip encryption: %w (it comes with the node's certificate: 'shoal tls cert create' writes it beside node.pem)", err)
	}
	log.Info("TLS on: raft and node-to-node traffic are mutual TLS, the HTTP API on TCP is TLS, gossip is encrypted",
		"ca", p.CA, "cert", p.Cert, "expires", b.NotAfter().Format(time.RFC3339), "ca_fingerprint", b.CA.Fingerprint())
	return &security{bundle: b, gossipKeys: keys}, nil
}

// initFirstNode creates the cluster's CA (unless the data dir has one),
// this node's certificate and the gossip key.
func initFirstNode(cfg *Config, p pki.Paths, log *slog.Logger) error {
	if _, err := InitTLS(p, cfg.ClusterName, cfg.Name, cfg.AdvertiseAddr, time.Now()); err != nil {
		return err
	}
	log.Info("created the cluster CA, this node's certificate and the gossip key; certify other nodes with 'shoal tls cert create' on this node",
		"dir", filepath.Dir(p.CA), "ca_key", p.CAKey)
	return nil
}

// InitTLS creates what a cluster's first node holds: the CA (kept if one
// is there already), the node's certificate for name (with the IP it
// advertises and loopback) and the gossip key (kept if there). It is
// `shoal tls init` and what a first agent does on a fresh data dir.
func InitTLS(p pki.Paths, clusterName, name, advertise string, now time.Time) (*pki.Bundle, error) {
	if clusterName == "" {
		clusterName = "shoal"
	}
	var ca *pki.CA
	var err error
	if _, statErr := os.Stat(p.CA); statErr == nil {
		if ca, err = pki.LoadCA(p); err != nil {
			return nil, err
		}
		if ca.Key == nil {
			return nil, fmt.Errorf("TLS: %s has a CA certificate but not its key (%s): cannot certify this node", p.CA, p.CAKey)
		}
	} else if ca, err = pki.InitCA(p, clusterName, now); err != nil {
		return nil, fmt.Errorf("TLS: create the cluster CA: %w", err)
	}
	b, err := pki.IssueNodeFiles(ca, p, name, nodeIPs(advertise), 0, now)
	if err != nil {
		return nil, fmt.Errorf("TLS: certify node %s: %w", name, err)
	}
	if _, err := os.Stat(p.GossipKey); err != nil {
		k, err := pki.NewGossipKey()
		if err != nil {
			return nil, err
		}
		if err := pki.WriteGossipKey(p.GossipKey, k); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// nodeIPs are the addresses a node's certificate names: the one it
// advertises, and loopback for local tools.
func nodeIPs(advertise string) []net.IP {
	ips := []net.IP{net.IPv4(127, 0, 0, 1)}
	if ip := net.ParseIP(advertise); ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() {
		ips = append(ips, ip)
	}
	return ips
}

// tlsPaths fills the unset TLS paths from the data dir.
func (c *Config) tlsPaths() pki.Paths {
	d := pki.DefaultPaths(c.DataDir)
	p := c.TLS
	if p.CA == "" {
		p.CA = d.CA
	}
	if p.CAKey == "" {
		p.CAKey = d.CAKey
	}
	if p.Cert == "" {
		p.Cert = d.Cert
	}
	if p.Key == "" {
		p.Key = d.Key
	}
	if p.GossipKey == "" {
		p.GossipKey = d.GossipKey
	}
	return p
}

// bindsBeyondLoopback reports whether the agent listens on an address
// other hosts can reach.
func (c *Config) bindsBeyondLoopback() bool {
	ip := net.ParseIP(c.BindAddr)
	return ip == nil || !ip.IsLoopback()
}

// Bound of one join request.
const joinRequestWait = 10 * time.Second

// joinWithToken gets this node's certificate from the cluster with
// --token (pki.Joiner) and writes it to p.
func joinWithToken(ctx context.Context, cfg *Config, p pki.Paths, log *slog.Logger) error {
	tok, err := pki.ParseJoinToken(cfg.JoinToken)
	if err != nil {
		return fmt.Errorf("--token: %w", err)
	}
	var ips []string
	for _, ip := range nodeIPs(cfg.AdvertiseAddr) {
		ips = append(ips, ip.String())
	}
	j := pki.Joiner{Token: tok, Name: cfg.Name, IPs: ips, Paths: p,
		Server: joinServer{pki.PinnedClientConfig(tok.CAFingerprint)}, Clock: clock.Wall{}, Log: log}
	return j.Run(ctx)
}

// joinServer is pki.JoinServer over the HTTP API, with the TLS
// configuration that pins the token's CA.
type joinServer struct{ tls *tls.Config }

func (s joinServer) Join(ctx context.Context, addr string, req api.JoinRequest) (api.JoinResponse, error) {
	var resp api.JoinResponse
	c, err := api.NewTLSClient("https://"+addr, s.tls)
	if err != nil {
		return resp, &api.StatusError{Code: http.StatusBadRequest, Message: "--token: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, joinRequestWait)
	defer cancel()
	_, err = c.Do(ctx, http.MethodPost, "/v1/join", req, &resp)
	return resp, err
}
