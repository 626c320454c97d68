package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("test", t0)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

// nodeCert issues a node certificate and returns it as a tls.Certificate.
func nodeCert(t *testing.T, ca *CA, name string, life time.Duration) tls.Certificate {
	t.Helper()
	key, err := NewNodeKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.SignNode(NodeRequest{Name: name, PublicKey: &key.PublicKey, Lifetime: life}, t0)
	if err != nil {
		t.Fatalf("SignNode(%s): %v", name, err)
	}
	return tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: key, Leaf: c}
}

func bundle(t *testing.T, ca *CA, name string) *Bundle {
	t.Helper()
	b, err := NewBundle(ca, nodeCert(t, ca, name, 0))
	if err != nil {
		t.Fatalf("NewBundle(%s): %v", name, err)
	}
	b.now = func() time.Time { return t0.Add(time.Hour) }
	return b
}

// rawCert signs an arbitrary template with ca, for certificates a real
// signer would never issue.
func rawCert(t *testing.T, ca *CA, tmpl *x509.Certificate) *x509.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl.SerialNumber = big.NewInt(7)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

func TestVerifyNode(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	good := nodeCert(t, ca, "n1", time.Hour).Leaf
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	tests := []struct {
		name    string
		chain   []*x509.Certificate
		at      time.Time
		want    string
		wantErr string
	}{
		{"node certificate", []*x509.Certificate{good}, t0, "n1", ""},
		{"another CA's node", []*x509.Certificate{nodeCert(t, other, "n1", 0).Leaf}, t0, "", "unknown authority"},
		{"expired", []*x509.Certificate{good}, t0.Add(2 * time.Hour), "", "expired"},
		{"the CA itself", []*x509.Certificate{ca.Cert}, t0, "", ""},
		{"no node URI", []*x509.Certificate{rawCert(t, ca, &x509.Certificate{
			Subject: pkix.Name{CommonName: "n1"}, NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(time.Hour), ExtKeyUsage: both,
		})}, t0, "", "no valid shoal://node/NAME URI"},
		{"client auth only", []*x509.Certificate{rawCert(t, ca, &x509.Certificate{
			NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(time.Hour), URIs: []*url.URL{nodeURI("n1")},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})}, t0, "", "lacks client or server auth"},
		{"two node URIs", []*x509.Certificate{rawCert(t, ca, &x509.Certificate{
			NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(time.Hour), URIs: []*url.URL{nodeURI("n1"), nodeURI("n2")}, ExtKeyUsage: both,
		})}, t0, "", "names several nodes"},
		{"bad name in URI", []*x509.Certificate{rawCert(t, ca, &x509.Certificate{
			NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(time.Hour), URIs: []*url.URL{{Scheme: "shoal", Host: "node", Path: "/../etc"}}, ExtKeyUsage: both,
		})}, t0, "", "no valid"},
		{"nothing", nil, t0, "", "no certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifyNode(tt.chain, roots, tt.at)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("VerifyNode = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("VerifyNode = %q, nil; want an error", got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("VerifyNode error %q; want it to say %q", err, tt.wantErr)
			}
		})
	}
}

func TestSignNodeRefuses(t *testing.T) {
	ca := newCA(t)
	key, _ := NewNodeKey()
	for _, req := range []NodeRequest{
		{Name: "", PublicKey: &key.PublicKey},
		{Name: "-lead", PublicKey: &key.PublicKey},
		{Name: "a/b", PublicKey: &key.PublicKey},
		{Name: strings.Repeat("n", 64), PublicKey: &key.PublicKey},
		{Name: "n1", PublicKey: &key.PublicKey, Lifetime: 2 * MaxNodeLifetime},
		{Name: "n1", PublicKey: &key.PublicKey, IPs: make([]net.IP, maxIPs+1)},
		{Name: "n1", PublicKey: "not a key"},
	} {
		if _, err := ca.SignNode(req, t0); err == nil {
			t.Errorf("SignNode(%+v) = nil error; want refused", req)
		}
	}
	verifyOnly := &CA{Cert: ca.Cert}
	if _, err := verifyOnly.SignNode(NodeRequest{Name: "n1", PublicKey: &key.PublicKey}, t0); err == nil {
		t.Errorf("SignNode without the CA key = nil error")
	}
	// A certificate never outlives its CA.
	c, err := ca.SignNode(NodeRequest{Name: "n1", PublicKey: &key.PublicKey, Lifetime: MaxNodeLifetime}, ca.Cert.NotAfter.Add(-time.Hour))
	if err != nil || c.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("SignNode near the CA's end: NotAfter %v, CA's %v, err %v", c.NotAfter, ca.Cert.NotAfter, err)
	}
}

