package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Bounds of the security record.
const (
	// MaxJoinTokens bounds the live join tokens; expired and used-up ones
	// are pruned whenever a token is added.
	MaxJoinTokens = 256
	// MaxRevocations bounds the revoked nodes kept, and the revoked user
	// tokens not yet expired.
	MaxRevocations = 4096
	// maxPEMBytes bounds the CA's certificate and key.
	maxPEMBytes = 16 << 10
	// maxTokenIDBytes bounds a join token's id.
	maxTokenIDBytes = 64
	// secretHashBytes is a SHA-256.
	secretHashBytes = 32
	// tokenKeyBytes is the user token key's size.
	tokenKeyBytes = 32
)

// ErrJoinToken is a join token that is unknown, expired, used up or whose
// secret does not match. Which of these it was is not said, to whoever
// presents one.
var ErrJoinToken = errors.New("join token is not valid (unknown, expired or used up)")

// SetClusterCA records the cluster's CA and gossip key. It is proposed
// once, by the first leader that holds the CA's key; later proposals are
// refused, so the CA of a running cluster cannot be swapped through the
// log.
type SetClusterCA struct {
	CACert    []byte `msgpack:"ca_cert"`
	CAKey     []byte `msgpack:"ca_key"`
	GossipKey []byte `msgpack:"gossip_key"`
	// TokenKey signs user tokens; the leader that records the CA draws it.
	TokenKey []byte    `msgpack:"token_key"`
	Time     time.Time `msgpack:"time"`
}

// RevokeUserToken refuses user token ID until it expires.
type RevokeUserToken struct {
	ID      string    `msgpack:"id"`
	Expires time.Time `msgpack:"expires"`
	Time    time.Time `msgpack:"time"`
}

// AddJoinToken adds a join token (its secret's hash only).
type AddJoinToken struct {
	Token cluster.JoinToken `msgpack:"token"`
	Time  time.Time         `msgpack:"time"`
}

// UseJoinToken spends one use of a join token for node Node, at the
// leader-stamped Time. It fails with ErrJoinToken unless the token exists,
// has not expired at Time, has a use left and SecretHash matches: the
// leader signs the node's certificate only after this applied.
type UseJoinToken struct {
	ID         string    `msgpack:"id"`
	SecretHash []byte    `msgpack:"secret_hash"`
	Node       string    `msgpack:"node"`
	Time       time.Time `msgpack:"time"`
}

// RevokeNode refuses node Name's certificates issued before Time.
type RevokeNode struct {
	Name string    `msgpack:"name"`
	Time time.Time `msgpack:"time"`
}

// SetGossipKeys replaces the gossip keyring (rotation: install a key,
// make it primary, remove the old one), the primary key first.
type SetGossipKeys struct {
	Keys [][]byte  `msgpack:"keys"`
	Time time.Time `msgpack:"time"`
}

// MaxGossipKeys bounds the gossip keyring.
const MaxGossipKeys = 8

func (s *State) setClusterCA(c SetClusterCA) Result {
	if s.security != nil && len(s.security.CACert) > 0 {
		if bytes.Equal(s.security.CACert, c.CACert) {
			return Result{} // a new leader proposing what is there already
		}
		return Result{Err: fmt.Errorf("set cluster CA: %w: the cluster has a CA already", ErrInvalid)}
	}
	if err := validateCA(c.CACert, c.CAKey); err != nil {
		return Result{Err: fmt.Errorf("set cluster CA: %w: %w", ErrInvalid, err)}
	}
	if err := validateGossipKey(c.GossipKey); err != nil {
		return Result{Err: fmt.Errorf("set cluster CA: %w: %w", ErrInvalid, err)}
	}
	if len(c.TokenKey) != tokenKeyBytes {
		return Result{Err: fmt.Errorf("set cluster CA: %w: token_key: %d bytes, want %d", ErrInvalid, len(c.TokenKey), tokenKeyBytes)}
	}
	sec := s.security.Clone()
	if sec == nil {
		sec = &cluster.Security{}
	}
	sec.CACert, sec.CAKey = slices.Clone(c.CACert), slices.Clone(c.CAKey)
	sec.GossipKeys = [][]byte{slices.Clone(c.GossipKey)}
	sec.TokenKey = slices.Clone(c.TokenKey)
	s.security = canonSecurity(sec)
	return Result{}
}

func validateCA(cert, key []byte) error {
	switch {
	case len(cert) == 0 || len(cert) > maxPEMBytes:
		return fmt.Errorf("ca_cert: %d bytes, want 1 to %d", len(cert), maxPEMBytes)
	case len(key) == 0 || len(key) > maxPEMBytes:
		return fmt.Errorf("ca_key: %d bytes, want 1 to %d", len(key), maxPEMBytes)
	}
	return nil
}

func validateGossipKey(k []byte) error {
	switch len(k) {
	case 16, 24, 32:
		return nil
	}
	return fmt.Errorf("gossip_key: %d bytes, want 16, 24 or 32", len(k))
}

