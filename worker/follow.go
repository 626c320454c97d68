package worker

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"time"
)

// Bounds of following a server.
const (
	// ServerBackoff is how long a server that failed a follow call, or
	// answered with hints only, is passed over.
	ServerBackoff = 5 * time.Second
	// followRetry is the pause after a follow call that did not bring a
	// server's state; followIdle after one that found no node to ask.
	followRetry = 200 * time.Millisecond
	followIdle  = time.Second
)

// Server is a node a worker may send its follow query to.
type Server struct {
	Name, APIAddr string
	// Raft says the node announces a raft address: it may hold a raft
	// seat, and a server knows the others and the leader. Set on live
	// members (Upstream.Alive), not on the servers the hints name.
	Raft bool
}

// Known is where a worker last heard the servers and the leader are.
type Known struct {
	// Leader is the leader the servers last named.
	Leader string
	// Servers are the raft servers they last named.
	Servers []Server
	// Failed is when each server last failed a follow call.
	Failed map[string]time.Time
}

// PickServer is the follow loop's choice of a node to ask, at now: a
// server PickKnown chooses, failing that a live member PickMember
// chooses. An empty name means no node to ask. It is pure but for roll.
func PickServer(self string, known Known, alive []Server, now time.Time, roll func(n int) int) Server {
	if s, ok := PickKnown(self, known, now); ok {
		return s
	}
	return PickMember(self, alive, roll)
}

// PickKnown chooses among the servers last named, at now: the leader
// last and each one spared for ServerBackoff after it failed, starting at
// a place that depends on this node's name (self) so that the workers
// spread over the servers. ok is false when none is left to ask. It is
// pure.
func PickKnown(self string, known Known, now time.Time) (s Server, ok bool) {
	h := fnv.New32a()
	h.Write([]byte(self))
	start := int(h.Sum32())
	var leader Server
	for i := range known.Servers {
		s := known.Servers[(start+i)%len(known.Servers)]
		if s.Name == self || s.APIAddr == "" || now.Sub(known.Failed[s.Name]) < ServerBackoff {
			continue
		}
		if s.Name == known.Leader {
			leader = s
			continue
		}
		return s, true
	}
	return leader, leader.Name != ""
}

// PickMember chooses one of the live members (alive, with an API
// address, not self) by roll (roll(n) is in [0, n)): one announcing a
// raft address when there is one, since a raft server answers with the
// leader and the servers, where a worker that knows none yet answers
// with nothing (and, in a forming cluster of hundreds of workers, asking
// them at random made every worker open a TLS connection to worker after
// worker). An empty name means no node to ask. It is pure but for roll.
func PickMember(self string, alive []Server, roll func(n int) int) Server {
	var raft, others []Server
	for _, m := range alive {
		switch {
		case m.Name == self || m.APIAddr == "":
		case m.Raft:
			raft = append(raft, m)
		default:
			others = append(others, m)
		}
	}
	if len(raft) > 0 {
		return raft[roll(len(raft))]
	}
	if len(others) == 0 {
		return Server{}
	}
	return others[roll(len(others))]
}

// FollowStep is what the follow loop does in one round.
type FollowStep int

const (
	// StepServe: this node is a raft server; it reads its replica and
	// checks its membership again after a poll.
	StepServe FollowStep = iota
	// StepAskLeader: a node its own configuration names has no leader,
	// within the grace: an election is not a removal. It asks a server
	// for the leader meanwhile (hints only), so that its heartbeats
	// reach it, and polls.
	StepAskLeader
	// StepFollow: a worker, or a removed server past the grace: it
	// follows a server.
	StepFollow
)

// NextFollowStep decides the follow loop's round at now from this node's
// membership (member: a raft server with a leader; inConfig: named by
// its own configuration), whether it follows a server already
// (following), and since when it has been a configured server without
// a leader (lostSince, zero for not). It returns the step and the new
// lostSince. It is pure.
func NextFollowStep(member, inConfig, following bool, lostSince, now time.Time, grace time.Duration) (FollowStep, time.Time) {
	if member {
		return StepServe, time.Time{}
	}
	if inConfig && !following {
		if lostSince.IsZero() {
			lostSince = now
		}
		if now.Sub(lostSince) < grace {
			return StepAskLeader, lostSince
		}
	}
	return StepFollow, lostSince
}

// FollowOutcome is how one follow call ended.
type FollowOutcome int

