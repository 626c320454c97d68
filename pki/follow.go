package pki

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// The gossip keyring is replicated (cluster.Security.GossipKeys): root
// changes it through the leader in three steps (install a new key, use it
// as the primary, remove the old one), and every agent follows the
// replicated keyring into its own gossip. Raft does not depend on gossip,
// so an agent that was down during a rotation learns the new keyring from
// the log when it comes back, even after its old key was removed.

// SameKeys reports whether two keyrings hold the same keys in the same
// order (the first is the primary).
func SameKeys(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

// FollowKeyring is the keyring loop's decision: whether this agent's
// gossip should take the cluster's keyring, given the one it applied
// last. An empty cluster keyring (none recorded yet) is never taken.
func FollowKeyring(cluster, applied [][]byte) bool {
	return len(cluster) > 0 && !SameKeys(cluster, applied)
}

// ClusterKeyring is the replicated keyring as the keyring loop reads it.
type ClusterKeyring interface {
	// GossipKeys returns the cluster's keyring now (empty before one is
	// recorded) and a channel closed at the replica's next change.
	GossipKeys() (keys [][]byte, changed <-chan struct{})
}

// GossipKeyring is this agent's gossip, whose keyring the loop sets.
type GossipKeyring interface {
	SetKeys(keys [][]byte) error
}

// KeyringFollower is an agent's keyring loop: it makes its gossip keyring
// and its key file (Path) follow the replicated keyring (FollowKeyring
// decides), so a restart starts with the keys the cluster uses.
type KeyringFollower struct {
	Cluster ClusterKeyring
	Gossip  GossipKeyring
	Path    string
	Log     *slog.Logger
	// Recheck, when set, also wakes the loop every Recheck on Clock: a
	// node that stops being a raft server reads its keyring from another
	// view, and its own replica's change never comes.
	Recheck time.Duration
	Clock   Timer
}

// Run follows the cluster's keyring until ctx ends.
func (f KeyringFollower) Run(ctx context.Context) {
	var applied [][]byte
	for {
		keys, changed := f.Cluster.GossipKeys()
		applied = f.Round(keys, applied)
		var recheck <-chan time.Time
		if f.Recheck > 0 {
			recheck = f.Clock.After(f.Recheck)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-recheck:
		}
	}
}

// Round takes the cluster's keyring keys if FollowKeyring says so, and
// returns the keyring applied now.
func (f KeyringFollower) Round(keys, applied [][]byte) [][]byte {
	if !FollowKeyring(keys, applied) {
		return applied
	}
	if err := f.Gossip.SetKeys(keys); err != nil {
		f.Log.Warn("follow the cluster's gossip keyring", "err", err)
		return applied
	}
	if err := WriteGossipKeys(f.Path, keys); err != nil {
		f.Log.Warn("write the gossip keyring", "err", err)
	}
	f.Log.Info("gossip keyring follows the cluster's", "keys", len(keys))
	return keys
}

// ClusterCARecorder is the cluster as a node holding the CA's key sees
// it: whether the replicated state holds the CA, and the offer of it to
// the leader (itself, when it leads).
type ClusterCARecorder interface {
	HasClusterCA() bool
	OfferClusterCA(ctx context.Context) error
}

// CAOfferer is the loop of a node holding the CA's key (the one an
// operator ran `shoal tls init` on): every Every it offers the CA to the
// leader until the replicated state holds it, so that whichever node
// leads can sign join requests and renewals.
type CAOfferer struct {
	Cluster ClusterCARecorder
	Every   time.Duration
	Clock   Timer
	Log     *slog.Logger
}

// Run offers until the state holds the CA or ctx ends.
func (o CAOfferer) Run(ctx context.Context) {
	for !o.Cluster.HasClusterCA() {
		if err := o.Cluster.OfferClusterCA(ctx); err != nil && ctx.Err() == nil {
			o.Log.Debug("offer the cluster CA to the leader", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-o.Clock.After(o.Every):
		}
	}
}

// ChangeKeyring is the step from one keyring to the next that root asks
// for (`shoal keyring install|use|remove KEY`): install a key, use one as
// the primary, or remove one that is not. A keyring holds at most limit
// keys. keys is not modified.
func ChangeKeyring(keys [][]byte, op string, key []byte, limit int) ([][]byte, error) {
	i := slices.IndexFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) })
	switch op {
	case "install":
		if i >= 0 {
			return nil, errors.New("install: the key is in the keyring already")
		}
		if len(keys) >= limit {
			return nil, fmt.Errorf("install: the keyring holds %d keys, at most %d: remove one first", len(keys), limit)
		}
		return append(slices.Clone(keys), key), nil
	case "use":
		if i < 0 {
			return nil, errors.New("use: the key is not in the keyring: install it first, and let every node learn it")
		}
		out := [][]byte{key}
		return append(out, slices.Delete(slices.Clone(keys), i, i+1)...), nil
	case "remove":
		switch {
		case i < 0:
			return nil, errors.New("remove: the key is not in the keyring")
		case i == 0:
			return nil, errors.New("remove: the key is the primary: use another first")
		}
		return slices.Delete(slices.Clone(keys), i, i+1), nil
	}
	return nil, fmt.Errorf("op %q: want install, use or remove", op)
}