func TestCSRRoundTrip(t *testing.T) {
	ca := newCA(t)
	key, _ := NewNodeKey()
	pemCSR, err := NewCSR(key, "gpu-07")
	if err != nil {
		t.Fatal(err)
	}
	csr, name, err := ParseCSR(pemCSR)
	if err != nil || name != "gpu-07" {
		t.Fatalf("ParseCSR = %q, %v", name, err)
	}
	c, err := ca.SignNode(NodeRequest{Name: name, PublicKey: csr.PublicKey}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewBundle(ca, tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: key}); err != nil {
		t.Errorf("bundle from a CSR's certificate: %v", err)
	}
	// Tampering with the request breaks its signature.
	der, _ := pem.Decode(pemCSR)
	edited := pem.EncodeToMemory(&pem.Block{Type: der.Type, Bytes: bytes.Replace(der.Bytes, []byte("gpu-07"), []byte("gpu-08"), 1)})
	if _, _, err := ParseCSR(edited); err == nil {
		t.Errorf("ParseCSR of an edited PEM accepted")
	}
	for _, bad := range []string{"", "garbage", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", string(pemCSR) + "trailing"} {
		if _, _, err := ParseCSR([]byte(bad)); !errors.Is(err, ErrBadCSR) {
			t.Errorf("ParseCSR(%.30q) = %v; want ErrBadCSR", bad, err)
		}
	}
}

// handshake runs a real TLS handshake between a client and a server
// configuration over an in-memory pipe and returns each side's error.
func handshake(t *testing.T, client, server *tls.Config) (state tls.ConnectionState, clientErr, serverErr error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	srv := tls.Server(b, server)
	go func() {
		err := srv.Handshake()
		if err != nil {
			b.Close() // unblock the client
		}
		done <- err
	}()
	cli := tls.Client(a, client)
	clientErr = cli.Handshake()
	if clientErr != nil {
		a.Close()
	} else {
		// TLS 1.3 reports a client certificate refused by the server only
		// when the client reads.
		_ = a.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, rerr := cli.Read(make([]byte, 1))
		var ne net.Error
		if rerr != nil && !(errors.As(rerr, &ne) && ne.Timeout()) {
			clientErr = rerr
		}
	}
	serverErr = <-done
	return srv.ConnectionState(), clientErr, serverErr
}

