package consensus

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// DefaultDeadServerGrace is how long a voter must have been failed before
// PlanVoters replaces it, when VoterConfig leaves it zero. It rides out a
// reboot or an agent upgrade (a node back within it keeps its vote) while
// still restoring fault tolerance within minutes of a real loss.
const DefaultDeadServerGrace = 2 * time.Minute

// maxNonvoterChanges bounds the non-voter additions and removals in one
// plan, so a large cluster starting at once joins over several reconcile
// rounds instead of one long ApplyChanges.
const maxNonvoterChanges = 8

// VoterConfig tunes PlanVoters.
type VoterConfig struct {
	// MaxVoters caps the voters. 0 means automatic: 3, or 5 once at least
	// five nodes are healthy. An even value is rounded down to odd.
	MaxVoters int
	// DeadServerGrace is how long a server must have been failed before it
	// is removed; 0 means DefaultDeadServerGrace.
	DeadServerGrace time.Duration
	// MaxNonvoters caps the non-voter replicas kept beside the voters; the
	// other live nodes stay out of the configuration (workers, which
	// follow the state from a server over the API). 0 means no cap: every
	// live node is a server. A negative value means none beyond those
	// about to be promoted.
	MaxNonvoters int
}

// Candidate is one server known to gossip, to raft, or both.
type Candidate struct {
	ID, Addr string // Addr is the raft address gossip announces
	Switch   string // leaf switch label; "" when unknown
	Alive    bool   // gossip says alive
	Left     bool   // left gracefully
	// FailedSince is when gossip first reported the node failed; zero
	// while alive.
	FailedSince time.Time
	InConfig    bool     // in the raft configuration
	Suffrage    Suffrage // its suffrage there, when InConfig
}

// ChangeKind is one kind of membership change.
type ChangeKind string

const (
	ChangeAddNonvoter ChangeKind = "add-nonvoter"
	ChangePromote     ChangeKind = "promote"
	ChangeDemote      ChangeKind = "demote"
	ChangeRemove      ChangeKind = "remove"
)

// Change is one raft membership change and the reason for it.
type Change struct {
	Kind ChangeKind
	ID   string
	Addr string // set for add-nonvoter and promote
	Why  string
}

func (c Change) String() string { return fmt.Sprintf("%s %s (%s)", c.Kind, c.ID, c.Why) }

// quorum is the majority of n voters.
func quorum(n int) int { return n/2 + 1 }

// oddFloor is the largest odd number not above n, and at least 1.
func oddFloor(n int) int {
	if n < 1 {
		return 1
	}
	if n%2 == 0 {
		return n - 1
	}
	return n
}

