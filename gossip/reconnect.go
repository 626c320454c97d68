package gossip

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"
)

// Reconnecting to failed members (as Serf does). memberlist alone can
// leave a healed cluster split: when a node's peers declared it dead while
// it still saw them alive (one-way loss, a slow link), the "dead" message
// has been retransmitted out by the time the link heals, the node never
// hears it and so never refutes it, and its peers no longer probe it. Only
// memberlist's push/pull (every 30s, from the isolated side) would mend
// that. A push/pull started by the side that holds the failure mends it
// within one reconnect interval: the failed node learns it was declared
// dead, refutes with a higher incarnation, and everyone sees it alive.
const (
	// DefaultReconnectInterval is how often a failed member is dialled
	// again when Config leaves ReconnectInterval zero.
	DefaultReconnectInterval = 5 * time.Second
	// DefaultReconnectTimeout is how long a failed member is dialled
	// before it is given up on, when Config leaves ReconnectTimeout zero.
	DefaultReconnectTimeout = 24 * time.Hour
	// maxReconnectsPerRound bounds the dials of one round: each can block
	// for memberlist's TCP timeout when the address blackholes.
	maxReconnectsPerRound = 3
	// reconnectStopWait bounds how long Shutdown waits for a dial in
	// flight; the dial ends on its own within memberlist's TCP timeout.
	reconnectStopWait = 2 * time.Second
)

// lostMember is a member that failed (not one that left), kept to be
// dialled again.
type lostMember struct {
	name, addr string
	since      time.Time // when it failed
	tried      time.Time // the last dial; zero before the first
}

// planReconnect chooses whom to dial now: the failed members not given up
// on, least recently tried first (then by name), as many as
// reconnectDials says for alive live members (this node included) and
// roll, at most max. It also names those failed for longer than timeout,
// to forget. It is pure.
func planReconnect(lost []lostMember, now time.Time, timeout time.Duration, max, alive int, roll float64) (dial []lostMember, forget []string) {
	var live []lostMember
	for _, l := range lost {
		if now.Sub(l.since) > timeout {
			forget = append(forget, l.name)
			continue
		}
		live = append(live, l)
	}
	slices.SortFunc(live, func(a, b lostMember) int {
		return cmp.Or(a.tried.Compare(b.tried), cmp.Compare(a.name, b.name))
	})
	slices.Sort(forget)
	return live[:reconnectDials(len(live), alive, roll, max)], forget
}

// reconnectDials is how many of failed members one of alive nodes dials
// in a round, roll in [0, 1): the cluster as a whole dials each failed
// member about once a round (failed/alive each, the fraction by roll), as
// Serf does, at most max. Each dial is a push/pull of the whole member
// list; when every node dialled every failed member, a suspicion storm
// in a cluster of N made O(N) push/pulls of O(N) bytes per failed member
// a round, and made the storm worse (BENCHMARKS.md, "Toward 1,000
// agents"). A node alone (alive 1) dials them all, up to max.
func reconnectDials(failed, alive int, roll float64, max int) int {
	alive = cmp.Or(alive, 1)
	n := failed / alive
	if roll < float64(failed%alive)/float64(alive) {
		n++
	}
	return min(n, max)
}

// noteLost keeps the lost-member table in step with a membership change;
// the caller holds g.mu.
func (g *Gossip) noteLost(m Member, now time.Time) {
	if m.Name == g.name {
		return
	}
	if m.Status == StatusFailed {
		if _, ok := g.lost[m.Name]; !ok {
			g.lost[m.Name] = &lostMember{name: m.Name, addr: m.Addr, since: now}
		}
		return
	}
	delete(g.lost, m.Name)
}

// reconnectLoop dials failed members every interval until g shuts down.
// It is started by New and stopped by Shutdown.
func (g *Gossip) reconnectLoop(interval, timeout time.Duration) {
	defer close(g.reconnectDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-t.C:
		}
		now := time.Now()
		g.mu.Lock()
		lost := make([]lostMember, 0, len(g.lost))
		for _, l := range g.lost {
			lost = append(lost, *l)
		}
		dial, forget := planReconnect(lost, now, timeout, maxReconnectsPerRound, int(g.numAlive.Load()), rand.Float64())
		for _, name := range forget {
			delete(g.lost, name)
		}
		for _, l := range dial {
			g.lost[l.name].tried = now
		}
		g.mu.Unlock()
		for _, name := range forget {
			g.log.Info("giving up on a failed member", "node", g.name, "member", name, "after", timeout)
		}
		for _, l := range dial {
			if g.isShutdown() {
				return
			}
			// A push/pull: if l answers, it learns what we think of it
			// and refutes it; its answer tells us it is alive.
			if n, err := g.ml.Join([]string{l.addr}); n > 0 {
				g.log.Info("reconnected to a failed member", "node", g.name, "member", l.name, "addr", l.addr)
			} else {
				g.log.Debug("failed member still unreachable", "node", g.name, "member", l.name, "addr", l.addr, "err", err)
			}
		}
	}
}
