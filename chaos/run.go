package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// Config is one chaos run's shape; RunSeed runs it for one seed.
type Config struct {
	Binary string
	Nodes  int
	// Duration is how long faults are injected while the workload runs.
	Duration time.Duration
	Kinds    []Kind
	Net      NetMode
	// Dir is where each seed's directory is made (default os.TempDir()).
	Dir string
	// TerminalBound is how long after the faults stop every job must be
	// terminal (DESIGN invariant 4; default 60s).
	TerminalBound time.Duration
	// RecoverBound is how long after each fault the cluster may take to be
	// healthy again before that counts as a failure (default 60s).
	RecoverBound time.Duration
	// KeepDir keeps each seed's directory (data dirs, agent logs, records);
	// it is always kept when the seed found violations.
	KeepDir bool
	Log     *slog.Logger

	// The workload's and faults' shape, for a test that needs another one
	// (a bug that shows only with ranks outliving the lease); the zero
	// values keep the default shape, and a seed's schedule with it.
	//
	// RankTicks bounds each job's rank life in 200 ms ticks, drawn from
	// [RankTicks[0], RankTicks[1]] (default 3 to 15: 0.6 s to 3 s).
	RankTicks [2]int
	// SubmitGap bounds each submitter's pause after a submit, drawn from
	// [SubmitGap[0], SubmitGap[1]) (default 100 ms to 800 ms).
	SubmitGap [2]time.Duration
	// MinFault is the least time each fault is held (default: as drawn).
	MinFault time.Duration
	// Requeue is the share of jobs submitted with --requeue, in (0, 1]
	// (default 0.5).
	Requeue float64

	// AgentArgs are added after DefaultAgentArgs to every agent's command
	// line (a test of stretched leases lowers the renewals a second).
	AgentArgs []string

	// UpgradeFrom, when set, is an older shoal binary: the agents start on
	// it and, in place of the drawn faults, are upgraded to Binary one at
	// a time while the workload runs (kill -9, restart on the same data
	// dir), Duration/(Nodes+1) apart. The checker then judges the mixed
	// cluster's history as any other.
	UpgradeFrom string
}

// Result is what one seed's run found; `shoal chaos --json` prints these.
type Result struct {
	Seed         uint64      `json:"seed"`
	Mode         NetMode     `json:"mode"`
	Faults       int         `json:"faults"`
	Submitted    int         `json:"submitted"`
	Acknowledged int         `json:"acknowledged"`
	Completed    int         `json:"completed"`
	Requeues     int         `json:"requeues"`
	MaxRecoverS  float64     `json:"max_recover_s"`
	Violations   []Violation `json:"violations"`
	Events       []Event     `json:"events"`
	// Jobs counts the final state's jobs by state.
	Jobs map[string]int `json:"jobs"`
	// Dir holds the run's data dirs, agent logs and records when kept.
	Dir string `json:"dir,omitempty"`
	// Timeline is what `shoal chaos --report` and `--plot` draw; nil when
	// the run did not get as far as its final state.
	Timeline *Timeline `json:"-"`
}

// Bounds of a run's waits.
const (
	maxFaultsPerRun  = 1000
	convergeBound    = 30 * time.Second
	recordsSettle    = 3 * time.Second
	finalPoll        = 500 * time.Millisecond
	defaultBound     = 60 * time.Second
	defaultRecoverIn = 60 * time.Second
)