// PlanVoters returns the membership changes that move the configuration
// toward an odd number of voters — MaxVoters, or fewer when fewer healthy
// nodes exist — spread over as many switches as possible, with every
// other live node a non-voter. It is pure: the same inputs always give
// the same plan.
//
// cands must list every server in the configuration and every node gossip
// knows, with unique IDs (later duplicates are ignored); the leader must
// be among them as a voter, or PlanVoters returns nothing (the input is
// not a configuration this leader could have).
//
// The plan is ordered so each step is safe on its own, and ApplyChanges
// may stop after any of them:
//
//  1. remove one voter that left or has been failed for longer than the
//     grace. Steps 1-3 run only while the voters gossip sees alive are a
//     quorum of the current voters: when gossip disagrees with raft (this
//     node leads, so raft has a quorum) a gossip partition must not strip
//     raft of its voters;
//  2. promote healthy non-voters up to the target, preferring switches
//     with the fewest voters, never stopping on an even count;
//  3. demote surplus voters (failed ones first, then those on the most
//     crowded switch), or swap one voter for a non-voter on a switch that
//     has no voter yet, promoting before demoting;
//  4. remove non-voters that left or are dead, then bring the non-voters
//     to MaxNonvoters plus the voters still missing (those are promoted
//     from non-voters next round): add live nodes that are not in the
//     configuration, on the switches with the fewest servers first, or
//     remove the surplus (failed ones first, then from the most crowded
//     switch); a removed server becomes a worker. At most
//     maxNonvoterChanges of these.
//
// The leader is never demoted or removed.
func PlanVoters(cfg VoterConfig, leaderID string, cands []Candidate, now time.Time) []Change {
	grace := cfg.DeadServerGrace
	if grace <= 0 {
		grace = DefaultDeadServerGrace
	}
	cs := slices.Clone(cands)
	slices.SortStableFunc(cs, func(a, b Candidate) int { return cmp.Compare(a.ID, b.ID) })
	cs = slices.CompactFunc(cs, func(a, b Candidate) bool { return a.ID == b.ID })

	li := slices.IndexFunc(cs, func(c Candidate) bool { return c.ID == leaderID })
	if leaderID == "" || li < 0 || !cs[li].InConfig || cs[li].Suffrage != Voter {
		return nil
	}
	// The leader is running this plan: whatever gossip says, it is alive.
	cs[li].Alive, cs[li].Left, cs[li].FailedSince = true, false, time.Time{}

	healthy := func(c *Candidate) bool { return c.Alive && !c.Left }
	gone := func(c *Candidate) bool {
		if c.Left {
			return true
		}
		return !c.Alive && !c.FailedSince.IsZero() && now.Sub(c.FailedSince) >= grace
	}

	var plan []Change
	var voters, nonvoters, outside []*Candidate
	for i := range cs {
		c := &cs[i]
		switch {
		case !c.InConfig:
			outside = append(outside, c)
		case c.Suffrage == Voter:
			voters = append(voters, c)
		default:
			nonvoters = append(nonvoters, c)
		}
	}

	// When the voters gossip sees alive are not a quorum, yet this node
	// leads, gossip and raft disagree (a gossip partition, or stale
	// input): leave the voters alone until they agree again.
	alive := 0
	for _, v := range voters {
		if healthy(v) {
			alive++
		}
	}
	if alive < quorum(len(voters)) {
		return planNonvoters(cfg, nil, voters, nonvoters, outside, 0, gone, healthy, now)
	}

	// 1. One gone voter out; the live voters remain a quorum without it.
	removedVoter := false
	for i, v := range voters {
		if v.ID != leaderID && gone(v) {
			plan = append(plan, Change{Kind: ChangeRemove, ID: v.ID, Why: goneWhy(v, now)})
			voters = slices.Delete(voters, i, i+1)
			removedVoter = true
			break
		}
	}

	// 2. The target: how many voters the cluster can sensibly hold. Nodes
	// that failed recently still count, so a brief failure causes no churn.
	size := 0
	for i := range cs {
		c := &cs[i]
		if healthy(c) || (c.InConfig && !gone(c)) {
			size++
		}
	}
	maxVoters := cfg.MaxVoters
	if maxVoters <= 0 {
		maxVoters = 3
		if size >= 5 {
			maxVoters = 5
		}
	}
	var eligible []*Candidate // healthy non-voters that may be promoted
	for _, n := range nonvoters {
		if healthy(n) && n.Addr != "" {
			eligible = append(eligible, n)
		}
	}
	addable := 0 // healthy nodes about to be added as non-voters
	for _, o := range outside {
		if healthy(o) && o.Addr != "" {
			addable++
		}
	}
	// goal counts the outsiders too: they become promotable next round,
	// so an even voter count while waiting for them is transient.
	goal := min(oddFloor(maxVoters), oddFloor(size), oddFloor(len(voters)+len(eligible)+addable))

	perSwitch := map[string]int{}
	for _, v := range voters {
		perSwitch[v.Switch]++
	}
	switch {
	case len(voters) < goal:
		n := len(voters) + min(goal-len(voters), len(eligible))
		if n%2 == 0 {
			n-- // never stop on an even count; wait for one more
		}
		for range n - len(voters) {
			p := pickPromote(eligible, perSwitch)
			eligible = slices.DeleteFunc(eligible, func(c *Candidate) bool { return c == p })
			perSwitch[p.Switch]++
			plan = append(plan, Change{Kind: ChangePromote, ID: p.ID, Addr: p.Addr,
				Why: fmt.Sprintf("voters below target %d; switch %q", goal, p.Switch)})
		}
	case len(voters) > goal:
		for range len(voters) - goal {
			d := pickDemote(voters, leaderID, perSwitch, healthy)
			if d == nil {
				break
			}
			voters = slices.DeleteFunc(voters, func(c *Candidate) bool { return c == d })
			perSwitch[d.Switch]--
			plan = append(plan, Change{Kind: ChangeDemote, ID: d.ID,
				Why: fmt.Sprintf("voters above target %d", goal)})
		}
	case !removedVoter && alive == len(voters):
		// At target with every voter healthy: improve the switch spread by
		// one swap, promoting first so fault tolerance never dips.
		in, out := pickSwap(eligible, voters, leaderID, perSwitch)
		if in != nil && out != nil {
			plan = append(plan,
				Change{Kind: ChangePromote, ID: in.ID, Addr: in.Addr,
					Why: fmt.Sprintf("spread voters: switch %q has none", in.Switch)},
				Change{Kind: ChangeDemote, ID: out.ID,
					Why: fmt.Sprintf("spread voters: switch %q has %d", out.Switch, perSwitch[out.Switch])})
		}
	}

	// The voters still missing once this plan is applied: as many
	// non-voters beyond the cap are kept or added to be promoted next round.
	after := len(voters)
	for _, c := range plan {
		switch c.Kind {
		case ChangePromote:
			after++
		case ChangeDemote:
			after--
		}
	}
	return planNonvoters(cfg, plan, voters, nonvoters, outside, max(0, goal-after), gone, healthy, now)
}

