package cluster

import (
	"cmp"
	"slices"
	"time"
)

// Security is the cluster's replicated trust material: the CA that
// certifies nodes (its key too, so whichever node leads can sign), the
// gossip key, the join tokens new nodes bring, and the revoked nodes.
// Every raft server holds it: DESIGN's trust boundary says a certified
// node is trusted with the cluster.
type Security struct {
	// CACert and CAKey are PEM.
	CACert []byte `msgpack:"ca_cert"`
	CAKey  []byte `msgpack:"ca_key"`
	// GossipKeys is the gossip keyring, the primary key (the one messages
	// are sent with) first; every key in it is accepted.
	GossipKeys [][]byte `msgpack:"gossip_keys"`
	// TokenKey signs user tokens (pki.IssueUserToken).
	TokenKey []byte `msgpack:"token_key"`
	// JoinTokens are the live tokens, in ascending ID order.
	JoinTokens []JoinToken `msgpack:"join_tokens"`
	// Revoked are the nodes whose certificates were revoked, in ascending
	// name order.
	Revoked []Revocation `msgpack:"revoked"`
	// RevokedUserTokens are user tokens refused before they expire, in
	// ascending ID order; pruned once expired.
	RevokedUserTokens []RevokedUserToken `msgpack:"revoked_user_tokens"`
}

// RevokedUserToken is a user token refused until it expires anyway.
type RevokedUserToken struct {
	ID      string    `msgpack:"id"`
	Expires time.Time `msgpack:"expires"`
}

// JoinToken lets a new node get a certificate. Only a hash of its secret
// is replicated: the secret is shown once, to whoever created it.
type JoinToken struct {
	ID         string    `msgpack:"id"`
	SecretHash []byte    `msgpack:"secret_hash"`
	Created    time.Time `msgpack:"created"`
	Expires    time.Time `msgpack:"expires"`
	// UsesLeft counts down; a token at 0 is removed.
	UsesLeft int `msgpack:"uses_left"`
}

// Revocation refuses the certificates of node Name issued before Time; a
// node certified again afterwards (with a new join token) is accepted.
type Revocation struct {
	Name string    `msgpack:"name"`
	Time time.Time `msgpack:"time"`
}

// Clone returns a deep copy.
func (s *Security) Clone() *Security {
	if s == nil {
		return nil
	}
	c := *s
	c.CACert, c.CAKey = slices.Clone(s.CACert), slices.Clone(s.CAKey)
	c.GossipKeys = cloneEach(s.GossipKeys, func(k *[]byte) { *k = slices.Clone(*k) })
	c.TokenKey = slices.Clone(s.TokenKey)
	c.RevokedUserTokens = slices.Clone(s.RevokedUserTokens)
	c.JoinTokens = cloneEach(s.JoinTokens, func(t *JoinToken) { t.SecretHash = slices.Clone(t.SecretHash) })
	c.Revoked = slices.Clone(s.Revoked)
	return &c
}

// RevokedAt returns when node name's certificates were revoked, if they
// were.
func (s *Security) RevokedAt(name string) (time.Time, bool) {
	if s == nil {
		return time.Time{}, false
	}
	i, ok := slices.BinarySearchFunc(s.Revoked, name, func(r Revocation, n string) int { return cmp.Compare(r.Name, n) })
	if !ok {
		return time.Time{}, false
	}
	return s.Revoked[i].Time, true
}

// UserTokenRevoked reports whether user token id was revoked.
func (s *Security) UserTokenRevoked(id string) bool {
	if s == nil {
		return false
	}
	_, ok := slices.BinarySearchFunc(s.RevokedUserTokens, id, func(r RevokedUserToken, id string) int { return cmp.Compare(r.ID, id) })
	return ok
}