// RunSeed starts a cluster, runs the workload through the seed's fault
// schedule for cfg.Duration, lets the cluster settle and checks the
// invariants. An error means the run itself could not be made (the
// cluster did not start, the final state could not be gathered); broken
// invariants are in Result.Violations.
func RunSeed(ctx context.Context, cfg Config, seed uint64) (res Result, err error) {
	res = Result{Seed: seed, Violations: []Violation{}, Jobs: map[string]int{}}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.TerminalBound == 0 {
		cfg.TerminalBound = defaultBound
	}
	if cfg.RecoverBound == 0 {
		cfg.RecoverBound = defaultRecoverIn
	}
	if t := cfg.RankTicks; t != [2]int{} && (t[0] < 1 || t[1] < t[0]) {
		return res, fmt.Errorf("seed %d: rank ticks %v: want 1 <= min <= max", seed, t)
	}
	if g := cfg.SubmitGap; g != [2]time.Duration{} && (g[0] < 0 || g[1] <= g[0]) {
		return res, fmt.Errorf("seed %d: submit gap %v: want 0 <= min < max", seed, g)
	}
	if cfg.Requeue < 0 || cfg.Requeue > 1 {
		return res, fmt.Errorf("seed %d: requeue share %v: want 0 (default) to 1", seed, cfg.Requeue)
	}
	log := cfg.Log.With("component", "chaos", "seed", seed)
	dir, err := os.MkdirTemp(cfg.Dir, "shc")
	if err != nil {
		return res, fmt.Errorf("seed %d: work dir: %w", seed, err)
	}
	res.Dir = dir
	defer func() {
		if err == nil && len(res.Violations) == 0 && !cfg.KeepDir {
			os.RemoveAll(dir)
			res.Dir = ""
		}
	}()
	var args []string
	if len(cfg.AgentArgs) > 0 {
		args = append(slices.Clone(DefaultAgentArgs), cfg.AgentArgs...)
	}
	h, err := Start(ctx, Options{Binary: cmp.Or(cfg.UpgradeFrom, cfg.Binary), Nodes: cfg.Nodes, Dir: dir, Net: cfg.Net, Log: cfg.Log,
		AgentArgs: args})
	if err != nil {
		return res, fmt.Errorf("seed %d: %w", seed, err)
	}
	defer func() {
		if serr := h.Stop(context.WithoutCancel(ctx)); serr != nil {
			err = errors.Join(err, fmt.Errorf("seed %d: stop: %w", seed, serr))
		}
	}()
	res.Mode = h.Mode
	kinds := cfg.Kinds
	if !h.NetFaults() {
		kinds = slices.DeleteFunc(slices.Clone(kinds), Kind.NetKind)
		log.Warn("loopback mode: network faults left out", "faults", kinds)
	}
	plan := Plan(seed, len(h.Agents), kinds, maxFaultsPerRun)
	if cfg.UpgradeFrom != "" {
		plan = upgradePlan(len(h.Agents), cfg.Duration)
	}

	// The leader is sampled for the timeline until the run ends.
	var lw leaderWatch
	lctx, stopLeaders := context.WithCancel(ctx)
	var lwg sync.WaitGroup
	lwg.Go(func() { lw.run(lctx, h) })
	defer func() {
		stopLeaders()
		lwg.Wait()
	}()
	start := time.Now()

	// The workload runs while faults happen; it is stopped when they stop.
	w := NewWorkload(h, seed)
	w.ticks, w.gap, w.requeue = cfg.RankTicks, cfg.SubmitGap, cfg.Requeue
	wctx, stopWorkload := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(wctx) })
	defer func() {
		stopWorkload()
		wg.Wait()
	}()

	end := time.Now().Add(cfg.Duration)
	for _, f := range plan {
		// Every upgrade step happens, even past the end: a run that
		// stopped half-upgraded would not have tested the upgrade.
		if ctx.Err() != nil || (f.Kind != upgrade && time.Now().Add(f.Gap).After(end)) {
			break
		}
		if err := sleep(ctx, f.Gap); err != nil {
			break
		}
		f.Duration = min(max(f.Duration, cfg.MinFault), time.Until(end))
		var ev Event
		var ferr error
		if f.Kind == upgrade {
			ev, ferr = h.upgrade(f.Targets[0], cfg.Binary)
		} else {
			ev, ferr = h.Inject(ctx, f)
		}
		res.Faults++
		rctx, cancel := context.WithTimeout(ctx, cfg.RecoverBound)
		_, herr := h.WaitHealthy(rctx)
		cancel()
		ev.RecoverS = time.Since(ev.End).Seconds()
		if herr != nil {
			ev.RecoverS = -1
			res.Violations = append(res.Violations, Violation{Invariant: 4, Seed: seed, GPU: -1, From: ev.End, To: time.Now(),
				Detail: fmt.Sprintf("cluster not healthy %s after fault %q was healed: %v", cfg.RecoverBound, ev.Fault, herr)})
		} else {
			res.MaxRecoverS = max(res.MaxRecoverS, ev.RecoverS)
		}
		if ferr != nil {
			return res, fmt.Errorf("seed %d: fault %s: %w", seed, ev.Fault, ferr)
		}
		log.Info("recovered", "fault", ev.Fault, "recover_s", ev.RecoverS)
		res.Events = append(res.Events, ev)
	}
	if err := sleep(ctx, time.Until(end)); err != nil {
		return res, fmt.Errorf("seed %d: %w", seed, err)
	}
	stopWorkload()
	wg.Wait()
	faultsEnd := time.Now()
	if err := h.Heal(ctx); err != nil {
		return res, fmt.Errorf("seed %d: heal: %w", seed, err)
	}
	in, err := gatherFinal(ctx, h, log, faultsEnd, cfg.TerminalBound)
	if err != nil {
		return res, fmt.Errorf("seed %d: %w", seed, err)
	}
	in.Seed = seed
	in.Attempts, _ = w.History()
	res.Violations = append(res.Violations, Check(in)...)
	summarize(&res, in)
	stopLeaders()
	lwg.Wait()
	res.Timeline = buildTimeline(in, start, res.Events, lw.Samples(), res.Violations)
	return res, nil
}

