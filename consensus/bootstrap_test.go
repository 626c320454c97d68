package consensus

import (
	"testing"

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
