package fsm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

func testPolicy() cluster.Policy {
	return cluster.Policy{
		Weights:  cluster.Weights{Age: 1000, FairShare: 10000, JobSize: 500, QoS: 2000},
		MaxAge:   24 * time.Hour,
		HalfLife: time.Hour,
		Accounts: []cluster.AccountShare{
			{Name: "bio", Shares: 40, Users: []cluster.UserShare{}},
			{Name: "physics", Shares: 60, Users: []cluster.UserShare{{Name: "alice", Shares: 2}}},
		},
		QoS:         []cluster.QoSLevel{{Name: "high", Priority: 100}},
		Scheduler:   cluster.SchedulerQSSF,
		StarveAfter: 48 * time.Hour,
		AgingHalf:   30 * time.Minute,
	}
}

// TestSetPolicy: SetPolicy replaces the policy every view shows, refuses
// an invalid one naming the field without changing anything, and the
// policy survives a snapshot (DESIGN invariant 5: restored replicas agree).
func TestSetPolicy(t *testing.T) {
	h := newHarness()
	if p := h.s.View().Policy(); p != nil {
		t.Fatalf("Policy() of a new state = %+v; want nil", p)
	}
	h.must(t, CmdUpsertNode, UpsertNode{Node: gpuNode("n1", 2, "leaf0")})
	before := stateDigest(t, h.s)

	p := testPolicy()
	h.must(t, CmdSetPolicy, SetPolicy{Policy: p})
	got := h.s.View().Policy()
	if got == nil || !got.Equal(&p) {
		t.Fatalf("Policy() = %+v; want %+v", got, p)
	}
	if got.Accounts[0].Users != nil {
		t.Errorf("empty user list kept as %#v; want nil (canonical)", got.Accounts[0].Users)
	}

	for _, tc := range []struct {
		name string
		mod  func(*cluster.Policy)
		want string
	}{
		{"negative weight", func(p *cluster.Policy) { p.Weights.Age = -1 }, "weights.age -1"},
		{"unsorted qos", func(p *cluster.Policy) {
			p.QoS = []cluster.QoSLevel{{Name: "z"}, {Name: "a"}}
		}, "qos[1]"},
		{"negative half life", func(p *cluster.Policy) { p.HalfLife = -time.Second }, "half_life"},
		{"unknown scheduler", func(p *cluster.Policy) { p.Scheduler = "sjf" }, `scheduler "sjf"`},
		{"shoal not canonical", func(p *cluster.Policy) { p.Scheduler = cluster.SchedulerShoal }, `scheduler "shoal"`},
		{"negative starve_after", func(p *cluster.Policy) { p.StarveAfter = -time.Hour }, "starve_after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := testPolicy()
			tc.mod(&bad)
			before := h.s.View().Policy()
			r := h.apply(t, CmdSetPolicy, SetPolicy{Policy: bad})
			if !errors.Is(r.Err, ErrInvalid) || !strings.Contains(r.Err.Error(), tc.want) {
				t.Fatalf("SetPolicy(%s) = %v; want ErrInvalid naming %q", tc.name, r.Err, tc.want)
			}
			if h.s.View().Policy() != before {
				t.Fatalf("a refused SetPolicy changed the policy")
			}
		})
	}

	r := restored(t, h.s)
	if rp := r.View().Policy(); rp == nil || !rp.Equal(&p) {
		t.Fatalf("restored Policy() = %+v; want %+v", rp, p)
	}
	if a, b := stateDigest(t, h.s), stateDigest(t, r); a != b {
		t.Fatalf("digest after restore differs from the original's")
	}
	if stateDigest(t, h.s) == before {
		t.Fatalf("a set policy does not show in the snapshot")
	}
}

// TestRestoreRefusesBadPolicy: a corrupt snapshot cannot smuggle in a
// policy SetPolicy would refuse.
func TestRestoreRefusesBadPolicy(t *testing.T) {
	bad := testPolicy()
	bad.Accounts[1].Shares = -3
	body := snapshotBody{Index: 1, Hash: make([]byte, 32), Policy: &bad}
	err := New().Restore(encodeBody(t, body))
	if err == nil || !strings.Contains(err.Error(), "policy: accounts[1]") {
		t.Fatalf("Restore(bad policy) = %v; want an error naming policy: accounts[1]", err)
	}
}

// TestSetPolicyGarbage: an undecodable SetPolicy diverges the replica
// rather than being skipped (STYLE section 2).
func TestSetPolicyGarbage(t *testing.T) {
	s := New()
	r := s.Apply(1, []byte{byte(CmdSetPolicy), 0xc1})
	if !errors.Is(r.Err, ErrDiverged) || s.Diverged() == nil {
		t.Fatalf("Apply(garbage SetPolicy) = %v; want ErrDiverged", r.Err)
	}
	if CmdSetPolicy.String() != "SetPolicy" {
		t.Errorf("String() = %q", CmdSetPolicy.String())
	}
}
