package leader

import (
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Expired is a node whose lease ran out.
type Expired struct {
	Node string
	// Last is when its lease was last renewed, or this leader's election
	// when that is later.
	Last time.Time
}

// ExpiredLeases names the nodes up in nodes, other than self, whose lease
// expired at now: more than expiry since the later of their last
// heartbeat (lastHeartbeat; zero when none) and this leader's election,
// so a new leader gives every node a full lease before judging it. It is
// pure.
func ExpiredLeases(nodes []*cluster.Node, self string, lastHeartbeat func(node string) time.Time, electedAt, now time.Time, expiry time.Duration) []Expired {
	var out []Expired
	for _, n := range nodes {
		if n.Status != cluster.NodeUp || n.Name == self {
			continue
		}
		last := lastHeartbeat(n.Name)
		if last.Before(electedAt) {
			last = electedAt
		}
		if now.Sub(last) > expiry {
			out = append(out, Expired{Node: n.Name, Last: last})
		}
	}
	return out
}
