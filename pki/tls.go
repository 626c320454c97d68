package pki

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Bundle is what a node holds to take part in the cluster's TLS: the CA it
// trusts and its own certificate and key. The certificate can be replaced
// while connections use the bundle (renewal): every handshake reads the
// current one.
type Bundle struct {
	// Name is the node the certificate names.
	Name string
	// CA is the cluster CA; its Key is set only on nodes that may sign.
	CA    *CA
	roots *x509.CertPool
	cert  atomic.Pointer[tls.Certificate]
	// revoked, when set, reports whether node name's certificate issued
	// at issued has been revoked; such peers are refused in the handshake.
	revoked atomic.Pointer[func(name string, issued time.Time) bool]
	// now is the clock handshakes verify against; time.Now outside tests.
	now func() time.Time
	// verified remembers chains that passed VerifyNode (verifyPeer).
	verified verifiedChains
}

// NewBundle makes a bundle for the node named in cert (leaf first, then
// the CA or nothing), which must chain to ca and be a node certificate.
func NewBundle(ca *CA, cert tls.Certificate) (*Bundle, error) {
	b := &Bundle{CA: ca, roots: x509.NewCertPool(), now: time.Now}
	b.roots.AddCert(ca.Cert)
	if err := b.SetCertificate(cert); err != nil {
		return nil, err
	}
	return b, nil
}

// SetCertificate replaces the node's certificate (a renewal). It must name
// the same node and chain to the same CA.
func (b *Bundle) SetCertificate(cert tls.Certificate) error {
	if len(cert.Certificate) == 0 {
		return errors.New("node certificate: empty")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return fmt.Errorf("node certificate: %w", err)
	}
	chain := []*x509.Certificate{leaf}
	name, err := VerifyNode(chain, b.roots, b.now())
	if err != nil {
		return fmt.Errorf("node certificate: %w", err)
	}
	if b.Name != "" && name != b.Name {
		return fmt.Errorf("node certificate names %s, want %s", name, b.Name)
	}
	cert.Leaf = leaf
	// Send the CA after the leaf: a joining node pins the CA by its
	// fingerprint and needs to see it in the handshake.
	if len(cert.Certificate) == 1 {
		cert.Certificate = append(cert.Certificate, b.CA.Cert.Raw)
	}
	b.Name = name
	b.cert.Store(&cert)
	return nil
}

// Certificate is the node's current certificate.
func (b *Bundle) Certificate() *tls.Certificate { return b.cert.Load() }

// NotAfter is when the node's current certificate expires.
func (b *Bundle) NotAfter() time.Time { return b.cert.Load().Leaf.NotAfter }

// Roots is the pool holding the cluster CA.
func (b *Bundle) Roots() *x509.CertPool { return b.roots }

// SetRevoked installs the check of revoked certificates: f reports whether
// node name's certificate issued at issued is revoked. Handshakes from then
// on refuse those, and PeerNode stops naming them.
func (b *Bundle) SetRevoked(f func(name string, issued time.Time) bool) { b.revoked.Store(&f) }

func (b *Bundle) isRevoked(name string, leaf *x509.Certificate) bool {
	f := b.revoked.Load()
	return f != nil && *f != nil && (*f)(name, IssuedAt(leaf))
}

// IssuedAt is when a certificate was signed: its NotBefore is back-dated
// by the signer's allowance for clock skew.
func IssuedAt(c *x509.Certificate) time.Time { return c.NotBefore.Add(clockSkew) }

// verifyPeer checks a peer's chain as a node certificate that is not
// revoked and, when want is set, names want.
func (b *Bundle) verifyPeer(chain []*x509.Certificate, want string) (string, error) {
	name, err := b.verifyNode(chain, b.now())
	if err != nil {
		return "", err
	}
	if b.isRevoked(name, chain[0]) {
		return "", fmt.Errorf("node %s: certificate revoked", name)
	}
	if want != "" && name != want {
		return "", fmt.Errorf("peer is node %s, want %s", name, want)
	}
	return name, nil
}

// ServerConfig is the TLS configuration of a listener. With requireNode,
// every client must present a node certificate (raft); without, a client
// may present none (the HTTP API, where users prove themselves with a
// token), but one it presents must be a valid node certificate.
func (b *Bundle) ServerConfig(requireNode bool) *tls.Config {
	auth := tls.RequestClientCert
	if requireNode {
		auth = tls.RequireAnyClientCert
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ClientAuth: auth,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return b.cert.Load(), nil
		},
		// The chain is verified here rather than by ClientCAs so that the
		// same rules (node URI, both usages, revocation) hold on both ends.
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				if requireNode {
					return errors.New("tls: a node certificate is required")
				}
				return nil
			}
			_, err := b.verifyPeer(cs.PeerCertificates, "")
			return err
		},
	}
}