func validateGossipKeys(keys [][]byte) error {
	if len(keys) == 0 || len(keys) > MaxGossipKeys {
		return fmt.Errorf("gossip_keys: %d keys, want 1 to %d", len(keys), MaxGossipKeys)
	}
	for i, k := range keys {
		if err := validateGossipKey(k); err != nil {
			return fmt.Errorf("gossip_keys[%d]: %w", i, err)
		}
		for _, other := range keys[:i] {
			if bytes.Equal(k, other) {
				return fmt.Errorf("gossip_keys[%d]: a key twice", i)
			}
		}
	}
	return nil
}

func validateToken(t cluster.JoinToken) error {
	switch {
	case t.ID == "" || len(t.ID) > maxTokenIDBytes || strings.ContainsAny(t.ID, ".@ \n"):
		return fmt.Errorf("id %.64q: want 1 to %d bytes without '.', '@' or spaces", t.ID, maxTokenIDBytes)
	case len(t.SecretHash) != secretHashBytes:
		return fmt.Errorf("secret_hash: %d bytes, want %d", len(t.SecretHash), secretHashBytes)
	case t.UsesLeft < 1:
		return fmt.Errorf("uses_left %d: want at least 1", t.UsesLeft)
	case !t.Expires.After(t.Created):
		return fmt.Errorf("expires %s: want after created %s", t.Expires, t.Created)
	}
	return nil
}

// needCA refuses what (a command that needs the cluster's CA) while the
// state holds none.
func (s *State) needCA(what string) error {
	if s.security == nil || len(s.security.CACert) == 0 {
		return fmt.Errorf("%s: %w: the cluster has no CA in its state yet", what, ErrInvalid)
	}
	return nil
}

func (s *State) addJoinToken(c AddJoinToken) Result {
	if err := s.needCA("add join token"); err != nil {
		return Result{Err: err}
	}
	if err := validateToken(c.Token); err != nil {
		return Result{Err: fmt.Errorf("add join token: %w: %w", ErrInvalid, err)}
	}
	sec := s.security.Clone()
	// Prune what can never be used again, as of the command's time.
	sec.JoinTokens = slices.DeleteFunc(sec.JoinTokens, func(t cluster.JoinToken) bool {
		return t.UsesLeft < 1 || !c.Time.Before(t.Expires)
	})
	i, found := findToken(sec.JoinTokens, c.Token.ID)
	if found {
		return Result{Err: fmt.Errorf("add join token %s: %w: the id is taken", c.Token.ID, ErrInvalid)}
	}
	if len(sec.JoinTokens) >= MaxJoinTokens {
		return Result{Err: fmt.Errorf("add join token: %w: %d live tokens already, at most %d", ErrInvalid, len(sec.JoinTokens), MaxJoinTokens)}
	}
	t := c.Token
	t.SecretHash = slices.Clone(t.SecretHash)
	sec.JoinTokens = slices.Insert(sec.JoinTokens, i, t)
	s.security = canonSecurity(sec)
	return Result{}
}

func (s *State) useJoinToken(c UseJoinToken) Result {
	if s.security == nil {
		return Result{Err: ErrJoinToken}
	}
	i, ok := findToken(s.security.JoinTokens, c.ID)
	if !ok {
		return Result{Err: ErrJoinToken}
	}
	t := s.security.JoinTokens[i]
	if !bytes.Equal(t.SecretHash, c.SecretHash) || t.UsesLeft < 1 || !c.Time.Before(t.Expires) {
		return Result{Err: ErrJoinToken}
	}
	if !cluster.ValidNodeName(c.Node) {
		return Result{Err: fmt.Errorf("use join token: %w: node name %.64q", ErrInvalid, c.Node)}
	}
	sec := s.security.Clone()
	if sec.JoinTokens[i].UsesLeft--; sec.JoinTokens[i].UsesLeft == 0 {
		sec.JoinTokens = slices.Delete(sec.JoinTokens, i, i+1)
	}
	s.security = canonSecurity(sec)
	return Result{}
}

func (s *State) revokeNode(c RevokeNode) Result {
	if !cluster.ValidNodeName(c.Name) {
		return Result{Err: fmt.Errorf("revoke node: %w: name %.64q", ErrInvalid, c.Name)}
	}
	sec := s.security.Clone()
	if sec == nil {
		sec = &cluster.Security{}
	}
	i, found := slices.BinarySearchFunc(sec.Revoked, c.Name, func(r cluster.Revocation, n string) int { return strings.Compare(r.Name, n) })
	switch {
	case found:
		sec.Revoked[i].Time = c.Time // revoked again: what was issued since goes too
	case len(sec.Revoked) >= MaxRevocations:
		return Result{Err: fmt.Errorf("revoke node %s: %w: %d nodes revoked already, at most %d", c.Name, ErrInvalid, len(sec.Revoked), MaxRevocations)}
	default:
		sec.Revoked = slices.Insert(sec.Revoked, i, cluster.Revocation{Name: c.Name, Time: c.Time})
	}
	s.security = canonSecurity(sec)
	return Result{}
}