func TestMutualTLS(t *testing.T) {
	ca, rogue := newCA(t), newCA(t)
	n1, n2 := bundle(t, ca, "n1"), bundle(t, ca, "n2")
	r1 := bundle(t, rogue, "n1")

	t.Run("nodes of one cluster", func(t *testing.T) {
		st, cerr, serr := handshake(t, n2.ClientConfig("n1"), n1.ServerConfig(true))
		if cerr != nil || serr != nil {
			t.Fatalf("handshake: client %v, server %v", cerr, serr)
		}
		if st.Version != tls.VersionTLS13 {
			t.Errorf("version %x; want TLS 1.3", st.Version)
		}
		if name, ok := n1.PeerNode(&st); !ok || name != "n2" {
			t.Errorf("PeerNode = %q, %v; want n2", name, ok)
		}
	})
	t.Run("server is not the node dialled", func(t *testing.T) {
		if _, cerr, _ := handshake(t, n2.ClientConfig("n3"), n1.ServerConfig(true)); cerr == nil || !strings.Contains(cerr.Error(), "want n3") {
			t.Errorf("client error %v; want it to name the node it expected", cerr)
		}
	})
	t.Run("rogue server", func(t *testing.T) {
		if _, cerr, _ := handshake(t, n2.ClientConfig(""), r1.ServerConfig(true)); cerr == nil {
			t.Errorf("client accepted a server of another CA")
		}
	})
	t.Run("rogue client", func(t *testing.T) {
		if _, _, serr := handshake(t, r1.ClientConfig(""), n1.ServerConfig(true)); serr == nil {
			t.Errorf("server accepted a client of another CA")
		}
	})
	t.Run("no client certificate, node required", func(t *testing.T) {
		user := UserClientConfig(n1.Roots())
		user.ServerName = "n1"
		if _, _, serr := handshake(t, user, n1.ServerConfig(true)); serr == nil {
			t.Errorf("raft-style server accepted a client with no certificate")
		}
	})
	t.Run("no client certificate, API", func(t *testing.T) {
		user := UserClientConfig(n1.Roots())
		user.ServerName = "n1"
		st, cerr, serr := handshake(t, user, n1.ServerConfig(false))
		if cerr != nil || serr != nil {
			t.Fatalf("user handshake: client %v, server %v", cerr, serr)
		}
		if _, ok := n1.PeerNode(&st); ok {
			t.Errorf("PeerNode of a certificate-less client = ok")
		}
	})
	t.Run("revoked", func(t *testing.T) {
		n1.SetRevoked(func(name string, issued time.Time) bool { return name == "n2" && issued.Before(t0.Add(time.Minute)) })
		defer n1.SetRevoked(nil)
		if _, _, serr := handshake(t, n2.ClientConfig(""), n1.ServerConfig(false)); serr == nil || !strings.Contains(serr.Error(), "revoked") {
			t.Errorf("server error %v; want the revoked node refused", serr)
		}
	})
	t.Run("renewed certificate", func(t *testing.T) {
		b := bundle(t, ca, "n3")
		old := b.NotAfter()
		if err := b.SetCertificate(nodeCert(t, ca, "n3", 200*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if !b.NotAfter().After(old) {
			t.Errorf("NotAfter %v after renewal; want later than %v", b.NotAfter(), old)
		}
		if err := b.SetCertificate(nodeCert(t, ca, "n4", 0)); err == nil {
			t.Errorf("SetCertificate of another node's certificate accepted")
		}
		if _, cerr, serr := handshake(t, b.ClientConfig("n1"), n1.ServerConfig(true)); cerr != nil || serr != nil {
			t.Errorf("handshake with the renewed certificate: %v, %v", cerr, serr)
		}
	})
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	p := DefaultPaths(dir)
	ca, err := InitCA(p, "lab", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InitCA(p, "lab", t0); err == nil {
		t.Errorf("InitCA over an existing CA succeeded")
	}
	b, err := IssueNodeFiles(ca, p, "n1", []net.IP{net.ParseIP("10.0.0.1")}, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "n1" || b.CA.Key == nil {
		t.Errorf("bundle %s, CA key %v; want n1 with the CA key", b.Name, b.CA.Key != nil)
	}
	for _, f := range []string{p.Key, p.CAKey} {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", f, st.Mode().Perm(), err)
		}
	}
	// A node elsewhere gets the CA certificate without its key.
	p2 := DefaultPaths(filepath.Join(dir, "n2"))
	b2, err := IssueNodeFiles(ca, Paths{CA: p2.CA, Cert: p2.Cert, Key: p2.Key}, "n2", nil, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if b2.CA.Key != nil {
		t.Errorf("second node's bundle holds the CA key")
	}
	loaded, err := LoadBundle(p2)
	if err != nil || loaded.Name != "n2" || loaded.CA.Fingerprint() != ca.Fingerprint() {
		t.Fatalf("LoadBundle = %v, %v", loaded, err)
	}
	if err := os.Chmod(p2.Key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBundle(p2); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("LoadBundle with a world-readable key = %v; want refused", err)
	}

	k, _ := NewGossipKey()
	if err := WriteGossipKey(p.GossipKey, k); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadGossipKey(p.GossipKey); err != nil || string(got) != string(k) {
		t.Errorf("LoadGossipKey = %x, %v", got, err)
	}
	for _, bad := range []string{"", "!!", EncodeGossipKey(make([]byte, 12))} {
		if _, err := ParseGossipKey(bad); err == nil {
			t.Errorf("ParseGossipKey(%q) accepted", bad)
		}
	}
}

func FuzzParseCSR(f *testing.F) {
	key, _ := NewNodeKey()
	good, _ := NewCSR(key, "n1")
	f.Add(good)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		csr, name, err := ParseCSR(data)
		if err != nil {
			return
		}
		if csr == nil || name == "" || csr.CheckSignature() != nil {
			t.Fatalf("ParseCSR accepted an unusable request: %q", name)
		}
	})
}

func FuzzParseCerts(f *testing.F) {
	ca, _ := NewCA("fuzz", t0)
	f.Add(EncodeCert(ca.Cert))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		certs, err := ParseCerts(data)
		if err == nil && len(certs) == 0 {
			t.Fatalf("ParseCerts: no error and no certificate")
		}
	})
}

