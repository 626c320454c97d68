package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/pki"
)

// authority is an Authority with a node bundle (nil: --insecure) and a
// security record.
type authority struct {
	bundle *pki.Bundle
	sec    *cluster.Security
}

func (a authority) Secure() bool { return a.bundle != nil }
func (a authority) PeerNode(cs *tls.ConnectionState) (string, bool) {
	if a.bundle == nil {
		return "", false
	}
	return a.bundle.PeerNode(cs)
}
func (a authority) TokenState() *cluster.Security { return a.sec }

// TestResolveCaller: identity comes only from what a sender cannot forge
// (issue 12, hole 1): declared headers are believed only from a peer with a
// node certificate naming the node that says it forwarded them.
func TestResolveCaller(t *testing.T) {
	ca, err := pki.NewCA("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert := func(name string, ca *pki.CA) *x509.Certificate {
		key, _ := pki.NewNodeKey()
		c, err := ca.SignNode(pki.NodeRequest{Name: name, PublicKey: &key.PublicKey}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	key, _ := pki.NewNodeKey()
	own, _ := ca.SignNode(pki.NodeRequest{Name: "n1", PublicKey: &key.PublicKey}, time.Now())
	b, err := pki.NewBundle(ca, tls.Certificate{Certificate: [][]byte{own.Raw}, PrivateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	rogueCA, _ := pki.NewCA("rogue", time.Now())
	secure, insecure := authority{bundle: b}, authority{}
	tests := []struct {
		name       string
		auth       authority
		remote     string
		peer       *x509.Certificate
		declare    bool
		forwarded  string
		wantProven bool
		wantUID    int
		wantNode   string
	}{
		{"loopback declared", secure, "127.0.0.1:5000", nil, true, "", false, -1, ""},
		{"remote declared and forwarded, no certificate", secure, "10.1.2.3:5000", nil, true, "n2", false, -1, ""},
		{"node forwarding what it proved", secure, "10.1.2.3:5000", cert("n2", ca), true, "n2", true, 1000, "n2"},
		{"node claiming another node forwarded", secure, "10.1.2.3:5000", cert("n2", ca), true, "n3", false, -1, "n2"},
		{"node, not forwarding", secure, "10.1.2.3:5000", cert("n2", ca), true, "", false, -1, "n2"},
		{"another CA's node", secure, "10.1.2.3:5000", cert("n2", rogueCA), true, "n2", false, -1, ""},
		{"insecure: forwarded", insecure, "10.1.2.3:5000", nil, true, "n2", true, 1000, "n2"},
		{"insecure: loopback declared", insecure, "127.0.0.1:5000", nil, true, "", false, -1, ""},
		{"socket: root acting as a user", secure, "@", nil, true, "", true, 1000, ""},
		{"socket: a user declaring another", secure, "@", nil, true, "", true, 1001, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/jobs", nil)
			r.RemoteAddr = tc.remote
			if tc.declare {
				r.Header.Set(api.HeaderUser, "ada")
				r.Header.Set(api.HeaderUID, "1000")
				r.Header.Set(api.HeaderGID, "100")
			}
			if tc.forwarded != "" {
				r.Header.Set(api.HeaderForwardedBy, tc.forwarded)
			}
			if tc.peer != nil {
				r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.peer}}
			}
			if tc.remote == "@" { // the Unix socket, as PeerCredConnContext marks it
				uid := 0
				if tc.name == "socket: a user declaring another" {
					uid = 1001
				}
				r = WithCaller(r, Caller{Identity: api.Identity{UID: uid}, Proven: true, How: "peercred", Local: true})
			}
			c := ResolveCaller(tc.auth, r)
			if c.Proven != tc.wantProven || c.UID != tc.wantUID || c.Node != tc.wantNode {
				t.Errorf("resolveCaller = %+v; want proven %v uid %d node %q", c, tc.wantProven, tc.wantUID, tc.wantNode)
			}
		})
	}
}

// TestVerifyUserToken: a user token proves its user only if it verifies
// against the cluster's token key at the time asked, and was not revoked;
// an agent that has no token key yet says so as unavailable (503, not
// 401).
func TestVerifyUserToken(t *testing.T) {
	key := make([]byte, pki.TokenKeyLen)
	for i := range key {
		key[i] = byte(i)
	}
	other := make([]byte, pki.TokenKeyLen)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tok, id, err := pki.IssueUserToken(key, "ada", 1000, 100, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sec := &cluster.Security{TokenKey: key}
	revoked := &cluster.Security{TokenKey: key, RevokedUserTokens: []cluster.RevokedUserToken{{ID: id, Expires: now.Add(time.Hour)}}}
	tests := []struct {
		name   string
		sec    *cluster.Security
		tok    string
		at     time.Time
		uid    int
		kind   error // nil: proven
		unavai bool
	}{
		{"valid", sec, tok, now.Add(time.Minute), 1000, nil, false},
		{"no security record yet", nil, tok, now, -1, cluster.ErrUnavailable, true},
		{"no token key yet", &cluster.Security{}, tok, now, -1, cluster.ErrUnavailable, true},
		{"another cluster's key", &cluster.Security{TokenKey: other}, tok, now, -1, pki.ErrUserToken, false},
		{"expired", sec, tok, now.Add(2 * time.Hour), -1, pki.ErrUserToken, false},
		{"revoked", revoked, tok, now, -1, pki.ErrUserToken, false},
		{"not a token", sec, "abc", now, -1, pki.ErrUserToken, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			who, gotID, err := VerifyUserToken(tc.sec, tc.tok, tc.at)
			if tc.kind == nil {
				if err != nil || who.UID != tc.uid || who.User != "ada" || gotID != id {
					t.Errorf("VerifyUserToken = %+v, %q, %v; want ada (uid %d), %q", who, gotID, err, tc.uid, id)
				}
				return
			}
			if !errors.Is(err, tc.kind) || who != Nobody || gotID != "" {
				t.Errorf("VerifyUserToken = %+v, %q, %v; want nobody and %v", who, gotID, err, tc.kind)
			}
			if got := errors.Is(err, cluster.ErrUnavailable); got != tc.unavai {
				t.Errorf("VerifyUserToken err %v unavailable = %v; want %v", err, got, tc.unavai)
			}
		})
	}
}

// TestResolveCallerUserToken: a bearer token is believed over TLS only,
// and a refused one leaves the caller nobody with the reason for the 401.
func TestResolveCallerUserToken(t *testing.T) {
	key := make([]byte, pki.TokenKeyLen)
	tok, _, err := pki.IssueUserToken(key, "ada", 1000, 100, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewCA("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	nk, _ := pki.NewNodeKey()
	own, _ := ca.SignNode(pki.NodeRequest{Name: "n1", PublicKey: &nk.PublicKey}, time.Now())
	b, err := pki.NewBundle(ca, tls.Certificate{Certificate: [][]byte{own.Raw}, PrivateKey: nk})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		auth    authority
		tok     string
		proven  bool
		uid     int
		authErr bool
	}{
		{"secure, good token", authority{bundle: b, sec: &cluster.Security{TokenKey: key}}, tok, true, 1000, false},
		{"secure, bad token", authority{bundle: b, sec: &cluster.Security{TokenKey: key}}, tok + "x", false, -1, true},
		{"secure, no key yet", authority{bundle: b}, tok, false, -1, true},
		{"insecure: tokens are not read", authority{sec: &cluster.Security{TokenKey: key}}, tok, false, -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/jobs", nil)
			r.RemoteAddr = "10.1.2.3:5000"
			r.Header.Set("Authorization", "Bearer "+tc.tok)
			c := ResolveCaller(tc.auth, r)
			if c.Proven != tc.proven || c.UID != tc.uid || (c.AuthErr != nil) != tc.authErr {
				t.Errorf("ResolveCaller = %+v; want proven %v uid %d auth error %v", c, tc.proven, tc.uid, tc.authErr)
			}
		})
	}
}
