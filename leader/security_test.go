package leader

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestJoinTokenTerms: root alone creates join tokens, an hour and one use
// unless asked, within the bounds.
func TestJoinTokenTerms(t *testing.T) {
	root := Caller{Identity: cluster.Identity{UID: 0, Proven: true}}
	tests := []struct {
		ttlS      int64
		uses      int
		c         Caller
		ttl       time.Duration
		n         int
		kind      error
		inRefusal string
	}{
		{0, 0, root, time.Hour, 1, nil, ""},
		{60, 3, root, time.Minute, 3, nil, ""},
		{7 * 24 * 3600, 1000, root, 7 * 24 * time.Hour, 1000, nil, ""},
		{0, 0, Caller{Identity: cluster.Identity{UID: 1000, Proven: true}}, 0, 0, cluster.ErrForbidden, "create a join token: permission denied: only root may"},
		{-1, 0, root, 0, 0, cluster.ErrInvalid, "ttl_s -1: want 1 to 604800"},
		{7*24*3600 + 1, 0, root, 0, 0, cluster.ErrInvalid, "ttl_s 604801"},
		{0, -2, root, 0, 0, cluster.ErrInvalid, "uses -2: want 1 to 1000"},
		{0, 1001, root, 0, 0, cluster.ErrInvalid, "uses 1001"},
	}
	for _, tt := range tests {
		ttl, n, err := JoinTokenTerms(tt.ttlS, tt.uses, tt.c)
		if tt.kind != nil {
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.inRefusal) {
				t.Errorf("JoinTokenTerms(%d, %d) err = %v; want %v with %q", tt.ttlS, tt.uses, err, tt.kind, tt.inRefusal)
			}
			continue
		}
		if err != nil || ttl != tt.ttl || n != tt.n {
			t.Errorf("JoinTokenTerms(%d, %d) = %v, %d, %v; want %v, %d", tt.ttlS, tt.uses, ttl, n, err, tt.ttl, tt.n)
		}
	}
}

// TestJoinAddrs: the leader's own address first, then live nodes', each
// once, MaxTokenAddrs at most.
func TestJoinAddrs(t *testing.T) {
	nodes := []*cluster.Node{
		{Name: "n1", Status: cluster.NodeUp, APIAddr: "10.0.0.1:7000"},
		{Name: "n2", Status: cluster.NodeDown, APIAddr: "10.0.0.2:7000"},
		{Name: "n3", Status: cluster.NodeUp},
		{Name: "n4", Status: cluster.NodeUp, APIAddr: "10.0.0.4:7000"},
	}
	for i := 5; i < 12; i++ {
		nodes = append(nodes, &cluster.Node{Name: "m", Status: cluster.NodeUp, APIAddr: "10.0.1." + string(rune('0'+i%10)) + ":7000"})
	}
	got := JoinAddrs("10.0.0.1:7000", nodes)
	want := []string{"10.0.0.1:7000", "10.0.0.4:7000", "10.0.1.5:7000", "10.0.1.6:7000", "10.0.1.7:7000"}
	if !slices.Equal(got, want) {
		t.Errorf("JoinAddrs = %v; want %v", got, want)
	}
}

// TestAdmitJoin: a join spends a token only if it matches, and never for
// a name up in the cluster or revoked; renewals and revocations likewise.
func TestAdmitJoin(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	h := &harness{s: fsm.New(), now: now}
	if _, err := h.apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: cluster.Node{Name: "up1", CPUs: 8}, Time: now}); err != nil {
		t.Fatal(err)
	}
	v := h.s.View()
	sec := &cluster.Security{
		JoinTokens: []cluster.JoinToken{
			{ID: "t1", SecretHash: []byte("hash1"), Expires: now.Add(time.Hour), UsesLeft: 1},
			{ID: "spent", SecretHash: []byte("hash2"), Expires: now.Add(time.Hour)},
			{ID: "old", SecretHash: []byte("hash3"), Expires: now, UsesLeft: 1},
		},
		Revoked: []cluster.Revocation{{Name: "gone", Time: now.Add(-time.Hour)}},
	}
	sv := fsm.PartialView(v.Index, nil, v.Nodes(), nil, sec, nil)
	tests := []struct {
		id, name string
		hash     string
		kind     error
	}{
		{"t1", "n9", "hash1", nil},
		{"t1", "n9", "hash2", cluster.ErrUnauthenticated},
		{"t9", "n9", "hash1", cluster.ErrUnauthenticated},
		{"spent", "n9", "hash2", cluster.ErrUnauthenticated},
		{"old", "n9", "hash3", cluster.ErrUnauthenticated}, // expires at now
		{"t1", "up1", "hash1", cluster.ErrConflict},
		{"t1", "gone", "hash1", cluster.ErrConflict},
	}
	for _, tt := range tests {
		err := AdmitJoin(sv, tt.id, []byte(tt.hash), tt.name, now)
		if (tt.kind == nil) != (err == nil) || (tt.kind != nil && !errors.Is(err, tt.kind)) {
			t.Errorf("AdmitJoin(%s, %s, %s) = %v; want %v", tt.id, tt.name, tt.hash, err, tt.kind)
		}
	}
	if TokenMatches(nil, "t1", []byte("hash1"), now) {
		t.Error("a token matched with no security state")
	}
	if err := MayRenew(sv, "gone", "leader"); !errors.Is(err, cluster.ErrForbidden) {
		t.Errorf("MayRenew(gone) = %v; want permission denied", err)
	}
	if err := MayRenew(sv, "gone", "gone"); err != nil {
		t.Errorf("MayRenew of the leader itself = %v; want nil", err)
	}
	if err := MayRenew(sv, "up1", "leader"); err != nil {
		t.Errorf("MayRenew(up1) = %v; want nil", err)
	}
	root := Caller{Identity: cluster.Identity{UID: 0, Proven: true}}
	if err := MayRevoke("n2", "n1", Caller{Identity: cluster.Identity{UID: 1000, Proven: true}}); !errors.Is(err, cluster.ErrForbidden) {
		t.Errorf("a user's revoke = %v; want permission denied", err)
	}
	if err := MayRevoke("n1", "n1", root); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("revoking the leader = %v; want invalid", err)
	}
	if err := MayRevoke("n2", "n1", root); err != nil {
		t.Errorf("root's revoke = %v; want nil", err)
	}
}