func TestRevokedBeforeOnly(t *testing.T) {
	ca := newCA(t)
	n1 := bundle(t, ca, "n1")
	old := bundle(t, ca, "n2") // issued at t0
	revokedAt := t0.Add(time.Minute)
	n1.SetRevoked(func(name string, issued time.Time) bool { return name == "n2" && issued.Before(revokedAt) })
	if _, _, serr := handshake(t, old.ClientConfig(""), n1.ServerConfig(true)); serr == nil {
		t.Errorf("certificate issued before the revocation accepted")
	}
	key, _ := NewNodeKey()
	c, err := ca.SignNode(NodeRequest{Name: "n2", PublicKey: &key.PublicKey}, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := NewBundle(ca, tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	fresh.now = func() time.Time { return t0.Add(2 * time.Hour) }
	n1.now = fresh.now
	if _, cerr, serr := handshake(t, fresh.ClientConfig(""), n1.ServerConfig(true)); cerr != nil || serr != nil {
		t.Errorf("certificate issued after the revocation: %v, %v; want accepted", cerr, serr)
	}
}

func TestPinnedClientConfig(t *testing.T) {
	ca, rogue := newCA(t), newCA(t)
	srv := bundle(t, ca, "n1")
	srv.now = time.Now
	if _, cerr, serr := handshake(t, PinnedClientConfig(ca.Fingerprint()), srv.ServerConfig(false)); cerr != nil || serr != nil {
		t.Fatalf("pinned to the right CA: %v, %v", cerr, serr)
	}
	if _, cerr, _ := handshake(t, PinnedClientConfig(rogue.Fingerprint()), srv.ServerConfig(false)); cerr == nil || !strings.Contains(cerr.Error(), "fingerprint") {
		t.Errorf("pinned to another CA: %v; want refused", cerr)
	}
}

func TestJoinTokenText(t *testing.T) {
	tok, err := NewJoinToken(strings.Repeat("ab", 32), []string{"10.0.0.1:7070", "[fe80::1]:7070"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseJoinToken(" " + tok.String() + "\n")
	if err != nil || got.ID != tok.ID || got.Secret != tok.Secret || got.CAFingerprint != tok.CAFingerprint || len(got.Addrs) != 2 {
		t.Fatalf("ParseJoinToken(%s) = %+v, %v", tok, got, err)
	}
	if bytes.Equal(SecretHash(tok.Secret), SecretHash(tok.Secret+"0")) {
		t.Errorf("SecretHash ignores the secret")
	}
	for _, bad := range []string{
		"", "abc", tok.ID + "." + tok.Secret + "@10.0.0.1:7070",
		strings.Replace(tok.String(), tok.Secret, "zz"+tok.Secret[2:], 1),
		strings.Replace(tok.String(), "10.0.0.1:7070", "10.0.0.1", 1),
		strings.TrimSuffix(tok.String(), ",[fe80::1]:7070") + "," + strings.Repeat("h:1,", 20) + "h:1",
	} {
		if _, err := ParseJoinToken(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("ParseJoinToken(%.40q) = %v; want ErrBadToken", bad, err)
		}
	}
}

func FuzzParseJoinToken(f *testing.F) {
	tok, _ := NewJoinToken(strings.Repeat("0f", 32), []string{"127.0.0.1:7070"})
	f.Add(tok.String())
	f.Add("a.b.c@d:1")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseJoinToken(s)
		if err != nil {
			return
		}
		again, err := ParseJoinToken(tok.String())
		if err != nil || again.String() != tok.String() {
			t.Fatalf("token %q does not round-trip: %q, %v", tok, again, err)
		}
	})
}

func TestUserTokens(t *testing.T) {
	key, _ := NewTokenKey()
	other, _ := NewTokenKey()
	tok, id, err := IssueUserToken(key, "ada", 1000, 100, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := VerifyUserToken(key, tok, t0.Add(time.Minute))
	if err != nil || c.User != "ada" || c.UID != 1000 || c.GID != 100 || c.ID != id {
		t.Fatalf("VerifyUserToken = %+v, %v", c, err)
	}
	parts := strings.Split(tok, ".")
	// A token that names root in its claims, re-encoded unsigned.
	none := "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + "."
	for name, tc := range map[string]struct {
		key   []byte
		token string
		at    time.Time
	}{
		"another key":   {other, tok, t0},
		"expired":       {key, tok, t0.Add(2 * time.Hour)},
		"alg none":      {key, none, t0},
		"edited claims": {key, parts[0] + "." + parts[1] + "x." + parts[2], t0},
		"garbage":       {key, "not.a.token", t0},
		"too long":      {key, strings.Repeat("a", 5000), t0},
	} {
		if _, err := VerifyUserToken(tc.key, tc.token, tc.at); !errors.Is(err, ErrUserToken) {
			t.Errorf("%s: VerifyUserToken = %v; want ErrUserToken", name, err)
		}
	}
	if _, _, err := IssueUserToken(key, "ada", 1000, 100, t0, 2*MaxUserTokenTTL); err == nil {
		t.Errorf("IssueUserToken beyond the longest lifetime accepted")
	}
}

func FuzzVerifyUserToken(f *testing.F) {
	key, _ := NewTokenKey()
	tok, _, _ := IssueUserToken(key, "ada", 1000, 100, t0, time.Hour)
	f.Add(tok)
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := VerifyUserToken(key, s, t0.Add(time.Minute))
		if err == nil && (c.User == "" || c.UID < 0) {
			t.Fatalf("accepted a token with bad claims: %+v", c)
		}
	})
}

// TestPeerNodeCached: a chain PeerNode accepted once is answered from the
// cache only while every certificate is valid; revocation and a rogue
// chain are judged anew on every call.
func TestPeerNodeCached(t *testing.T) {
	ca, rogue := newCA(t), newCA(t)
	n1 := bundle(t, ca, "n1")
	n2 := nodeCert(t, ca, "n2", 24*time.Hour)
	r2 := nodeCert(t, rogue, "n2", 24*time.Hour)
	st := func(c tls.Certificate) *tls.ConnectionState {
		return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.Leaf}}
	}
	now := t0.Add(time.Hour)
	n1.now = func() time.Time { return now }
	for i := range 3 {
		if name, ok := n1.PeerNode(st(n2)); !ok || name != "n2" {
			t.Fatalf("call %d: PeerNode = %q, %v; want n2", i, name, ok)
		}
		if _, ok := n1.PeerNode(st(r2)); ok {
			t.Fatalf("call %d: PeerNode accepted another CA's certificate", i)
		}
	}
	if len(n1.verified.m) != 1 {
		t.Errorf("%d chains cached; want 1 (the valid one)", len(n1.verified.m))
	}
	n1.SetRevoked(func(name string, _ time.Time) bool { return name == "n2" })
	if _, ok := n1.PeerNode(st(n2)); ok {
		t.Errorf("PeerNode of a cached chain since revoked = ok")
	}
	n1.SetRevoked(nil)
	now = t0.Add(25 * time.Hour) // past n2's NotAfter
	if _, ok := n1.PeerNode(st(n2)); ok {
		t.Errorf("PeerNode of a cached chain since expired = ok")
	}
	now = t0.Add(-time.Hour) // before its NotBefore
	if _, ok := n1.PeerNode(st(n2)); ok {
		t.Errorf("PeerNode of a cached chain not yet valid = ok")
	}
}
