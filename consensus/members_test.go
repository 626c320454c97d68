package consensus

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCandidates: the membership loop's input merges gossip and the raft
// configuration (DESIGN "Membership and roles": dead voters are replaced
// once failed for the grace, so when each failure began must carry over
// rounds; a revoked node holds no seat).
func TestCandidates(t *testing.T) {
	members := []Member{
		{ID: "n1", RaftAddr: "a:1", Switch: "leaf0", Alive: true},
		{ID: "n2", RaftAddr: "a:2", Switch: "leaf0"},
		{ID: "n3", RaftAddr: "a:3", Switch: "leaf1", Left: true},
		{ID: "n4", RaftAddr: "a:4", Switch: "leaf1", Alive: true},
		{ID: "old", Alive: true}, // announces no raft address
		{ID: "bad", RaftAddr: "a:6", Alive: true},
	}
	servers := []Server{
		{ID: "n1", Addr: "a:1", Suffrage: Voter},
		{ID: "n2", Addr: "a:2", Suffrage: Voter},
		{ID: "n3", Addr: "a:3", Suffrage: Voter},
		{ID: "gone", Addr: "a:9", Suffrage: Voter},  // reaped from gossip
		{ID: "gone2", Addr: "a:8", Suffrage: Voter}, // reaped, and revoked
	}
	revoked := func(id string) bool { return id == "bad" || id == "gone2" }
	failed := map[string]time.Time{"n2": t0.Add(-time.Minute)}
	got := Candidates(members, servers, revoked, failed, t0)
	want := []Candidate{
		{ID: "n1", Addr: "a:1", Switch: "leaf0", Alive: true, InConfig: true, Suffrage: Voter},
		{ID: "n2", Addr: "a:2", Switch: "leaf0", FailedSince: t0.Add(-time.Minute), InConfig: true, Suffrage: Voter},
		{ID: "n3", Addr: "a:3", Switch: "leaf1", Left: true, FailedSince: t0, InConfig: true, Suffrage: Voter},
		{ID: "n4", Addr: "a:4", Switch: "leaf1", Alive: true},
		{ID: "bad", Addr: "a:6", Left: true},
		{ID: "gone", Addr: "a:9", FailedSince: t0, InConfig: true, Suffrage: Voter},
		{ID: "gone2", Addr: "a:8", Left: true, FailedSince: t0, InConfig: true, Suffrage: Voter},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Candidates (-want +got):\n%s", diff)
	}
	// A member seen alive again forgets its failure; one still failed
	// keeps when it began.
	members[1].Alive = true
	Candidates(members, servers, nil, failed, t0.Add(time.Second))
	if _, ok := failed["n2"]; ok {
		t.Error("n2 alive again but still marked failed")
	}
	if !failed["gone"].Equal(t0) {
		t.Errorf("gone failed since %v; want %v (the first round)", failed["gone"], t0)
	}
}

type fakeConfiguration struct {
	servers []Server
	applied []Change
	// errs are the errors of the next Servers calls; reads counts them.
	errs      []error
	reads     int
	onServers func(reads int)
}

func (f *fakeConfiguration) Servers(context.Context) ([]Server, error) {
	f.reads++
	if f.onServers != nil {
		f.onServers(f.reads)
	}
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		if err != nil {
			return nil, err
		}
	}
	return f.servers, nil
}

func (f *fakeConfiguration) ApplyChanges(_ context.Context, c []Change) error {
	f.applied = append(f.applied, c...)
	return nil
}

type fakePeers Gathered

func (f fakePeers) Gather() Gathered { return Gathered(f) }

type fixedTime time.Time

func (f fixedTime) Now() time.Time { return time.Time(f) }
func (fixedTime) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return nil, func() {}
}

// TestVoterReconcilerRound: one round adds a new live member as a
// non-voter, then, once it is in the configuration, promotes it.
func TestVoterReconcilerRound(t *testing.T) {
	cfg := &fakeConfiguration{servers: []Server{{ID: "n1", Addr: "n1:7000", Suffrage: Voter}}}
	peers := fakePeers{Members: []Member{
		{ID: "n1", RaftAddr: "n1:7000", Alive: true},
		{ID: "n2", RaftAddr: "n2:7000", Alive: true},
		{ID: "n3", RaftAddr: "n3:7000", Alive: true},
	}}
	r := VoterReconciler{Raft: cfg, Peers: peers, Self: "n1", Clock: fixedTime(t0)}
	log := slog.New(slog.DiscardHandler)
	r.Round(context.Background(), log, map[string]time.Time{})
	if got, want := kinds(cfg.applied), []string{"add-nonvoter n2", "add-nonvoter n3"}; !cmp.Equal(got, want) {
		t.Errorf("first round = %v; want %v", got, want)
	}
	cfg.servers = append(cfg.servers, Server{ID: "n2", Addr: "n2:7000", Suffrage: Nonvoter}, Server{ID: "n3", Addr: "n3:7000", Suffrage: Nonvoter})
	cfg.applied = nil
	r.Round(context.Background(), log, map[string]time.Time{})
	if got, want := kinds(cfg.applied), []string{"promote n2", "promote n3"}; !cmp.Equal(got, want) {
		t.Errorf("second round = %v; want %v", got, want)
	}
}

// TestVoterReconcilerRun: the loop plans at each tick, rides over a
// configuration it cannot read, and ends with its context.
func TestVoterReconcilerRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := &fakeConfiguration{
		servers: []Server{{ID: "n1", Addr: "n1:7000", Suffrage: Voter}},
		errs:    []error{errors.New("no leader")},
		onServers: func(reads int) {
			if reads == 2 {
				cancel()
			}
		},
	}
	ticks := make(chan time.Time, 5)
	for range cap(ticks) {
		ticks <- t0
	}
	peers := fakePeers{Members: []Member{{ID: "n1", RaftAddr: "n1:7000", Alive: true}, {ID: "n2", RaftAddr: "n2:7000", Alive: true}}}
	VoterReconciler{Raft: cfg, Peers: peers, Self: "n1", Clock: tickClock{ticks}, Log: slog.New(slog.DiscardHandler)}.Run(ctx)
	if cfg.reads != 2 || !cmp.Equal(kinds(cfg.applied), []string{"add-nonvoter n2"}) {
		t.Errorf("read the configuration %d times, applied %v; want 2 (one failed), add-nonvoter n2", cfg.reads, kinds(cfg.applied))
	}
}
