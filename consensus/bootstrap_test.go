package consensus

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func member(id string, expect int) BootstrapMember {
	return BootstrapMember{ID: id, RaftAddr: id + ":7000", Expect: expect, Alive: true}
}

// BootstrapSet guards DESIGN "Membership and roles": --bootstrap-expect
// bootstraps safely, never two clusters from one start.
func TestBootstrapSet(t *testing.T) {
	three := func(id string) Server { return Server{ID: id, Addr: id + ":7000", Suffrage: Voter} }
	tests := []struct {
		name    string
		expect  int
		self    string
		members []BootstrapMember
		want    []Server
		ok      bool
	}{
		{name: "expect 1 alone", expect: 1, self: "a", members: []BootstrapMember{member("a", 1)},
			want: []Server{three("a")}, ok: true},
		{name: "3 of 3 met", expect: 3, self: "b",
			members: []BootstrapMember{member("c", 3), member("a", 3), member("b", 3)},
			want:    []Server{three("a"), three("b"), three("c")}, ok: true},
		{name: "only 2 of 3 met", expect: 3, self: "a",
			members: []BootstrapMember{member("a", 3), member("b", 3)}},
		{name: "a dead member does not count", expect: 3, self: "a",
			members: []BootstrapMember{member("a", 3), member("b", 3), {ID: "c", RaftAddr: "c:7000", Expect: 3}}},
		{name: "a member with another expect does not count", expect: 3, self: "a",
			members: []BootstrapMember{member("a", 3), member("b", 3), member("c", 5)}},
		{name: "a member without expect does not count", expect: 3, self: "a",
			members: []BootstrapMember{member("a", 3), member("b", 3), member("c", 0)}},
		{name: "existing raft state anywhere: join instead", expect: 3, self: "a",
			members: []BootstrapMember{member("a", 3), member("b", 3), member("c", 3),
				{ID: "d", RaftAddr: "d:7000", Alive: true, HasRaftState: true}}},
		{name: "dead member with raft state is ignored", expect: 2, self: "a",
			members: []BootstrapMember{member("a", 2), member("b", 2), {ID: "d", RaftAddr: "d:7000", HasRaftState: true}},
			want:    []Server{three("a"), three("b")}, ok: true},
		{name: "4 with expect 3: first 3 by ID bootstrap", expect: 3, self: "c",
			members: []BootstrapMember{member("d", 3), member("c", 3), member("b", 3), member("a", 3)},
			want:    []Server{three("a"), three("b"), three("c")}, ok: true},
		{name: "4 with expect 3: the fourth waits to be added", expect: 3, self: "d",
			members: []BootstrapMember{member("d", 3), member("c", 3), member("b", 3), member("a", 3)}},
		{name: "self absent from members", expect: 2, self: "z",
			members: []BootstrapMember{member("a", 2), member("b", 2)}},
		{name: "chosen member without raft address", expect: 2, self: "a",
			members: []BootstrapMember{member("a", 2), {ID: "b", Expect: 2, Alive: true}}},
		{name: "duplicate name: gossip not settled", expect: 2, self: "a",
			members: []BootstrapMember{member("a", 2), member("b", 2), member("b", 2)}},
		{name: "expect 0 never bootstraps", expect: 0, self: "a", members: []BootstrapMember{member("a", 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := BootstrapSet(tt.expect, tt.self, tt.members)
			if ok != tt.ok {
				t.Fatalf("BootstrapSet(%d, %q, ...) ok = %v; want %v", tt.expect, tt.self, ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BootstrapSet(%d, %q, ...) -want +got:\n%s", tt.expect, tt.self, diff)
			}
		})
	}
}

// TestBootstrapSetAgrees checks that every node of a start computes the
// same server set, whatever order its gossip lists members in.
func TestBootstrapSetAgrees(t *testing.T) {
	ms := []BootstrapMember{member("n4", 3), member("n2", 3), member("n9", 3), member("n1", 3), member("n7", 3)}
	var first []Server
	for i := range ms {
		rot := append(append([]BootstrapMember(nil), ms[i:]...), ms[:i]...)
		for _, self := range []string{"n1", "n2", "n4"} {
			got, ok := BootstrapSet(3, self, rot)
			if !ok {
				t.Fatalf("BootstrapSet(3, %s, rotation %d) = false; want true", self, i)
			}
			if first == nil {
				first = got
			}
			if diff := cmp.Diff(first, got); diff != "" {
				t.Errorf("self %s, rotation %d: set differs:\n%s", self, i, diff)
			}
		}
	}
}

// TestBootstrapNow: a node bootstraps only once BootstrapSet gives the
// same set on two polls in a row (DESIGN "Membership and roles": one
// cluster from --bootstrap-expect, gossip settled first).
func TestBootstrapNow(t *testing.T) {
	three := []BootstrapMember{
		{ID: "a", RaftAddr: "a:1", Expect: 3, Alive: true},
		{ID: "b", RaftAddr: "b:1", Expect: 3, Alive: true},
		{ID: "c", RaftAddr: "c:1", Expect: 3, Alive: true},
	}
	set, _ := BootstrapSet(3, "a", three)
	other := []Server{{ID: "a", Addr: "a:1", Suffrage: Voter}, {ID: "b", Addr: "b:1", Suffrage: Voter}, {ID: "d", Addr: "d:1", Suffrage: Voter}}
	tests := []struct {
		name     string
		members  []BootstrapMember
		last     []Server
		wantSet  []Server
		wantBoot bool
	}{
		{"first sight: remember", three, nil, set, false},
		{"same set again: bootstrap", three, set, set, true},
		{"a different set before: remember the new one", three, other, set, false},
		{"too few: forget", three[:2], set, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, now := BootstrapNow(3, "a", tt.members, tt.last)
			if diff := cmp.Diff(tt.wantSet, got); diff != "" || now != tt.wantBoot {
				t.Errorf("BootstrapNow = _, %v; want %v; set -want +got:\n%s", now, tt.wantBoot, diff)
			}
		})
	}
}

type fakeBootRaft struct {
	leader       string
	bootstrapped []Server
}

func (f *fakeBootRaft) HasState() bool             { return false }
func (f *fakeBootRaft) Leader() (string, string)   { return f.leader, "" }
func (f *fakeBootRaft) Bootstrap(s []Server) error { f.bootstrapped, f.leader = s, "a"; return nil }

type fakeBootPeers struct {
	members   []BootstrapMember
	announced int
}

func (f *fakeBootPeers) BootstrapMembers() []BootstrapMember     { return f.members }
func (f *fakeBootPeers) AnnounceRaftState(context.Context) error { f.announced++; return nil }

type tickClock struct{ c chan time.Time }

func (tickClock) Now() time.Time { return t0 }
func (k tickClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return k.c, func() {}
}

// TestBootstrapperRun: the loop bootstraps at its second look at a
// settled gossip view, then, seeing the leader, announces its raft state
// once and ends.
func TestBootstrapperRun(t *testing.T) {
	raft := &fakeBootRaft{}
	peers := &fakeBootPeers{members: []BootstrapMember{
		{ID: "a", RaftAddr: "a:1", Expect: 2, Alive: true},
		{ID: "b", RaftAddr: "b:1", Expect: 2, Alive: true},
	}}
	ticks := make(chan time.Time, 10)
	for range cap(ticks) {
		ticks <- t0
	}
	b := Bootstrapper{Raft: raft, Peers: peers, Self: "a", Expect: 2, Clock: tickClock{ticks},
		Log: slog.New(slog.DiscardHandler)}
	b.Run(context.Background())
	if len(raft.bootstrapped) != 2 || peers.announced != 1 {
		t.Errorf("bootstrapped %v, announced %d times; want a and b, once", raft.bootstrapped, peers.announced)
	}
	if used := cap(ticks) - len(ticks); used != 2 {
		t.Errorf("Run waited %d ticks; want 2 (remember, bootstrap, then see the leader)", used)
	}
}

// TestBootstrapperWaits: short of Expect members it bootstraps nothing
// and says it waits once per bootstrapWaitLog, not at every poll.
func TestBootstrapperWaits(t *testing.T) {
	raft := &fakeBootRaft{}
	peers := &fakeBootPeers{members: []BootstrapMember{{ID: "a", RaftAddr: "a:1", Expect: 2, Alive: true}}}
	ticks := make(chan time.Time) // each send is taken once the poll before it is done
	ctx, cancel := context.WithCancel(context.Background())
	var buf bytes.Buffer
	b := Bootstrapper{Raft: raft, Peers: peers, Self: "a", Expect: 2, Clock: tickClock{ticks},
		Log: slog.New(slog.NewTextHandler(&buf, nil))}
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	for range 3 { // four polls, the clock standing still
		ticks <- t0
	}
	cancel()
	<-done
	if raft.bootstrapped != nil || strings.Count(buf.String(), "waiting for peers") != 1 {
		t.Errorf("bootstrapped %v, logged %q; want nothing, one wait line", raft.bootstrapped, buf.String())
	}
}
