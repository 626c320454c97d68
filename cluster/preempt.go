package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Preemption, as Slurm's preempt/qos: a QoS level may preempt the jobs of
// the levels it lists. A running victim first gets SIGTERM and
// Policy.PreemptGrace to checkpoint and leave; then it is requeued (a job
// with --requeue, as every batch job by default) or cancelled with reason
// Preempted.

// ReasonPreempted is a cancelled victim's reason.
const ReasonPreempted = "Preempted"

// Preemption marks a running job chosen as a victim: By is the job it
// makes room for, Deadline when its grace ends.
type Preemption struct {
	By       JobID     `msgpack:"by" json:"by"`
	Deadline time.Time `msgpack:"deadline" json:"deadline"`
}

// PreemptRule is one QoS level's right to preempt others.
type PreemptRule struct {
	QoS string `msgpack:"qos" json:"qos"`
	// Preempts are the QoS levels whose jobs it may preempt, ascending.
	Preempts []string `msgpack:"preempts" json:"preempts"`
}

// validatePreempt checks the policy's preemption rules: sorted by QoS
// without repeats, each naming known levels other than itself.
func (p *Policy) validatePreempt() error {
	if err := within("preempt_grace", p.PreemptGrace, MaxPolicyDuration, ""); err != nil {
		return err
	}
	if len(p.Preempt) > MaxPolicyQoS {
		return fmt.Errorf("preempt: %d rules, want at most %d", len(p.Preempt), MaxPolicyQoS)
	}
	for i, r := range p.Preempt {
		where := fmt.Sprintf("preempt[%d] %.64q", i, r.QoS)
		switch {
		case !p.HasQoS(r.QoS):
			return fmt.Errorf("%s: not a QoS level of the policy", where)
		case i > 0 && r.QoS <= p.Preempt[i-1].QoS:
			return fmt.Errorf("%s: not after %q, want ascending unique QoS names", where, p.Preempt[i-1].QoS)
		case len(r.Preempts) == 0:
			return fmt.Errorf("%s: preempts no QoS level", where)
		}
		for k, q := range r.Preempts {
			switch {
			case !p.HasQoS(q):
				return fmt.Errorf("%s: preempts[%d] %.64q: not a QoS level of the policy", where, k, q)
			case q == r.QoS:
				return fmt.Errorf("%s: preempts itself", where)
			case k > 0 && q <= r.Preempts[k-1]:
				return fmt.Errorf("%s: preempts[%d] %.64q: want ascending unique names", where, k, q)
			}
		}
	}
	return nil
}

// MayPreempt reports whether a job of QoS by may preempt one of QoS
// victim.
func (p *Policy) MayPreempt(by, victim string) bool {
	if p == nil || by == "" || victim == "" {
		return false
	}
	i, ok := slices.BinarySearchFunc(p.Preempt, by, func(r PreemptRule, q string) int { return cmp.Compare(r.QoS, q) })
	if !ok {
		return false
	}
	_, ok = slices.BinarySearch(p.Preempt[i].Preempts, victim)
	return ok
}

// preemptFromFile reads a policy file's "preempt": QoS name to the QoS
// names it may preempt.
func preemptFromFile(m map[string][]string) []PreemptRule {
	var out []PreemptRule
	for q, victims := range m {
		v := slices.Clone(victims)
		slices.Sort(v)
		out = append(out, PreemptRule{QoS: q, Preempts: slices.Compact(v)})
	}
	slices.SortFunc(out, func(a, b PreemptRule) int { return cmp.Compare(a.QoS, b.QoS) })
	return out
}

func preemptToFile(rs []PreemptRule) map[string][]string {
	if len(rs) == 0 {
		return nil
	}
	out := make(map[string][]string, len(rs))
	for _, r := range rs {
		out[r.QoS] = slices.Clone(r.Preempts)
	}
	return out
}
