package leader

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// The leader's decisions about the cluster's security state: who may
// create join tokens and on what terms, which join it lets spend a token,
// whose certificate it renews, which node root may revoke. The agent
// does the cryptography (package pki) and proposes.

// Bounds of join tokens.
const (
	DefaultJoinTokenTTL = time.Hour
	MaxJoinTokenTTL     = 7 * 24 * time.Hour
	MaxJoinTokenUses    = 1000
	// MaxTokenAddrs bounds the API addresses written into a token.
	MaxTokenAddrs = 5
)

// JoinTokenTerms are the lifetime and uses of a join token root asks for
// (`shoal join-token create`): ttlS seconds (0: DefaultJoinTokenTTL) and
// uses nodes (0: one), within the bounds.
func JoinTokenTerms(ttlS int64, uses int, c Caller) (time.Duration, int, error) {
	if c.UID != 0 {
		return 0, 0, forbidden(fmt.Errorf("create a join token: %w: only root may", cluster.ErrForbidden))
	}
	ttl := time.Duration(ttlS) * time.Second
	if ttl == 0 {
		ttl = DefaultJoinTokenTTL
	}
	if ttl < 0 || ttl > MaxJoinTokenTTL {
		return 0, 0, invalid(fmt.Errorf("ttl_s %d: want 1 to %d", ttlS, int64(MaxJoinTokenTTL/time.Second)))
	}
	n := uses
	if n == 0 {
		n = 1
	}
	if n < 0 || n > MaxJoinTokenUses {
		return 0, 0, invalid(fmt.Errorf("uses %d: want 1 to %d", uses, MaxJoinTokenUses))
	}
	return ttl, n, nil
}

// JoinAddrs are the API addresses a token names: the leader's own (self)
// first, then other live nodes', so that a joining node finds one that
// answers; MaxTokenAddrs at most.
func JoinAddrs(self string, nodes []*cluster.Node) []string {
	addrs := []string{self}
	for _, n := range nodes {
		if len(addrs) >= MaxTokenAddrs {
			break
		}
		if n.Status == cluster.NodeUp && n.APIAddr != "" && !slices.Contains(addrs, n.APIAddr) {
			addrs = append(addrs, n.APIAddr)
		}
	}
	return addrs
}

// TokenMatches is the cheap check of a join token before it is spent
// through the log: token id exists, its secret's hash is secretHash
// (compared in constant time), it has uses left and has not expired at
// now.
func TokenMatches(sec *cluster.Security, id string, secretHash []byte, now time.Time) bool {
	if sec == nil {
		return false
	}
	for _, t := range sec.JoinTokens {
		if t.ID == id {
			return subtle.ConstantTimeCompare(t.SecretHash, secretHash) == 1 && t.UsesLeft > 0 && now.Before(t.Expires)
		}
	}
	return false
}

// AdmitJoin says whether a node may join as name with token id (its
// secret hashed to secretHash) at now: the token must match (else the
// request is turned away before anything is written to the log, so that
// strangers cannot make the cluster do work), and name be neither a node
// up in the cluster nor a revoked one.
func AdmitJoin(v *fsm.View, id string, secretHash []byte, name string, now time.Time) error {
	if !TokenMatches(v.Security(), id, secretHash, now) {
		return cluster.Mark(cluster.ErrUnauthenticated, fsm.ErrJoinToken)
	}
	if n, ok := v.Node(name); ok && n.Status == cluster.NodeUp {
		return conflict(fmt.Errorf("join as %s: a node of that name is up in the cluster; choose another --name", name))
	}
	if _, revoked := v.Security().RevokedAt(name); revoked {
		return conflict(fmt.Errorf("join as %s: that node's certificates were revoked; join under another --name", name))
	}
	return nil
}

// MayRenew says whether the leader (self) signs node name's next
// certificate: not once its certificates were revoked (the leader's own
// excepted).
func MayRenew(v *fsm.View, name, self string) error {
	if _, revoked := v.Security().RevokedAt(name); revoked && name != self {
		return forbidden(fmt.Errorf("renew %s: %w: its certificates were revoked", name, cluster.ErrForbidden))
	}
	return nil
}

// MayRevoke says whether c may revoke node name's certificates (`shoal
// node revoke`): root, and not those of the leader (self) itself.
func MayRevoke(name, self string, c Caller) error {
	if c.UID != 0 {
		return forbidden(fmt.Errorf("revoke a node: %w: only root may", cluster.ErrForbidden))
	}
	if name == self {
		return invalid(fmt.Errorf("revoke %s: that is the leader itself; revoke it through another node after it hands leadership over (shoal leave)", name))
	}
	return nil
}

// ErrNoClusterCA: the cluster's state holds no CA (and so no token key or
// gossip keyring of its own), so nothing can be signed.
var ErrNoClusterCA = errors.New("the cluster has no CA in its replicated state (the cluster runs --insecure, or its first leader had no CA key)")

// DefaultUserTokenTTL is a user token's lifetime when none is asked for.
const DefaultUserTokenTTL = 24 * time.Hour

// UserTokenTerms says whether c may create a user token (`shoal token
// create --user U`: root only, as Slurm's `scontrol token`; a token for U,
// whoever asks for it, can act only as U, and a node proves no user) and
// with which key and lifetime: the cluster's token key from sec, and ttlS
// seconds (0: DefaultUserTokenTTL; pki refuses a bad one as it signs).
func UserTokenTerms(sec *cluster.Security, ttlS int64, c Caller) (key []byte, ttl time.Duration, err error) {
	if c.UID != 0 {
		return nil, 0, forbidden(fmt.Errorf("create a user token: %w: only root may", cluster.ErrForbidden))
	}
	ttl = time.Duration(ttlS) * time.Second
	if ttl == 0 {
		ttl = DefaultUserTokenTTL
	}
	key, err = tokenKey(sec)
	return key, ttl, err
}

// RevokeUserTokenKey says whether c may revoke a user token (root only)
// and returns the key that proves the token is one of the cluster's.
func RevokeUserTokenKey(sec *cluster.Security, c Caller) ([]byte, error) {
	if c.UID != 0 {
		return nil, forbidden(fmt.Errorf("revoke a user token: %w: only root may", cluster.ErrForbidden))
	}
	return tokenKey(sec)
}

// tokenKey is the cluster's user token key, or a conflict when the state
// holds none.
func tokenKey(sec *cluster.Security) ([]byte, error) {
	if sec == nil || len(sec.TokenKey) == 0 {
		return nil, conflict(ErrNoClusterCA)
	}
	return sec.TokenKey, nil
}

// MayReadKeyring says whether c may list the gossip keyring: a proven
// root, since the keys are secrets.
func MayReadKeyring(c Caller) error {
	if !c.Proven || c.UID != 0 {
		return forbidden(fmt.Errorf("list the gossip keyring: %w: only root may", cluster.ErrForbidden))
	}
	return nil
}

// MayChangeKeyring says whether c may change the gossip keyring (`shoal
// keyring install|use|remove`): root only.
func MayChangeKeyring(c Caller) error {
	if c.UID != 0 {
		return forbidden(fmt.Errorf("change the gossip keyring: %w: only root may", cluster.ErrForbidden))
	}
	return nil
}

// ClusterKeyring is the gossip keyring a change starts from: the
// cluster's, or a conflict when its state holds none.
func ClusterKeyring(sec *cluster.Security) ([][]byte, error) {
	if sec == nil || len(sec.GossipKeys) == 0 {
		return nil, conflict(ErrNoClusterCA)
	}
	return sec.GossipKeys, nil
}