// ClientConfig is the TLS configuration to dial another node, which must
// present a node certificate naming peer ("" accepts any node).
func (b *Bundle) ClientConfig(peer string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Nodes dial each other by IP: there is no host name to verify.
		// VerifyConnection checks the chain and the node name instead.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return b.cert.Load(), nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := b.verifyPeer(cs.PeerCertificates, peer)
			return err
		},
	}
}

// PeerNode returns the node a TLS connection's client proved to be, from
// the chain the server side verified; ok is false for a client that
// presented no certificate.
func (b *Bundle) PeerNode(cs *tls.ConnectionState) (name string, ok bool) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return "", false
	}
	name, err := b.verifyPeer(cs.PeerCertificates, "")
	return name, err == nil
}

// UserClientConfig is what a user's CLI dials an agent's HTTPS API with:
// the usual host-name verification against the cluster CA, no client
// certificate (users send a token).
func UserClientConfig(roots *x509.CertPool) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots}
}

// ErrWrongCluster: a server is not of the cluster a join token is for.
var ErrWrongCluster = errors.New("not the cluster the join token is for")

// PinnedClientConfig is how a node that has no certificate yet dials the
// cluster to join: the server must present a node certificate chaining to
// a CA that it sends along and whose SHA-256 fingerprint is fingerprint
// (from the join token). Nothing is sent before that holds.
func PinnedClientConfig(fingerprint string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // verified below, against the pinned CA
		VerifyConnection: func(cs tls.ConnectionState) error {
			for _, c := range cs.PeerCertificates[min(1, len(cs.PeerCertificates)):] {
				if !c.IsCA || Fingerprint(c) != fingerprint {
					continue
				}
				roots := x509.NewCertPool()
				roots.AddCert(c)
				_, err := VerifyNode(cs.PeerCertificates[:1], roots, time.Now())
				return err
			}
			return fmt.Errorf("%w: the server sent no CA with fingerprint %s", ErrWrongCluster, fingerprint)
		},
	}
}

// maxVerifiedChains bounds the verified-chain cache: one entry per peer
// certificate in use (a node's, renewed now and then), so a cluster's
// servers fit many times over; a full cache starts again empty.
const maxVerifiedChains = 1024

// verifiedChains remembers chains that VerifyNode accepted, with the
// time window in which every certificate of the chain and the CA is
// valid. The roots never change in a bundle's life, so within that
// window VerifyNode's answer for the same bytes is the same: a request
// on a kept-alive connection (PeerNode, once per API request from a
// node) skips the signature checks, which cost ~0.4 ms of CPU each.
// Revocation is not cached: verifyPeer asks it every time.
type verifiedChains struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]verifiedChain
}

type verifiedChain struct {
	name                string
	notBefore, notAfter time.Time
}

// chainKey hashes a chain's certificates, each with its length.
func chainKey(chain []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range chain {
		n := len(c.Raw)
		h.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		h.Write(c.Raw)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// verifyNode is VerifyNode against b's roots, answered from b.verified
// when the same chain passed before and now lies in its window.
func (b *Bundle) verifyNode(chain []*x509.Certificate, now time.Time) (string, error) {
	if len(chain) == 0 {
		return VerifyNode(chain, b.roots, now)
	}
	key := chainKey(chain)
	b.verified.mu.Lock()
	v, ok := b.verified.m[key]
	b.verified.mu.Unlock()
	if ok && !now.Before(v.notBefore) && !now.After(v.notAfter) {
		return v.name, nil
	}
	name, err := VerifyNode(chain, b.roots, now)
	if err != nil {
		return "", err
	}
	v = verifiedChain{name: name, notBefore: b.CA.Cert.NotBefore, notAfter: b.CA.Cert.NotAfter}
	for _, c := range chain {
		if c.NotBefore.After(v.notBefore) {
			v.notBefore = c.NotBefore
		}
		if c.NotAfter.Before(v.notAfter) {
			v.notAfter = c.NotAfter
		}
	}
	b.verified.mu.Lock()
	if b.verified.m == nil || len(b.verified.m) >= maxVerifiedChains {
		b.verified.m = make(map[[sha256.Size]byte]verifiedChain)
	}
	b.verified.m[key] = v
	b.verified.mu.Unlock()
	return name, nil
}
