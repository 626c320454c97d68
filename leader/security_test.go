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