// planNonvoters appends step 4, non-voter housekeeping, to plan: gone
// non-voters out, then live outsiders in or surplus non-voters out, at
// most maxNonvoterChanges in all. missing is how many voters the plan
// still lacks; voters are the voters before plan.
func planNonvoters(cfg VoterConfig, plan []Change, voters, nonvoters, outside []*Candidate, missing int, gone, healthy func(*Candidate) bool, now time.Time) []Change {
	changed := map[string]bool{} // promoted or demoted by plan
	for _, c := range plan {
		changed[c.ID] = true
	}
	budget := maxNonvoterChanges
	// kept are the non-voters once the plan is applied, gone ones aside;
	// servers counts voters and non-voters per switch.
	var kept []*Candidate
	servers := map[string]int{}
	for _, v := range voters {
		servers[v.Switch]++
		if changed[v.ID] { // demoted: a non-voter now
			kept = append(kept, v)
		}
	}
	for _, n := range nonvoters {
		if gone(n) {
			if budget > 0 {
				plan = append(plan, Change{Kind: ChangeRemove, ID: n.ID, Why: goneWhy(n, now)})
				budget--
			}
			continue
		}
		servers[n.Switch]++
		if !changed[n.ID] { // promoted ones are voters now
			kept = append(kept, n)
		}
	}
	var addable []*Candidate
	for _, o := range outside {
		if healthy(o) && o.Addr != "" {
			addable = append(addable, o)
		}
	}
	if cfg.MaxNonvoters == 0 { // no cap: every live node a server
		for _, o := range addable {
			if budget > 0 {
				plan = append(plan, Change{Kind: ChangeAddNonvoter, ID: o.ID, Addr: o.Addr,
					Why: "alive and not in the raft configuration"})
				budget--
			}
		}
		return plan
	}
	want := max(0, cfg.MaxNonvoters) + missing
	for len(kept) < want && len(addable) > 0 && budget > 0 {
		o := pickPromote(addable, servers) // the switch with the fewest servers
		addable = slices.DeleteFunc(addable, func(c *Candidate) bool { return c == o })
		servers[o.Switch]++
		kept = append(kept, o)
		plan = append(plan, Change{Kind: ChangeAddNonvoter, ID: o.ID, Addr: o.Addr,
			Why: fmt.Sprintf("replicas below %d; switch %q", want, o.Switch)})
		budget--
	}
	for len(kept) > want && budget > 0 {
		var surplus []*Candidate // this plan's demoted voters stay a round
		for _, n := range kept {
			if !changed[n.ID] {
				surplus = append(surplus, n)
			}
		}
		if len(surplus) == 0 {
			break
		}
		r := pickDemote(surplus, "", servers, healthy)
		kept = slices.DeleteFunc(kept, func(c *Candidate) bool { return c == r })
		servers[r.Switch]--
		plan = append(plan, Change{Kind: ChangeRemove, ID: r.ID,
			Why: fmt.Sprintf("replicas above %d: a worker now", want)})
		budget--
	}
	return plan
}

