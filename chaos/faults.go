package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

const (
	// Kill: kill -9 one agent, restart it from its data dir after Duration.
	Kill Kind = "kill"
	// Pause: SIGSTOP one agent for Duration (always longer than the
	// election timeout, often longer than the lease), then SIGCONT.
	Pause Kind = "pause"
	// Isolate: the leader's link goes down for Duration.
	Isolate Kind = "isolate"
	// Partition: two-way nftables drops between a minority and the
	// majority for Duration.
	Partition Kind = "partition"
	// OneWay: packets from one agent to the others are dropped (the other
	// direction flows) for Duration.
	OneWay Kind = "oneway"
	// Flap: one agent's link goes down and up every Period for Duration.
	Flap Kind = "flap"
	// RestartAll: kill -9 every agent at once, restart all after Duration.
	RestartAll Kind = "restart-all"
	// Slow: the links of one or more agents are limited to RateKbit in
	// each direction by a tc tbf queue for Duration. The queue holds a
	// packet up to Latency before dropping it, so a busy slow link is also
	// a delaying one.
	Slow Kind = "slow"
	// Loss: Percent of one agent's packets to and from the others are
	// dropped at random (nftables numgen) for Duration.
	Loss Kind = "loss"
)

// AllKinds is every kind, in a fixed order. New kinds go at the end.
var AllKinds = []Kind{Kill, Pause, Isolate, Partition, OneWay, Flap, RestartAll, Slow, Loss}

// NetKind reports whether a kind needs network namespaces.
func (k Kind) NetKind() bool {
	switch k {
	case Isolate, Partition, OneWay, Flap, Slow, Loss:
		return true
	}
	return false
}

// ParseKinds reads a comma-separated list of kinds; "all" or "" is every
// kind.
func ParseKinds(s string) ([]Kind, error) {
	if s == "" || s == "all" {
		return slices.Clone(AllKinds), nil
	}
	var out []Kind
	for _, part := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(part))
		if !slices.Contains(AllKinds, k) {
			var names []string
			for _, a := range AllKinds {
				names = append(names, string(a))
			}
			return nil, fmt.Errorf("--faults %q: unknown fault %q, want some of %s or all", s, k, strings.Join(names, ","))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Fault is one step of a schedule.
type Fault struct {
	Kind Kind
	// Gap is the quiet time before the fault starts.
	Gap time.Duration
	// Duration is how long the fault lasts before it is healed.
	Duration time.Duration
	// Targets are the agents it hits (the minority of a partition, the
	// sender of a one-way drop); empty for Isolate (the leader, found when
	// it starts) and RestartAll.
	Targets []int
	// Period is how often a flapping link changes state.
	Period time.Duration
	// RateKbit and Latency shape a Slow fault's tbf queue: its rate in
	// kbit/s and how long it holds a packet before dropping it.
	RateKbit int
	Latency  time.Duration
	// Percent is the share of packets a Loss fault drops, 1 to 99.
	Percent int
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s %s", f.Kind, f.Duration.Round(time.Millisecond))
	if len(f.Targets) > 0 {
		var names []string
		for _, t := range f.Targets {
			names = append(names, fmt.Sprintf("n%d", t+1))
		}
		s += " on " + strings.Join(names, ",")
	}
	if f.Period > 0 {
		s += fmt.Sprintf(" every %s", f.Period.Round(time.Millisecond))
	}
	if f.RateKbit > 0 {
		s += fmt.Sprintf(" at %dkbit latency %s", f.RateKbit, f.Latency.Round(time.Millisecond))
	}
	if f.Percent > 0 {
		s += fmt.Sprintf(" dropping %d%%", f.Percent)
	}
	return s
}

// NewRand returns the generator a seed names: PCG, so a schedule is the
// same on every machine and Go version.
func NewRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15))
}

// Plan draws n faults of the given kinds for a cluster of nodes agents
// from seed. It is pure: one seed, one schedule.
func Plan(seed uint64, nodes int, kinds []Kind, n int) []Fault {
	if len(kinds) == 0 || nodes < 1 {
		return nil
	}
	r := NewRand(seed, 1)
	dur := func(lo, hi float64) time.Duration {
		return time.Duration((lo + r.Float64()*(hi-lo)) * float64(time.Second))
	}
	// minority picks 1 to (nodes-1)/2 of the nodes (one at least), sorted.
	minority := func() []int {
		k := 1 + r.IntN(max(1, (nodes-1)/2))
		picked := r.Perm(nodes)[:k]
		slices.Sort(picked)
		return picked
	}
	out := make([]Fault, 0, n)
	for range n {
		f := Fault{Kind: kinds[r.IntN(len(kinds))], Gap: dur(1, 3)}
		switch f.Kind {
		case Kill:
			f.Targets, f.Duration = []int{r.IntN(nodes)}, dur(1, 8)
		case Pause:
			// Past the election timeout always; past lease-ttl (3s) and
			// the leader's down bound (7s) often.
			f.Targets, f.Duration = []int{r.IntN(nodes)}, dur(1, 10)
		case Isolate:
			f.Duration = dur(2, 10)
		case Partition:
			f.Targets, f.Duration = minority(), dur(3, 10)
		case OneWay:
			f.Targets, f.Duration = []int{r.IntN(nodes)}, dur(2, 8)
		case Flap:
			f.Targets, f.Duration, f.Period = []int{r.IntN(nodes)}, dur(3, 8), dur(0.2, 1.5)
		case RestartAll:
			f.Duration = dur(0, 2)
		case Slow:
			// Up to a minority, so a majority still talks at full speed.
			f.Targets = minority()
			f.RateKbit = 64 << r.IntN(4) // 64 to 512 kbit/s
			f.Latency = time.Duration(100+r.IntN(900)) * time.Millisecond
			f.Duration = dur(3, 10)
		case Loss:
			f.Targets, f.Percent, f.Duration = []int{r.IntN(nodes)}, 5+r.IntN(46), dur(3, 10)
		}
		out = append(out, f)
	}
	return out
}

