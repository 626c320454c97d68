package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Lifetimes and bounds of what the cluster CA issues.
const (
	// CALifetime is how long a generated CA is valid. Rotating a CA is an
	// operator's act; ten years keeps it out of the way.
	CALifetime = 10 * 365 * 24 * time.Hour
	// DefaultNodeLifetime is how long a node certificate is valid. Agents
	// renew theirs when a third of it is left.
	DefaultNodeLifetime = 90 * 24 * time.Hour
	// MaxNodeLifetime bounds what a signer will issue.
	MaxNodeLifetime = 366 * 24 * time.Hour
	// clockSkew back-dates certificates so a node whose clock is a little
	// behind the signer's accepts them at once.
	clockSkew = 5 * time.Minute
	// maxPEMBytes bounds a CSR or certificate read from the network.
	maxPEMBytes = 16 << 10
	// maxIPs bounds the addresses a node certificate names.
	maxIPs = 16
)

// uriScheme and uriHost make a node's identity URI: shoal://node/NAME.
const (
	uriScheme = "shoal"
	uriHost   = "node"
)

// Errors callers branch on.
var (
	// ErrNotNodeCert: a certificate chains to the CA but is not a node's.
	ErrNotNodeCert = errors.New("not a Shoal node certificate")
	// ErrBadCSR: a certificate request is malformed or does not prove
	// possession of its key.
	ErrBadCSR = errors.New("bad certificate request")
)

// CA is a cluster certificate authority: its certificate and, on nodes
// that may sign, its key.
type CA struct {
	Cert *x509.Certificate
	// Key signs node certificates; nil where only verification is needed.
	Key crypto.Signer
}

