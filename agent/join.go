package agent

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/pki"
)

// caOffer is what a node holding the CA's key offers the cluster's state.
func (c *core) caOffer() (*api.ClusterCA, bool) {
	b := c.sec.bundle
	if b == nil || b.CA.Key == nil {
		return nil, false
	}
	keyPEM, err := pki.EncodeKey(b.CA.Key)
	if err != nil {
		c.log.Warn("record the cluster CA", "err", err)
		return nil, false
	}
	return &api.ClusterCA{CACert: string(pki.EncodeCert(b.CA.Cert)), CAKey: string(keyPEM), GossipKey: pki.EncodeGossipKey(c.sec.gossipKeys[0])}, true
}

// caOfferer is the CA offer loop (pki.CAOfferer) over this agent,
// offering offer (caOffer) every heartbeat interval.
func (c *core) caOfferer(offer *api.ClusterCA) pki.CAOfferer {
	return pki.CAOfferer{Cluster: caRecorder{c, offer}, Every: c.cfg.HeartbeatInterval, Clock: clock.Wall{}, Log: c.log}
}

// caRecorder is pki.ClusterCARecorder over the FSM and callLeader.
type caRecorder struct {
	c     *core
	offer *api.ClusterCA
}

// HasClusterCA reports whether the replicated state holds the CA.
func (c caRecorder) HasClusterCA() bool {
	sec := c.c.view().Security() // a worker's comes from a server (follow.go)
	return sec != nil && len(sec.CACert) > 0
}

// OfferClusterCA offers this node's CA to the leader.
func (c caRecorder) OfferClusterCA(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	_, err := callLeader(ctx, c.c, "/v1/internal/cluster-ca", *c.offer, noReplyFrom(securityAPI{c.c}.RecordClusterCA))
	return err
}

// RecordClusterCA applies a node's offer of the CA (see caOfferer;
// leader) after checking that it is the CA this leader itself trusts and
// that the key is the CA's: a node cannot slip another CA into the state.
func (s securityAPI) RecordClusterCA(ctx context.Context, offer api.ClusterCA) error {
	b := s.sec.bundle
	if b == nil {
		return conflict(errors.New("this agent runs --insecure"))
	}
	certs, err := pki.ParseCerts([]byte(offer.CACert))
	if err != nil {
		return invalid(fmt.Errorf("ca_cert: %w", err))
	}
	if pki.Fingerprint(certs[0]) != b.CA.Fingerprint() {
		return forbidden(fmt.Errorf("cluster CA: %w: not the CA this cluster's nodes are certified by", ErrForbidden))
	}
	key, err := pki.ParseKey([]byte(offer.CAKey))
	if err != nil {
		return invalid(fmt.Errorf("ca_key: %w", err))
	}
	if !pki.KeyMatches(certs[0], key) {
		return invalid(errors.New("ca_key: not the CA certificate's key"))
	}
	gossipKey, err := pki.ParseGossipKey(offer.GossipKey)
	if err != nil {
		return invalid(err)
	}
	tokenKey, err := pki.NewTokenKey()
	if err != nil {
		return err
	}
	res, err := s.apply(ctx, fsm.CmdSetClusterCA, fsm.SetClusterCA{
		CACert: []byte(offer.CACert), CAKey: []byte(offer.CAKey), GossipKey: gossipKey, TokenKey: tokenKey, Time: time.Now(),
	})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fsmError(err)
	}
	s.log.Info("recorded the cluster CA in the replicated state: any leader can now sign join requests", "ca_fingerprint", b.CA.Fingerprint())
	return nil
}

// clusterCA returns the CA, with its key, from the replicated state.
func clusterCA(v *fsm.View) (*pki.CA, [][]byte, error) {
	sec := v.Security()
	if sec == nil || len(sec.CACert) == 0 {
		return nil, nil, conflict(leader.ErrNoClusterCA)
	}
	certs, err := pki.ParseCerts(sec.CACert)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster CA in the state: %w", err)
	}
	key, err := pki.ParseKey(sec.CAKey)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster CA key in the state: %w", err)
	}
	return &pki.CA{Cert: certs[0], Key: key}, sec.GossipKeys, nil
}

// revokedCheck is the bundle's revocation check: the replicated list.
func (c *core) revokedCheck(name string, issued time.Time) bool {
	at, ok := c.view().Security().RevokedAt(name)
	return ok && issued.Before(at)
}

// CreateJoinToken is `shoal join-token create` (root only, leader).
func (s securityAPI) CreateJoinToken(ctx context.Context, req api.JoinTokenRequest, who cluster.Identity) (api.JoinTokenResponse, error) {
	ttl, uses, err := leader.JoinTokenTerms(req.TTLS, req.Uses, leader.Caller{Identity: who})
	if err != nil {
		return api.JoinTokenResponse{}, err
	}
	v := s.state.View()
	ca, _, err := clusterCA(v)
	if err != nil {
		return api.JoinTokenResponse{}, err
	}
	tok, err := pki.NewJoinToken(ca.Fingerprint(), leader.JoinAddrs(s.cfg.apiAdvert(), v.Nodes()))
	if err != nil {
		return api.JoinTokenResponse{}, err
	}
	now := time.Now()
	res, err := s.apply(ctx, fsm.CmdAddJoinToken, fsm.AddJoinToken{Token: cluster.JoinToken{
		ID: tok.ID, SecretHash: pki.SecretHash(tok.Secret), Created: now, Expires: now.Add(ttl), UsesLeft: uses,
	}, Time: now})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return api.JoinTokenResponse{}, fsmError(err)
	}
	return api.JoinTokenResponse{Token: tok.String(), Expires: api.FormatTime(now.Add(ttl)), Uses: uses}, nil
}