// Event is one fault as it happened.
type Event struct {
	Kind    Kind      `json:"kind"`
	Fault   string    `json:"fault"`
	Targets []string  `json:"targets,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"` // healed
	// RecoverS is how long after End the cluster was healthy again (every
	// agent up, one leader, no node DOWN); -1 when it never was.
	RecoverS float64 `json:"recover_s"`
	Err      string  `json:"err,omitempty"`
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// maxFlaps bounds the link changes of one Flap fault.
const maxFlaps = 200

// Inject applies f, holds it for its duration (or until ctx ends) and
// heals it. The event's Start and End are when it began and was healed.
func (h *Harness) Inject(ctx context.Context, f Fault) (ev Event, err error) {
	ev = Event{Kind: f.Kind, Fault: f.String()}
	targets := f.Targets
	if f.Kind == Isolate {
		l := h.Leader(ctx)
		if l < 0 {
			return ev, errors.New("isolate: no agent names a leader")
		}
		targets = []int{l}
		ev.Fault += " on " + h.Agents[l].Name
	}
	for _, t := range targets {
		ev.Targets = append(ev.Targets, h.Agents[t].Name)
	}
	if f.Kind.NetKind() && h.net == nil {
		return ev, fmt.Errorf("%s: %w", f.Kind, errNoNetFaults)
	}
	ev.Start = time.Now()
	h.log.Info("fault start", "fault", ev.Fault)
	defer func() {
		// Heal whatever happened; a heal that fails is the fault's error.
		herr := h.Heal(context.WithoutCancel(ctx))
		ev.End = time.Now()
		err = errors.Join(err, herr)
		if err != nil {
			ev.Err = err.Error()
		}
		h.log.Info("fault end", "fault", ev.Fault, "held", ev.End.Sub(ev.Start).Round(time.Millisecond), "err", err)
	}()
	hold := func() error {
		if err := sleep(ctx, f.Duration); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
	switch f.Kind {
	case Kill:
		if err := h.Kill(targets[0]); err != nil {
			return ev, err
		}
		return ev, hold()
	case Pause:
		if err := h.Pause(targets[0]); err != nil {
			return ev, err
		}
		return ev, hold()
	case Isolate:
		if err := h.SetLink(ctx, targets[0], false); err != nil {
			return ev, err
		}
		return ev, hold()
	case Partition:
		var majority []int
		for i := range h.Agents {
			if !slices.Contains(targets, i) {
				majority = append(majority, i)
			}
		}
		for _, i := range targets {
			if err := h.Block(ctx, i, majority, majority); err != nil {
				return ev, err
			}
		}
		for _, i := range majority {
			if err := h.Block(ctx, i, targets, targets); err != nil {
				return ev, err
			}
		}
		return ev, hold()
	case OneWay:
		var others []int
		for i := range h.Agents {
			if i != targets[0] {
				others = append(others, i)
			}
		}
		if err := h.Block(ctx, targets[0], nil, others); err != nil {
			return ev, err
		}
		return ev, hold()
	case Flap:
		deadline := time.Now().Add(f.Duration)
		up := true
		for n := 0; n < maxFlaps && time.Now().Before(deadline); n++ {
			up = !up
			if err := h.SetLink(ctx, targets[0], up); err != nil {
				return ev, err
			}
			if sleep(ctx, min(f.Period, time.Until(deadline))) != nil {
				return ev, nil
			}
		}
		return ev, nil
	case Slow:
		for _, i := range targets {
			if err := h.Slow(ctx, i, f.RateKbit, f.Latency); err != nil {
				return ev, err
			}
		}
		return ev, hold()
	case Loss:
		if err := h.Lose(ctx, targets[0], f.Percent); err != nil {
			return ev, err
		}
		return ev, hold()
	case RestartAll:
		var errs []error
		for i := range h.Agents {
			if err := h.Kill(i); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return ev, errors.Join(errs...)
		}
		return ev, hold()
	}
	return ev, fmt.Errorf("fault kind %q: unknown", f.Kind)
}