func (s *State) setGossipKeys(c SetGossipKeys) Result {
	if err := s.needCA("set gossip key"); err != nil {
		return Result{Err: err}
	}
	if err := validateGossipKeys(c.Keys); err != nil {
		return Result{Err: fmt.Errorf("set gossip keys: %w: %w", ErrInvalid, err)}
	}
	sec := s.security.Clone()
	sec.GossipKeys = nil
	for _, k := range c.Keys {
		sec.GossipKeys = append(sec.GossipKeys, slices.Clone(k))
	}
	s.security = canonSecurity(sec)
	return Result{}
}

func (s *State) revokeUserToken(c RevokeUserToken) Result {
	if c.ID == "" || len(c.ID) > maxTokenIDBytes {
		return Result{Err: fmt.Errorf("revoke user token: %w: id %.64q", ErrInvalid, c.ID)}
	}
	if s.security == nil || len(s.security.TokenKey) == 0 {
		return Result{Err: fmt.Errorf("revoke user token: %w: the cluster issues no user tokens", ErrInvalid)}
	}
	sec := s.security.Clone()
	sec.RevokedUserTokens = slices.DeleteFunc(sec.RevokedUserTokens, func(r cluster.RevokedUserToken) bool { return !c.Time.Before(r.Expires) })
	i, found := slices.BinarySearchFunc(sec.RevokedUserTokens, c.ID, func(r cluster.RevokedUserToken, id string) int { return strings.Compare(r.ID, id) })
	switch {
	case found:
		return Result{}
	case len(sec.RevokedUserTokens) >= MaxRevocations:
		return Result{Err: fmt.Errorf("revoke user token: %w: %d revoked tokens not yet expired, at most %d", ErrInvalid, len(sec.RevokedUserTokens), MaxRevocations)}
	}
	sec.RevokedUserTokens = slices.Insert(sec.RevokedUserTokens, i, cluster.RevokedUserToken{ID: c.ID, Expires: c.Expires})
	s.security = canonSecurity(sec)
	return Result{}
}

func findToken(ts []cluster.JoinToken, id string) (int, bool) {
	return slices.BinarySearchFunc(ts, id, func(t cluster.JoinToken, id string) int { return strings.Compare(t.ID, id) })
}

// validateSecurity checks a snapshot's security record as the commands
// would have left it.
func validateSecurity(sec *cluster.Security) error {
	if len(sec.CACert) > 0 {
		if err := validateCA(sec.CACert, sec.CAKey); err != nil {
			return err
		}
		if err := validateGossipKeys(sec.GossipKeys); err != nil {
			return err
		}
		if len(sec.TokenKey) != tokenKeyBytes {
			return fmt.Errorf("token_key: %d bytes, want %d", len(sec.TokenKey), tokenKeyBytes)
		}
	}
	if len(sec.RevokedUserTokens) > MaxRevocations {
		return fmt.Errorf("revoked_user_tokens: %d, want at most %d", len(sec.RevokedUserTokens), MaxRevocations)
	}
	for i, r := range sec.RevokedUserTokens {
		if r.ID == "" || (i > 0 && r.ID <= sec.RevokedUserTokens[i-1].ID) {
			return fmt.Errorf("revoked_user_tokens[%d]: id %.64q empty or not ascending", i, r.ID)
		}
	}
	if len(sec.JoinTokens) > MaxJoinTokens {
		return fmt.Errorf("join_tokens: %d, want at most %d", len(sec.JoinTokens), MaxJoinTokens)
	}
	for i, t := range sec.JoinTokens {
		if err := validateToken(t); err != nil {
			return fmt.Errorf("join_tokens[%d]: %w", i, err)
		}
		if i > 0 && t.ID <= sec.JoinTokens[i-1].ID {
			return fmt.Errorf("join_tokens[%d]: id %.64q not after %.64q", i, t.ID, sec.JoinTokens[i-1].ID)
		}
	}
	if len(sec.Revoked) > MaxRevocations {
		return fmt.Errorf("revoked: %d, want at most %d", len(sec.Revoked), MaxRevocations)
	}
	for i, r := range sec.Revoked {
		if !cluster.ValidNodeName(r.Name) {
			return fmt.Errorf("revoked[%d]: name %.64q", i, r.Name)
		}
		if i > 0 && r.Name <= sec.Revoked[i-1].Name {
			return fmt.Errorf("revoked[%d]: name %.64q not after %.64q", i, r.Name, sec.Revoked[i-1].Name)
		}
	}
	return nil
}

// canonSecurity makes empty lists nil, so a record encodes the same
// however it arrived.
func canonSecurity(sec *cluster.Security) *cluster.Security {
	sec.JoinTokens = nilIfEmpty(sec.JoinTokens)
	sec.Revoked = nilIfEmpty(sec.Revoked)
	sec.RevokedUserTokens = nilIfEmpty(sec.RevokedUserTokens)
	return sec
}

// Security returns the cluster's security record, or nil before the first
// leader recorded its CA. Callers must not mutate it.
func (v *View) Security() *cluster.Security { return v.security }