// CanSign returns nil when this agent signs joins: not with --insecure.
func (s securityAPI) CanSign() error {
	if s.sec.bundle == nil {
		return conflict(errors.New("join: this agent runs --insecure and signs nothing"))
	}
	return nil
}

// Join signs a new node's certificate in exchange for a join token.
// Anyone may ask (they have no certificate yet): the token is the proof.
// A token that does not match is turned away before anything is written
// to the log, so strangers cannot make the cluster do work.
func (s securityAPI) Join(ctx context.Context, req api.JoinRequest) (api.JoinResponse, error) {
	csr, name, err := pki.ParseCSR([]byte(req.CSR))
	if err != nil {
		return api.JoinResponse{}, invalid(fmt.Errorf("csr: %w", err))
	}
	ips, err := parseIPs(req.IPs)
	if err != nil {
		return api.JoinResponse{}, err
	}
	if err := leader.AdmitJoin(s.state.View(), req.TokenID, pki.SecretHash(req.Secret), name, time.Now()); err != nil {
		return api.JoinResponse{}, err
	}
	res, err := s.apply(ctx, fsm.CmdUseJoinToken, fsm.UseJoinToken{
		ID: req.TokenID, SecretHash: pki.SecretHash(req.Secret), Node: name, Time: time.Now(),
	})
	if err == nil {
		err = res.Err
	}
	if errors.Is(err, fsm.ErrJoinToken) {
		return api.JoinResponse{}, unauthenticated(err)
	}
	if err != nil {
		return api.JoinResponse{}, fsmError(err)
	}
	ca, gossipKeys, err := clusterCA(s.state.View())
	if err != nil {
		return api.JoinResponse{}, err
	}
	cert, err := ca.SignNode(pki.NodeRequest{Name: name, PublicKey: csr.PublicKey, IPs: ips, Lifetime: s.cfg.CertLifetime}, time.Now())
	if err != nil {
		return api.JoinResponse{}, invalid(err)
	}
	s.log.Info("signed a joining node's certificate", "joiner", name, "token", req.TokenID, "expires", cert.NotAfter.Format(time.RFC3339))
	return api.JoinResponse{
		Cert: string(pki.EncodeCert(cert)), CA: string(pki.EncodeCert(ca.Cert)), GossipKeys: encodeKeys(gossipKeys),
	}, nil
}

// Renew signs node name's next certificate with the cluster CA in the
// replicated state, keeping the addresses its current one names (leader;
// the API checked that name asks).
func (s securityAPI) Renew(name string, pub crypto.PublicKey) (*x509.Certificate, error) {
	v := s.state.View()
	if err := leader.MayRenew(v, name, s.cfg.Name); err != nil {
		return nil, err
	}
	ca, _, err := clusterCA(v)
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	if n, ok := v.Node(name); ok {
		if host, _, err := net.SplitHostPort(n.APIAddr); err == nil {
			if ip := net.ParseIP(host); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	if !slices.ContainsFunc(ips, net.IP.IsLoopback) {
		ips = append(ips, net.IPv4(127, 0, 0, 1))
	}
	return ca.SignNode(pki.NodeRequest{Name: name, PublicKey: pub, IPs: ips, Lifetime: s.cfg.CertLifetime}, time.Now())
}

// Revoke is `shoal node revoke NAME` (root only): the node's
// certificates issued until now are refused from now on, and it leaves
// the raft configuration.
func (s securityAPI) Revoke(ctx context.Context, name string, who cluster.Identity) error {
	if err := leader.MayRevoke(name, s.cfg.Name, leader.Caller{Identity: who}); err != nil {
		return err
	}
	res, err := s.apply(ctx, fsm.CmdRevokeNode, fsm.RevokeNode{Name: name, Time: time.Now()})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fsmError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	if err := s.raft.RemoveServer(ctx, name); err != nil {
		s.log.Warn("remove a revoked node from raft", "revoked", name, "err", err)
	}
	s.log.Warn("revoked a node's certificates", "revoked", name, "by", who.User)
	return nil
}

func parseIPs(ss []string) ([]net.IP, error) {
	if len(ss) > 8 {
		return nil, invalid(fmt.Errorf("ips: %d addresses, want at most 8", len(ss)))
	}
	var out []net.IP
	for _, s := range ss {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, invalid(fmt.Errorf("ips: %q is not an IP address", s))
		}
		out = append(out, ip)
	}
	return out, nil
}

// fsmError maps a refusal of the FSM to a status: invalid input is the
// caller's mistake.
func fsmError(err error) error {
	if errors.Is(err, fsm.ErrInvalid) {
		return invalid(err)
	}
	return err
}