// TestUserTokenAndKeyringRights: root alone creates and revokes user
// tokens and changes the gossip keyring, only a proven root reads it, and
// each needs the cluster's keys in the state (a conflict before there are
// any); the refusals name what was refused.
func TestUserTokenAndKeyringRights(t *testing.T) {
	root := Caller{Identity: cluster.Identity{UID: 0, Proven: true}}
	unproven := Caller{Identity: cluster.Identity{UID: 0}}
	user := Caller{Identity: cluster.Identity{User: "ada", UID: 1000, Proven: true}}
	sec := &cluster.Security{TokenKey: []byte("k"), GossipKeys: [][]byte{[]byte("g")}}
	empty := &cluster.Security{}
	tests := []struct {
		name string
		err  error
		kind error // nil: allowed
		says string
	}{
		{"create: root", func() error { _, _, err := UserTokenTerms(sec, 0, root); return err }(), nil, ""},
		{"create: user", func() error { _, _, err := UserTokenTerms(sec, 0, user); return err }(), cluster.ErrForbidden, "create a user token: permission denied: only root may"},
		{"create: no key", func() error { _, _, err := UserTokenTerms(empty, 0, root); return err }(), cluster.ErrConflict, "the cluster has no CA"},
		{"create: no state", func() error { _, _, err := UserTokenTerms(nil, 0, root); return err }(), cluster.ErrConflict, "the cluster has no CA"},
		{"revoke: root", func() error { _, err := RevokeUserTokenKey(sec, root); return err }(), nil, ""},
		{"revoke: user", func() error { _, err := RevokeUserTokenKey(sec, user); return err }(), cluster.ErrForbidden, "revoke a user token: permission denied: only root may"},
		{"revoke: user, no key", func() error { _, err := RevokeUserTokenKey(nil, user); return err }(), cluster.ErrForbidden, "only root may"},
		{"revoke: no key", func() error { _, err := RevokeUserTokenKey(empty, root); return err }(), cluster.ErrConflict, "the cluster has no CA"},
		{"read keyring: root", MayReadKeyring(root), nil, ""},
		{"read keyring: unproven root", MayReadKeyring(unproven), cluster.ErrForbidden, "list the gossip keyring: permission denied: only root may"},
		{"read keyring: user", MayReadKeyring(user), cluster.ErrForbidden, "only root may"},
		{"change keyring: root", MayChangeKeyring(root), nil, ""},
		{"change keyring: user", MayChangeKeyring(user), cluster.ErrForbidden, "change the gossip keyring: permission denied: only root may"},
		{"keyring: none in the state", func() error { _, err := ClusterKeyring(empty); return err }(), cluster.ErrConflict, "the cluster has no CA"},
		{"keyring: no state", func() error { _, err := ClusterKeyring(nil); return err }(), cluster.ErrConflict, "the cluster has no CA"},
	}
	for _, tt := range tests {
		if tt.kind == nil {
			if tt.err != nil {
				t.Errorf("%s: %v; want allowed", tt.name, tt.err)
			}
			continue
		}
		if !errors.Is(tt.err, tt.kind) || !strings.Contains(tt.err.Error(), tt.says) {
			t.Errorf("%s: %v; want %v saying %q", tt.name, tt.err, tt.kind, tt.says)
		}
	}
	key, ttl, err := UserTokenTerms(sec, 0, root)
	if err != nil || string(key) != "k" || ttl != DefaultUserTokenTTL {
		t.Errorf("UserTokenTerms(ttl 0) = %q, %v, %v; want k, %v", key, ttl, err, DefaultUserTokenTTL)
	}
	if _, ttl, _ := UserTokenTerms(sec, 90, root); ttl != 90*time.Second {
		t.Errorf("UserTokenTerms(ttl 90) ttl = %v; want 1m30s", ttl)
	}
	if keys, err := ClusterKeyring(sec); err != nil || len(keys) != 1 || string(keys[0]) != "g" {
		t.Errorf("ClusterKeyring = %q, %v; want [g]", keys, err)
	}
}
