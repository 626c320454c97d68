package chaos

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Timeline is one seed's run as the report and the plot draw it: the
// faults, the leader over time, and where and when each job's ranks ran.
// It is built from what the run collected (the fault events, the rank
// records, the final state and leader samples).
type Timeline struct {
	Seed  uint64
	Nodes []string
	// Start is when the workload and the faults began, FaultsEnd when they
	// stopped, End when the final state was read.
	Start, FaultsEnd, End time.Time
	Events                []Event
	// Leaders are the leader changes the run saw: from At on, most agents
	// that answered named Leader ("" when none did).
	Leaders    []LeaderSample
	Runs       []JobRun
	Violations []Violation
}

// LeaderSample is a leader change as the harness saw it.
type LeaderSample struct {
	At     time.Time
	Leader string
}

// Outcomes of a JobRun besides the final job states.
const (
	// OutcomeRequeued: an older incarnation of a job that was requeued.
	OutcomeRequeued = "REQUEUED"
	// OutcomeUnknown: a job the final state does not hold.
	OutcomeUnknown = "UNKNOWN"
)

// JobRun is one incarnation of one job on one node, as its ranks' records
// prove it: from the first rank's start to the last rank's last record.
type JobRun struct {
	Job         uint64
	Incarnation uint64
	Node        string
	GPUs        []int
	Start, End  time.Time
	// Outcome is the job's final state for its last incarnation,
	// OutcomeRequeued for an older one, OutcomeUnknown when the final
	// state has no such job.
	Outcome string
}

// NodeState is what a fault did to one node for a while.
type NodeState struct {
	Node       string
	State      string // killed, paused, cut off, one-way, flapping, slowed, lossy
	Fault      string
	Start, End time.Time
}

// nodeStateOf names what a kind of fault does to the nodes it targets.
var nodeStateOf = map[Kind]string{
	Kill: "killed", RestartAll: "killed", Pause: "paused", Isolate: "cut off",
	Partition: "cut off", OneWay: "one-way", Flap: "flapping", Slow: "slowed", Loss: "lossy",
}

// NodeStates lists, per event, the nodes it hit (every node for
// RestartAll) and how, in event order.
func (tl *Timeline) NodeStates() []NodeState {
	var out []NodeState
	for _, ev := range tl.Events {
		targets := ev.Targets
		if ev.Kind == RestartAll {
			targets = tl.Nodes
		}
		state := nodeStateOf[ev.Kind]
		if state == "" {
			state = string(ev.Kind)
		}
		for _, n := range targets {
			out = append(out, NodeState{Node: n, State: state, Fault: ev.Fault, Start: ev.Start, End: ev.End})
		}
	}
	return out
}

// buildTimeline puts together what RunSeed collected. It is pure.
func buildTimeline(in Input, start time.Time, events []Event, leaders []LeaderSample, violations []Violation) *Timeline {
	tl := &Timeline{Seed: in.Seed, Nodes: slices.Clone(in.Nodes), Start: start, FaultsEnd: in.FaultsEnd, End: in.FinalAt,
		Events: slices.Clone(events), Leaders: slices.Clone(leaders), Violations: slices.Clone(violations)}
	final := map[uint64]struct {
		state string
		inc   uint64
	}{}
	for _, r := range in.Replicas {
		if r.Err != "" {
			continue
		}
		for _, j := range r.Jobs {
			final[j.ID] = struct {
				state string
				inc   uint64
			}{j.State, j.Incarnation}
		}
		break
	}
	type key struct {
		job, inc uint64
		node     string
	}
	runs := map[key]*JobRun{}
	for _, iv := range intervals(in.Records) {
		k := key{iv.job, iv.incarnation, iv.node}
		r, ok := runs[k]
		if !ok {
			r = &JobRun{Job: iv.job, Incarnation: iv.incarnation, Node: iv.node, Start: ns(iv.start), End: ns(iv.end)}
			runs[k] = r
		}
		if t := ns(iv.start); t.Before(r.Start) {
			r.Start = t
		}
		if t := ns(iv.end); t.After(r.End) {
			r.End = t
		}
		for _, g := range iv.gpus {
			if !slices.Contains(r.GPUs, g) {
				r.GPUs = append(r.GPUs, g)
			}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(runs), func(a, b key) int {
		switch {
		case a.job != b.job:
			return cmp.Compare(a.job, b.job)
		case a.inc != b.inc:
			return cmp.Compare(a.inc, b.inc)
		}
		return cmp.Compare(a.node, b.node)
	}) {
		r := runs[k]
		slices.Sort(r.GPUs)
		f, ok := final[r.Job]
		switch {
		case !ok:
			r.Outcome = OutcomeUnknown
		case r.Incarnation < f.inc:
			r.Outcome = OutcomeRequeued
		default:
			r.Outcome = f.state
		}
		tl.Runs = append(tl.Runs, *r)
	}
	sort.SliceStable(tl.Runs, func(i, j int) bool { return tl.Runs[i].Start.Before(tl.Runs[j].Start) })
	return tl
}

// leaderPoll is how often the run asks the agents who leads.
const leaderPoll = 500 * time.Millisecond

// leaderWatch samples the leader until ctx ends; Samples returns the
// changes it saw.
type leaderWatch struct {
	mu      sync.Mutex
	samples []LeaderSample
}

func (lw *leaderWatch) run(ctx context.Context, h *Harness) {
	for ctx.Err() == nil {
		name := h.leaderName(ctx)
		lw.mu.Lock()
		if n := len(lw.samples); n == 0 || lw.samples[n-1].Leader != name {
			lw.samples = append(lw.samples, LeaderSample{At: time.Now(), Leader: name})
		}
		lw.mu.Unlock()
		if sleep(ctx, leaderPoll) != nil {
			return
		}
	}
}

// Samples returns the leader changes seen so far.
func (lw *leaderWatch) Samples() []LeaderSample {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return slices.Clone(lw.samples)
}

// leaderName asks every running agent at once (a paused one cannot hold
// up the others) and returns the leader most of those that answered name,
// or "" when none names one.
func (h *Harness) leaderName(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	names := make([]string, len(h.Agents))
	var wg sync.WaitGroup
	for i, a := range h.Agents {
		if !a.Running() {
			continue
		}
		wg.Go(func() {
			if st, err := a.client.Status(ctx); err == nil {
				names[i] = st.Leader
			}
		})
	}
	wg.Wait()
	votes := map[string]int{}
	for _, n := range names {
		if n != "" {
			votes[n]++
		}
	}
	best := ""
	for _, n := range slices.Sorted(maps.Keys(votes)) {
		if votes[n] > votes[best] {
			best = n
		}
	}
	return best
}