func goneWhy(c *Candidate, now time.Time) string {
	if c.Left {
		return "left the cluster"
	}
	return fmt.Sprintf("failed for %s", now.Sub(c.FailedSince).Round(time.Second))
}

// pickPromote returns the eligible node on the switch with the fewest
// voters, lowest ID first. eligible is sorted by ID and not empty.
func pickPromote(eligible []*Candidate, perSwitch map[string]int) *Candidate {
	best := eligible[0]
	for _, c := range eligible[1:] {
		if perSwitch[c.Switch] < perSwitch[best.Switch] {
			best = c
		}
	}
	return best
}

// pickDemote returns the voter to demote: never the leader; failed voters
// first, then the one on the most crowded switch, lowest ID first.
func pickDemote(voters []*Candidate, leaderID string, perSwitch map[string]int, healthy func(*Candidate) bool) *Candidate {
	var best *Candidate
	for _, v := range voters {
		if v.ID == leaderID {
			continue
		}
		switch {
		case best == nil:
			best = v
		case healthy(best) != healthy(v):
			if !healthy(v) {
				best = v
			}
		case perSwitch[v.Switch] > perSwitch[best.Switch]:
			best = v
		}
	}
	return best
}

// pickSwap finds a healthy non-voter on a known switch that has no voter,
// and a non-leader voter on a switch that has more than one; nil, nil when
// swapping would not add a switch.
func pickSwap(eligible, voters []*Candidate, leaderID string, perSwitch map[string]int) (in, out *Candidate) {
	for _, c := range eligible {
		if c.Switch != "" && perSwitch[c.Switch] == 0 {
			in = c
			break
		}
	}
	if in == nil {
		return nil, nil
	}
	for _, v := range voters {
		if v.ID == leaderID || perSwitch[v.Switch] < 2 {
			continue
		}
		if out == nil || perSwitch[v.Switch] > perSwitch[out.Switch] {
			out = v
		}
	}
	if out == nil {
		return nil, nil
	}
	return in, out
}

// ApplyChanges performs changes in order and stops at the first error,
// which names the change. Leader only.
func (r *Raft) ApplyChanges(ctx context.Context, changes []Change) error {
	for i, c := range changes {
		var err error
		switch c.Kind {
		case ChangeAddNonvoter:
			err = r.AddNonvoter(ctx, c.ID, c.Addr)
		case ChangePromote:
			err = r.AddVoter(ctx, c.ID, c.Addr)
		case ChangeDemote:
			err = r.DemoteVoter(ctx, c.ID)
		case ChangeRemove:
			err = r.RemoveServer(ctx, c.ID)
		default:
			err = fmt.Errorf("unknown change kind %q", c.Kind)
		}
		if err != nil {
			return fmt.Errorf("membership change %d of %d, %s: %w", i+1, len(changes), c, err)
		}
		r.log.Info("raft membership changed", "change", string(c.Kind), "server", c.ID, "why", c.Why)
	}
	return nil
}