// gatherFinal waits (bounded) until every job is terminal and the replicas
// reach one applied index, then reads every replica and the records.
func gatherFinal(ctx context.Context, h *Harness, log *slog.Logger, faultsEnd time.Time, bound time.Duration) (Input, error) {
	in := Input{FaultsEnd: faultsEnd, TerminalBound: bound}
	for _, a := range h.Agents {
		in.Nodes = append(in.Nodes, a.Name)
	}
	// Every job terminal, as any agent answering sees it.
	deadline := faultsEnd.Add(bound)
	for time.Now().Before(deadline) {
		if allTerminal(ctx, h) {
			break
		}
		if err := sleep(ctx, finalPoll); err != nil {
			return in, err
		}
	}
	// Ranks of a cancelled job may outlive its terminal state by the kill
	// grace; let their last records land.
	if err := sleep(ctx, recordsSettle); err != nil {
		return in, err
	}
	// Replicas at one applied index (bounded: the checker reports it
	// inconclusive otherwise).
	cdeadline := time.Now().Add(convergeBound)
	for {
		reps := readReplicas(ctx, h)
		if sameIndex(reps) || !time.Now().Before(cdeadline) {
			in.Replicas = reps
			break
		}
		if err := sleep(ctx, finalPoll); err != nil {
			return in, err
		}
	}
	in.FinalAt = time.Now()
	recs, err := ReadRecords(h.RecordDir)
	if err != nil {
		return in, err
	}
	in.Records = recs
	log.Info("final state gathered", "records", len(recs), "replicas", len(in.Replicas))
	return in, nil
}

func allTerminal(ctx context.Context, h *Harness) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, a := range h.Agents {
		jobs, err := a.Client().Jobs(ctx, false)
		if err != nil {
			continue
		}
		return len(jobs) == 0 // without all=1: only pending and running
	}
	return false
}

// readReplicas reads every agent's status and jobs. The status is read
// before and after the jobs: when the index moved in between, the jobs are
// read again (bounded), so a replica's jobs are those of its status.
func readReplicas(ctx context.Context, h *Harness) []Replica {
	const tries = 5
	var out []Replica
	for _, a := range h.Agents {
		r := Replica{Node: a.Name}
		for try := range tries {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := a.Client().Status(rctx)
			var (
				jobs  []api.Job
				nodes []api.Node
			)
			if err == nil {
				jobs, err = a.Client().Jobs(rctx, true)
			}
			if err == nil {
				nodes, err = a.Client().Nodes(rctx)
			}
			st2 := st
			if err == nil {
				st2, err = a.Client().Status(rctx)
			}
			cancel()
			if err != nil {
				r.Err = fmt.Sprintf("read %s: %v", a.Name, err)
				continue
			}
			r.Err, r.Status, r.Jobs, r.Nodes = "", st2, jobs, nodes
			if st2.AppliedIndex == st.AppliedIndex || try == tries-1 {
				break
			}
		}
		out = append(out, r)
	}
	return out
}

// sameIndex reports whether every replica was read at one applied index;
// workers (Status.Worker), which keep no replica, do not count.
func sameIndex(reps []Replica) bool {
	var index uint64
	n := 0
	for _, r := range reps {
		if r.Err != "" {
			return false
		}
		if r.Status.Worker {
			continue
		}
		if n > 0 && r.Status.HashIndex != index {
			return false
		}
		index = r.Status.HashIndex
		n++
	}
	return n > 0
}

func summarize(res *Result, in Input) {
	sent, acked := map[string]bool{}, map[string]bool{}
	for _, a := range in.Attempts {
		sent[a.RequestID] = true
		if a.Outcome == Acked {
			acked[a.RequestID] = true
		}
	}
	res.Submitted, res.Acknowledged = len(sent), len(acked)
	for _, r := range in.Replicas {
		if r.Err != "" {
			continue
		}
		for _, j := range r.Jobs {
			res.Jobs[j.State]++
			if j.State == "COMPLETED" {
				res.Completed++
			}
			if j.Incarnation > 1 {
				res.Requeues += int(j.Incarnation - 1)
			}
		}
		break
	}
}

// upgrade is the step of a rolling upgrade (Config.UpgradeFrom): not a
// Kind a schedule draws.
const upgrade Kind = "upgrade"

// upgradePlan upgrades agents 0 to nodes-1 in turn, evenly spread over
// the run.
func upgradePlan(nodes int, d time.Duration) []Fault {
	out := make([]Fault, nodes)
	for i := range out {
		out[i] = Fault{Kind: upgrade, Targets: []int{i}, Gap: d / time.Duration(nodes+1)}
	}
	return out
}

// upgrade restarts agent i on binary from its data dir: kill -9 (the
// harshest way an operator's restart can go), then start.
func (h *Harness) upgrade(i int, binary string) (Event, error) {
	a := h.Agents[i]
	ev := Event{Kind: upgrade, Fault: "upgrade " + a.Name, Targets: []string{a.Name}, Start: time.Now()}
	h.log.Info("upgrade", "node", a.Name, "binary", binary)
	err := h.Kill(i)
	if err == nil {
		h.SetBinary(i, binary)
		err = h.Restart(i)
	}
	ev.End = time.Now()
	if err != nil {
		err = fmt.Errorf("upgrade %s: %w", a.Name, err)
		ev.Err = err.Error()
	}
	return ev, err
}