// NewCA generates a CA for the cluster named cluster, valid from now.
func NewCA(clusterName string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	ski, err := subjectKeyID(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Shoal cluster CA " + clusterName, Organization: []string{"Shoal"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // node certificates only, no intermediates
		SubjectKeyId:          ski,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse new CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Fingerprint is the SHA-256 of the CA certificate, in hex: what a joining
// node pins before it trusts anything the cluster sends.
func (ca *CA) Fingerprint() string { return Fingerprint(ca.Cert) }

// Fingerprint is the SHA-256 of a certificate's DER bytes, in hex.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// NodeRequest is what a signer needs to issue a node certificate.
type NodeRequest struct {
	Name string
	// PublicKey is the node's own key; the private half never leaves it.
	PublicKey crypto.PublicKey
	// IPs the node's API answers on, so users can verify it by address.
	IPs []net.IP
	// Lifetime of the certificate; 0 means DefaultNodeLifetime.
	Lifetime time.Duration
}

// SignNode issues a node certificate for req, valid from now. The name is
// written as the subject's CN, a DNS name and the node URI.
func (ca *CA) SignNode(req NodeRequest, now time.Time) (*x509.Certificate, error) {
	if ca.Key == nil {
		return nil, errors.New("sign node certificate: this CA has no key here")
	}
	if !cluster.ValidNodeName(req.Name) {
		return nil, fmt.Errorf("sign node certificate: name %q: want 1-%d letters, digits and -_. starting with a letter or digit", req.Name, cluster.MaxNodeNameLen)
	}
	if len(req.IPs) > maxIPs {
		return nil, fmt.Errorf("sign node certificate for %s: %d addresses, want at most %d", req.Name, len(req.IPs), maxIPs)
	}
	life := req.Lifetime
	if life == 0 {
		life = DefaultNodeLifetime
	}
	if life < 0 || life > MaxNodeLifetime {
		return nil, fmt.Errorf("sign node certificate for %s: lifetime %s: want up to %s", req.Name, life, MaxNodeLifetime)
	}
	if _, ok := req.PublicKey.(*ecdsa.PublicKey); !ok {
		return nil, fmt.Errorf("sign node certificate for %s: key of type %T: want ECDSA", req.Name, req.PublicKey)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(life)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter // never outlive the CA
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.Name, Organization: []string{"Shoal"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{req.Name},
		IPAddresses:  slices.Clone(req.IPs),
		URIs:         []*url.URL{nodeURI(req.Name)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign node certificate for %s: %w", req.Name, err)
	}
	return x509.ParseCertificate(der)
}

func nodeURI(name string) *url.URL {
	return &url.URL{Scheme: uriScheme, Host: uriHost, Path: "/" + name}
}

// NodeName returns the node a certificate names, from its node URI. It
// does not verify the chain: see VerifyNode.
func NodeName(c *x509.Certificate) (string, error) {
	var name string
	for _, u := range c.URIs {
		if u.Scheme != uriScheme || u.Host != uriHost {
			continue
		}
		if name != "" {
			return "", fmt.Errorf("%w: names several nodes", ErrNotNodeCert)
		}
		name = strings.TrimPrefix(u.Path, "/")
	}
	if !cluster.ValidNodeName(name) {
		return "", fmt.Errorf("%w: no valid shoal://node/NAME URI", ErrNotNodeCert)
	}
	return name, nil
}

// VerifyNode checks that chain (leaf first, as a TLS peer sends it)
// chains to roots at now and is a node certificate, and returns the node's
// name. It is what every node-to-node connection runs on the peer's
// certificate, on both sides.
func VerifyNode(chain []*x509.Certificate, roots *x509.CertPool, now time.Time) (string, error) {
	if len(chain) == 0 {
		return "", errors.New("no certificate presented")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return "", fmt.Errorf("certificate of %q: %w", chain[0].Subject.CommonName, err)
	}
	if !slices.Contains(chain[0].ExtKeyUsage, x509.ExtKeyUsageClientAuth) || !slices.Contains(chain[0].ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return "", fmt.Errorf("%w: it lacks client or server auth", ErrNotNodeCert)
	}
	return NodeName(chain[0])
}

// NewNodeKey generates a node's private key.
func NewNodeKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate node key: %w", err)
	}
	return k, nil
}

// NewCSR makes a PEM certificate request for a node named name, signed by
// its key (which proves the requester holds it).
func NewCSR(key crypto.Signer, name string) ([]byte, error) {
	if !cluster.ValidNodeName(name) {
		return nil, fmt.Errorf("certificate request: name %q is not a valid node name", name)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: name},
		URIs:    []*url.URL{nodeURI(name)},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("certificate request for %s: %w", name, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// ParseCSR decodes a PEM certificate request from an untrusted peer,
// checks its signature and returns it with the node name it asks for.
func ParseCSR(data []byte) (*x509.CertificateRequest, string, error) {
	if len(data) > maxPEMBytes {
		return nil, "", fmt.Errorf("%w: %d bytes, want at most %d", ErrBadCSR, len(data), maxPEMBytes)
	}
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, "", fmt.Errorf("%w: want one PEM CERTIFICATE REQUEST block", ErrBadCSR)
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		return nil, "", fmt.Errorf("%w: data after the PEM block", ErrBadCSR)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrBadCSR, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, "", fmt.Errorf("%w: signature: %v", ErrBadCSR, err)
	}
	name := csr.Subject.CommonName
	if !cluster.ValidNodeName(name) {
		return nil, "", fmt.Errorf("%w: common name %q is not a valid node name", ErrBadCSR, name)
	}
	if _, ok := csr.PublicKey.(*ecdsa.PublicKey); !ok {
		return nil, "", fmt.Errorf("%w: key of type %T, want ECDSA", ErrBadCSR, csr.PublicKey)
	}
	return csr, name, nil
}

// EncodeCert returns a certificate as PEM.
func EncodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// ParseCerts decodes every CERTIFICATE block of PEM data.
func ParseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return out, nil
}

// EncodeKey returns a private key as PKCS#8 PEM.
func EncodeKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseKey decodes a PEM private key (PKCS#8, or SEC 1 "EC PRIVATE KEY"
// as openssl writes it).
func ParseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM private key block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q: want a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", key)
	}
	return s, nil
}

func randomSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificate serial: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil // never zero
}

func subjectKeyID(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return sum[:20], nil
}

// KeyMatches reports whether key is the private half of cert's public key.
func KeyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}
