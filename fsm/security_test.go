package fsm

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

func secretHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// TestJoinTokens: a token admits as many nodes as it has uses, only with
// its secret and only before it expires; the CA is set once and cannot be
// swapped through the log; every replica agrees (snapshot round trip).
func TestJoinTokens(t *testing.T) {
	h := newHarness()
	ca := SetClusterCA{CACert: []byte("CA"), CAKey: []byte("KEY"), GossipKey: bytes.Repeat([]byte{1}, 32), TokenKey: bytes.Repeat([]byte{2}, 32), Time: t0}
	tok := cluster.JoinToken{ID: "abc", SecretHash: secretHash("s3cret"), Created: t0, Expires: t0.Add(time.Hour), UsesLeft: 2}

	if r := h.apply(t, CmdAddJoinToken, AddJoinToken{Token: tok, Time: t0}); !errors.Is(r.Err, ErrInvalid) {
		t.Fatalf("AddJoinToken before the CA = %v; want refused", r.Err)
	}
	h.must(t, CmdSetClusterCA, ca)
	h.must(t, CmdSetClusterCA, ca) // the same again (a new leader): fine
	other := ca
	other.CACert = []byte("ROGUE")
	if r := h.apply(t, CmdSetClusterCA, other); !errors.Is(r.Err, ErrInvalid) {
		t.Fatalf("SetClusterCA of another CA = %v; want refused", r.Err)
	}
	h.must(t, CmdAddJoinToken, AddJoinToken{Token: tok, Time: t0})
	if r := h.apply(t, CmdAddJoinToken, AddJoinToken{Token: tok, Time: t0}); !errors.Is(r.Err, ErrInvalid) {
		t.Fatalf("AddJoinToken with a taken id = %v; want refused", r.Err)
	}

	use := func(id, secret string, at time.Time) error {
		return h.apply(t, CmdUseJoinToken, UseJoinToken{ID: id, SecretHash: secretHash(secret), Node: "n9", Time: at}).Err
	}
	for _, tc := range []struct {
		name, id, secret string
		at               time.Time
		want             error
	}{
		{"wrong secret", "abc", "guess", t0.Add(time.Minute), ErrJoinToken},
		{"unknown id", "abd", "s3cret", t0.Add(time.Minute), ErrJoinToken},
		{"first use", "abc", "s3cret", t0.Add(time.Minute), nil},
		{"expired", "abc", "s3cret", t0.Add(time.Hour), ErrJoinToken},
		{"second use", "abc", "s3cret", t0.Add(2 * time.Minute), nil},
		{"used up", "abc", "s3cret", t0.Add(3 * time.Minute), ErrJoinToken},
	} {
		if err := use(tc.id, tc.secret, tc.at); !errors.Is(err, tc.want) && err != tc.want {
			t.Errorf("%s: UseJoinToken = %v; want %v", tc.name, err, tc.want)
		}
	}
	if got := h.s.View().Security().JoinTokens; len(got) != 0 {
		t.Errorf("tokens after both uses: %+v; want none", got)
	}

	h.must(t, CmdRevokeNode, RevokeNode{Name: "n2", Time: t0.Add(time.Hour)})
	if at, ok := h.s.View().Security().RevokedAt("n2"); !ok || !at.Equal(t0.Add(time.Hour)) {
		t.Errorf("RevokedAt(n2) = %v, %v", at, ok)
	}
	if _, ok := h.s.View().Security().RevokedAt("n3"); ok {
		t.Errorf("n3 revoked without a RevokeNode")
	}
	if r := h.apply(t, CmdSetGossipKeys, SetGossipKeys{Keys: [][]byte{[]byte("short")}, Time: t0}); !errors.Is(r.Err, ErrInvalid) {
		t.Errorf("SetGossipKeys of 5 bytes = %v; want refused", r.Err)
	}
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{3}, 32)
	if r := h.apply(t, CmdSetGossipKeys, SetGossipKeys{Keys: [][]byte{k2, k2}, Time: t0}); !errors.Is(r.Err, ErrInvalid) {
		t.Errorf("SetGossipKeys with a key twice = %v; want refused", r.Err)
	}
	h.must(t, CmdSetGossipKeys, SetGossipKeys{Keys: [][]byte{k2, k1}, Time: t0})
	if got := h.s.View().Security().GossipKeys; len(got) != 2 || !bytes.Equal(got[0], k2) {
		t.Errorf("gossip keys = %x; want k2 primary, then k1", got)
	}

	h.must(t, CmdRevokeUserToken, RevokeUserToken{ID: "u1", Expires: t0.Add(time.Hour), Time: t0})
	h.must(t, CmdRevokeUserToken, RevokeUserToken{ID: "u0", Expires: t0.Add(2 * time.Hour), Time: t0})
	if sec := h.s.View().Security(); !sec.UserTokenRevoked("u1") || sec.UserTokenRevoked("u2") {
		t.Errorf("revoked user tokens: %+v", sec.RevokedUserTokens)
	}
	// Expired revocations are pruned with the next one.
	h.must(t, CmdRevokeUserToken, RevokeUserToken{ID: "u2", Expires: t0.Add(3 * time.Hour), Time: t0.Add(90 * time.Minute)})
	if sec := h.s.View().Security(); sec.UserTokenRevoked("u1") || !sec.UserTokenRevoked("u0") {
		t.Errorf("after pruning: %+v", sec.RevokedUserTokens)
	}

	r := restored(t, h.s)
	if !bytes.Equal(r.View().Security().CAKey, []byte("KEY")) {
		t.Errorf("restored CA key = %q", r.View().Security().CAKey)
	}
}
