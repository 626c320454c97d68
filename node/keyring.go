package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/pki"
)

// The gossip keyring is replicated (cluster.Security.GossipKeys): root
// changes it through the leader in three steps (install a new key, use it
// as the primary, remove the old one), and every agent follows the
// replicated keyring into its own gossip. Raft does not depend on gossip,
// so an agent that was down during a rotation learns the new keyring from
// the log when it comes back, even after its old key was removed.

// keyringLoop makes this agent's gossip keyring and its key file follow
// the replicated keyring.
func (a *Agent) keyringLoop(ctx context.Context) {
	if a.sec.bundle == nil {
		return
	}
	var applied [][]byte
	for {
		v := a.view() // a worker's comes from a server (follow.go)
		if sec := v.Security(); sec != nil && len(sec.GossipKeys) > 0 && !sameKeys(sec.GossipKeys, applied) {
			if err := a.gossip.SetKeys(sec.GossipKeys); err != nil {
				a.log.Warn("follow the cluster's gossip keyring", "err", err)
			} else {
				applied = sec.GossipKeys
				if err := pki.WriteGossipKeys(a.cfg.tlsPaths().GossipKey, applied); err != nil {
					a.log.Warn("write the gossip keyring", "err", err)
				}
				a.log.Info("gossip keyring follows the cluster's", "keys", len(applied))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		case <-time.After(memberPoll): // a worker's replica never changes
		}
	}
}

func sameKeys(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y []byte) bool { return bytes.Equal(x, y) })
}

func encodeKeys(keys [][]byte) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, pki.EncodeGossipKey(k))
	}
	return out
}

// Keyring is the gossip keyring, the cluster's and this agent's (root
// only: the keys are secrets).
func (b apiBackend) Keyring(who cluster.Identity) (api.Keyring, uint64, error) {
	if !who.Proven || who.UID != 0 {
		return api.Keyring{}, 0, forbidden(fmt.Errorf("list the gossip keyring: %w: only root may", ErrForbidden))
	}
	v := b.a.view()
	out := api.Keyring{Cluster: []string{}, Local: encodeKeys(b.a.gossip.Keys())}
	if sec := v.Security(); sec != nil {
		out.Cluster = encodeKeys(sec.GossipKeys)
	}
	return out, v.Index, nil
}

// ChangeKeyring is `shoal keyring install|use|remove KEY` (root, leader).
func (b apiBackend) ChangeKeyring(ctx context.Context, req api.KeyringRequest, who cluster.Identity) (api.Keyring, error) {
	if who.UID != 0 {
		return api.Keyring{}, forbidden(fmt.Errorf("change the gossip keyring: %w: only root may", ErrForbidden))
	}
	key, err := pki.ParseGossipKey(req.Key)
	if err != nil {
		return api.Keyring{}, invalid(fmt.Errorf("key: %w", err))
	}
	sec := b.a.state.View().Security()
	if sec == nil || len(sec.GossipKeys) == 0 {
		return api.Keyring{}, conflict(errNoClusterCA)
	}
	keys, err := changeKeyring(sec.GossipKeys, req.Op, key)
	if err != nil {
		return api.Keyring{}, invalid(err)
	}
	res, err := b.a.apply(ctx, fsm.CmdSetGossipKeys, fsm.SetGossipKeys{Keys: keys, Time: time.Now()})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return api.Keyring{}, fsmError(err)
	}
	b.a.log.Info("changed the gossip keyring", "op", req.Op, "keys", len(keys), "by", who.User)
	return api.Keyring{Cluster: encodeKeys(keys)}, nil
}

// changeKeyring is the pure step from one keyring to the next.
func changeKeyring(keys [][]byte, op string, key []byte) ([][]byte, error) {
	i := slices.IndexFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) })
	switch op {
	case "install":
		if i >= 0 {
			return nil, errors.New("install: the key is in the keyring already")
		}
		if len(keys) >= fsm.MaxGossipKeys {
			return nil, fmt.Errorf("install: the keyring holds %d keys, at most %d: remove one first", len(keys), fsm.MaxGossipKeys)
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
