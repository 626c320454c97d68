package fsm

import (
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// SetPolicy replaces the replicated queue policy (priority weights,
// fair-share accounts, QoS levels) every leader orders pending jobs by.
// The policy must be valid and canonical (cluster.Policy.Validate).
type SetPolicy struct {
	Policy cluster.Policy `msgpack:"policy"`
	Time   time.Time      `msgpack:"time"`
}

func (s *State) setPolicy(index uint64, c SetPolicy) Result {
	if err := c.Policy.Validate(); err != nil {
		return Result{Err: fmt.Errorf("set policy: %w: %w", ErrInvalid, err)}
	}
	s.policy = canonPolicy(c.Policy.Clone())
	return Result{}
}

// canonPolicy makes p's empty lists nil, so a policy encodes to the same
// snapshot bytes however it arrived (log entry or snapshot).
func canonPolicy(p *cluster.Policy) *cluster.Policy {
	p.Accounts = nilIfEmpty(p.Accounts)
	for i := range p.Accounts {
		p.Accounts[i].Users = nilIfEmpty(p.Accounts[i].Users)
	}
	p.QoS = nilIfEmpty(p.QoS)
	p.Operators = nilIfEmpty(p.Operators)
	return p
}

// Policy returns the queue policy last set, or nil when none was (the
// caller then uses cluster.DefaultPolicy). Callers must not mutate it.
func (v *View) Policy() *cluster.Policy { return v.policy }
