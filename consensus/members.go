package consensus

import (
	"context"
	"log/slog"
	"time"
)

// Member is one node as gossip sees it, for the membership loop.
type Member struct {
	ID string
	// RaftAddr is the raft address the node announces; "" from an agent
	// too old or too new to announce one.
	RaftAddr string
	Switch   string
	// Alive is gossip's alive or suspect; Left is a graceful leave.
	Alive, Left bool
}

// Candidates merges the gossip view (members) and the raft configuration
// (servers) into PlanVoters' input, at now. failedSince remembers when
// each node was first seen not alive and is updated in place; revoked
// says whose certificate the cluster revoked: such a node may still
// gossip (it has the key until it is rotated), but it holds no raft seat,
// so it counts as left. It is pure but for failedSince.
func Candidates(members []Member, servers []Server, revoked func(id string) bool, failedSince map[string]time.Time, now time.Time) []Candidate {
	inConfig := map[string]Server{}
	for _, s := range servers {
		inConfig[s.ID] = s
	}
	seen := map[string]bool{}
	var cands []Candidate
	for _, m := range members {
		seen[m.ID] = true
		if m.Alive {
			delete(failedSince, m.ID)
		} else if _, ok := failedSince[m.ID]; !ok {
			failedSince[m.ID] = now
		}
		s, in := inConfig[m.ID]
		addr := m.RaftAddr
		if in {
			addr = s.Addr
		}
		if addr == "" {
			continue // an agent too old or too new to announce raft
		}
		cands = append(cands, Candidate{
			ID: m.ID, Addr: addr, Switch: m.Switch, Alive: m.Alive, Left: m.Left,
			FailedSince: failedSince[m.ID], InConfig: in, Suffrage: s.Suffrage,
		})
	}
	// Servers gossip has forgotten (reaped) count as failed.
	for _, s := range servers {
		if seen[s.ID] {
			continue
		}
		if _, ok := failedSince[s.ID]; !ok {
			failedSince[s.ID] = now
		}
		cands = append(cands, Candidate{ID: s.ID, Addr: s.Addr, FailedSince: failedSince[s.ID], InConfig: true, Suffrage: s.Suffrage})
	}
	for i := range cands {
		if revoked != nil && revoked(cands[i].ID) {
			cands[i].Alive, cands[i].Left = false, true
		}
	}
	return cands
}

// Configuration is the raft configuration as the membership loop reads
// and changes it (*Raft).
type Configuration interface {
	Servers(ctx context.Context) ([]Server, error)
	ApplyChanges(ctx context.Context, changes []Change) error
}

// Gathered is what the membership loop learns from gossip and the
// replicated state in one round.
type Gathered struct {
	// Members is everything gossip knows, this node included.
	Members []Member
	// Revoked says whose certificate the cluster revoked.
	Revoked func(id string) bool
	// MaxNonvoters is VoterConfig.MaxNonvoters for these members.
	MaxNonvoters int
}

// Peers is where the membership loop gathers its round.
type Peers interface {
	Gather() Gathered
}

// Ticker is the clock a loop reads and ticks on.
type Ticker interface {
	Now() time.Time
	// NewTicker delivers every d until stop is called.
	NewTicker(d time.Duration) (c <-chan time.Time, stop func())
}

// VoterReconciler is the leader's membership loop: every Interval it
// gathers gossip (Peers) and the raft configuration, asks PlanVoters for
// the changes that keep an odd number of voters spread over switches, up
// to MaxNonvoters non-voters and the rest workers outside the
// configuration, dead servers replaced, and applies them. It runs while
// this node leads: its owner cancels Run's context on losing leadership.
type VoterReconciler struct {
	Raft  Configuration
	Peers Peers
	// Self is this node's ID (the leader, which PlanVoters never demotes).
	Self string
	// MaxVoters and DeadServerGrace are VoterConfig's.
	MaxVoters       int
	DeadServerGrace time.Duration
	Clock           Ticker
	Log             *slog.Logger
	Interval        time.Duration
}

// Run reconciles until ctx ends.
func (r VoterReconciler) Run(ctx context.Context) {
	log := r.Log.With("component", "voters")
	failedSince := map[string]time.Time{}
	tick, stop := r.Clock.NewTicker(r.Interval)
	defer stop()
	for ctx.Err() == nil {
		select {
		case <-tick:
			r.Round(ctx, log, failedSince)
		case <-ctx.Done():
		}
	}
}

// Round gathers, plans and applies one set of membership changes.
// failedSince is Candidates', carried between rounds.
func (r VoterReconciler) Round(ctx context.Context, log *slog.Logger, failedSince map[string]time.Time) {
	servers, err := r.Raft.Servers(ctx)
	if err != nil {
		log.Warn("read raft configuration", "err", err)
		return
	}
	now := r.Clock.Now()
	g := r.Peers.Gather()
	cands := Candidates(g.Members, servers, g.Revoked, failedSince, now)
	vc := VoterConfig{MaxVoters: r.MaxVoters, DeadServerGrace: r.DeadServerGrace, MaxNonvoters: g.MaxNonvoters}
	changes := PlanVoters(vc, r.Self, cands, now)
	if len(changes) == 0 {
		return
	}
	for _, c := range changes {
		log.Info("raft membership change", "change", string(c.Kind), "server", c.ID, "why", c.Why)
	}
	if err := r.Raft.ApplyChanges(ctx, changes); err != nil && ctx.Err() == nil {
		log.Warn("apply membership changes", "err", err)
	}
}