const (
	// OutcomeServed: a server sent the state (or the same state again).
	OutcomeServed FollowOutcome = iota
	// OutcomeNoServer: no node to ask was known.
	OutcomeNoServer
	// OutcomeNoClient: no client could be made for the node.
	OutcomeNoClient
	// OutcomeFailed: the call failed, or its answer could not be taken
	// in.
	OutcomeFailed
	// OutcomeHints: the node answered with hints only (it is no server),
	// or only hints were asked for.
	OutcomeHints
)

// AfterFollow decides, from how a call ended, how long to pause before
// the next and whether to pass over the node asked (ask another next,
// for ServerBackoff). hintsOnly is whether only hints were asked for. It
// is pure.
func AfterFollow(o FollowOutcome, hintsOnly bool) (pause time.Duration, passOver bool) {
	switch o {
	case OutcomeServed:
		return 0, false
	case OutcomeNoServer:
		return followIdle, false
	case OutcomeNoClient:
		return followRetry, false
	case OutcomeHints:
		return followRetry, !hintsOnly // not a server (any more): ask another next
	}
	return followRetry, true
}

// Membership is this node's place in the raft configuration.
type Membership interface {
	// Member says whether this node is a raft server now (its raft knows
	// a leader, and the configuration names it), and whether its own
	// configuration names it.
	Member(ctx context.Context) (member, inConfig bool)
}

// Upstream is the servers as the follow loop reaches them, and what it
// keeps of them (the agent's remote view).
type Upstream interface {
	// Following says whether a view from a server is held.
	Following() bool
	// Drop forgets that view: this node is a server, and reads its
	// replica.
	Drop()
	// Behind marks the replica as fallen behind: once this node is a
	// server again it catches up before it answers reads or drives tasks.
	Behind()
	// Known is where the servers and the leader were last named.
	Known() Known
	// Alive are the live gossip members, which answer with hints at least.
	Alive() []Server
	// Follow makes one follow call to s (hintsOnly: ask for an answer at
	// once, and take only the leader and the servers from it) and takes
	// its answer in.
	Follow(ctx context.Context, s Server, hintsOnly bool) (FollowOutcome, error)
	// PassOver spares s for ServerBackoff from at.
	PassOver(name string, at time.Time)
}

// ErrNoServer is returned while a worker knows no node to follow.
var ErrNoServer = errors.New("no server known to follow")

// Follower is a node's follow loop: while it is a worker (outside the
// raft configuration, or removed from it), it keeps its view of its jobs
// current with blocking follow queries to a server (PickServer chooses,
// AfterFollow paces); while it is a raft server it does nothing but check
// its membership every Poll (NextFollowStep decides). A node its own
// configuration names follows only once it has had no leader for Grace.
type Follower struct {
	Self       string
	Membership Membership
	Upstream   Upstream
	Clock      Timer
	Log        *slog.Logger
	// Roll picks one of n live members at random (rand.IntN).
	Roll func(n int) int
	// Poll is how often a server checks it still is one; Grace how long
	// a configured server without a leader waits before it follows.
	Poll, Grace time.Duration
}

// Run follows until ctx ends.
func (f Follower) Run(ctx context.Context) {
	log := f.Log.With("component", "follow")
	var lostSince time.Time
	for ctx.Err() == nil {
		member, inConfig := f.Membership.Member(ctx)
		var step FollowStep
		step, lostSince = NextFollowStep(member, inConfig, f.Upstream.Following(), lostSince, f.Clock.Now(), f.Grace)
		wait := f.Poll
		switch step {
		case StepServe:
			f.Upstream.Drop()
		case StepAskLeader:
			if _, err := f.Once(ctx, true); err != nil && ctx.Err() == nil {
				log.Debug("ask a server for the leader", "err", err)
			}
		case StepFollow:
			f.Upstream.Behind()
			var err error
			if wait, err = f.Once(ctx, false); err != nil && ctx.Err() == nil {
				log.Debug("follow a server", "err", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-f.Clock.After(wait):
		}
	}
}

// Once makes one follow call, and returns how long to pause before the
// next.
func (f Follower) Once(ctx context.Context, hintsOnly bool) (time.Duration, error) {
	// The live members only when no server named is left to ask: a
	// worker follows a server, and the member list is long.
	s, ok := PickKnown(f.Self, f.Upstream.Known(), f.Clock.Now())
	if !ok {
		s = PickMember(f.Self, f.Upstream.Alive(), f.Roll)
	}
	outcome, err := OutcomeNoServer, ErrNoServer
	if s.APIAddr != "" {
		outcome, err = f.Upstream.Follow(ctx, s, hintsOnly)
	}
	pause, passOver := AfterFollow(outcome, hintsOnly)
	if passOver {
		f.Upstream.PassOver(s.Name, f.Clock.Now())
	}
	return pause, err
}
