package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/pki"
)

// keyringFollower is the keyring loop (pki.KeyringFollower) over this
// agent's replica and gossip.
func (c *core) keyringFollower() pki.KeyringFollower {
	return pki.KeyringFollower{Cluster: clusterKeyring{c}, Gossip: c.gossip, Path: c.cfg.tlsPaths().GossipKey, Log: c.log,
		// A worker's view comes from a server (follow.go): its own
		// replica's change never comes.
		Recheck: memberPoll, Clock: clock.Wall{}}
}

// clusterKeyring is pki.ClusterKeyring over the FSM.
type clusterKeyring struct{ c *core }

func (c clusterKeyring) GossipKeys() ([][]byte, <-chan struct{}) {
	v := c.c.view()
	if sec := v.Security(); sec != nil {
		return sec.GossipKeys, v.Changed()
	}
	return nil, v.Changed()
}

func encodeKeys(keys [][]byte) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, pki.EncodeGossipKey(k))
	}
	return out
}

// Keyring is the gossip keyring, the cluster's and this agent's
// (leader.MayReadKeyring: root only, the keys are secrets).
func (s securityAPI) Keyring(who cluster.Identity) (api.Keyring, uint64, error) {
	if err := leader.MayReadKeyring(leader.Caller{Identity: who}); err != nil {
		return api.Keyring{}, 0, err
	}
	v := s.view()
	out := api.Keyring{Cluster: []string{}, Local: encodeKeys(s.gossip.Keys())}
	if sec := v.Security(); sec != nil {
		out.Cluster = encodeKeys(sec.GossipKeys)
	}
	return out, v.Index, nil
}

// ChangeKeyring is `shoal keyring install|use|remove KEY` (root, leader).
func (s securityAPI) ChangeKeyring(ctx context.Context, req api.KeyringRequest, who cluster.Identity) (api.Keyring, error) {
	if err := leader.MayChangeKeyring(leader.Caller{Identity: who}); err != nil {
		return api.Keyring{}, err
	}
	key, err := pki.ParseGossipKey(req.Key)
	if err != nil {
		return api.Keyring{}, invalid(fmt.Errorf("key: %w", err))
	}
	current, err := leader.ClusterKeyring(s.state.View().Security())
	if err != nil {
		return api.Keyring{}, err
	}
	keys, err := pki.ChangeKeyring(current, req.Op, key, fsm.MaxGossipKeys)
	if err != nil {
		return api.Keyring{}, invalid(err)
	}
	res, err := s.apply(ctx, fsm.CmdSetGossipKeys, fsm.SetGossipKeys{Keys: keys, Time: time.Now()})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return api.Keyring{}, fsmError(err)
	}
	s.log.Info("changed the gossip keyring", "op", req.Op, "keys", len(keys), "by", who.User)
	return api.Keyring{Cluster: encodeKeys(keys)}, nil
}
