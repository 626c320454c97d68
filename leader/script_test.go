package leader

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/slurm"
)

// TestScripts runs the scenarios in testdata against a real FSM: each
// command that changes the state applies one entry at the next index.
//
//	node NAME gpus=G [switch=S]              UpsertNode
//	node-down NAME                           NodeDown
//	submit nodes=N gpus=G [max=M] [user=U] [qos=Q] [time=SECONDS] [dep=SPEC] [hold=yes] [requeue=no]
//	                                         SubmitJob; prints the job id
//	policy + input: a policy file (JSON)     SetPolicy
//	started job=J                            TaskStarted on every node of its allocation
//	exited job=J [code=C] [node=N]           TaskExited on every node (or on N)
//	tick [s=SECONDS]                         move the clock (default 1s)
//	pass [apply=no] [elastic=no] [rejoin=no] Pass at the current time (elastic=no: some
//	                                         server speaks protocol 3; rejoin=no: some
//	                                         agent speaks protocol 4), then (unless
//	                                         apply=no) act on it with Scheduler.Pass, as
//	                                         the agent does, and show the preemption it
//	                                         started on the state after
//	leases self=N elected=S [held=NODE:E,...] failover=S grace=S
//	                                         ExpiredLeases; elected is seconds before
//	                                         now, E when the lease this leader
//	                                         granted NODE ends (seconds from now,
//	                                         negative: it ended)
//	jobs                                     every job: state, reason, nodes
//	op VERB job=REF uid=U [user=NAME] [group=yes] [apply=no] [held=yes] [uhold=yes]
//	   [priority=P] [signal=N] [batch=yes] [step=S] [inc=I] [limit=S] [add=S] [dep=SPEC]
//	   [rid=R] [elements=no]                 R: the request id (elements=no: a server
//	                                         older than ElementIDsProtocol)
//	                                         a queue operation's plan (cancel, hold, uhold,
//	                                         release, requeue, priority, update, signal,
//	                                         step, cancel-step) for the caller uid (user
//	                                         NAME, in an operator group with group=yes),
//	                                         then, unless apply=no, each proposal applied
//	                                         as the agent does and what its refusal means
//	submit ... [uid=U] [array=N]             (submit's caller; an array of N elements)
//
// Regenerate with: go test ./leader -run TestScripts -rewrite
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{s: fsm.New(), now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := h.run(d)
			if err != nil {
				d.Fatalf(t, "%s: %v", d.Pos, err)
			}
			return out
		})
	})
}

type harness struct {
	s     *fsm.State
	index uint64
	now   time.Time
}

// must applies one command (apply) and fails t unless the FSM accepted
// it.
func (h *harness) must(t testing.TB, ct fsm.CmdType, body any) {
	t.Helper()
	r, err := h.apply(ct, body)
	if err != nil || r.Err != nil {
		t.Fatalf("apply %s: %v %v", ct, err, r.Err)
	}
}

// apply applies one command at the next index, one second later.
func (h *harness) apply(t fsm.CmdType, body any) (fsm.Result, error) {
	data, err := fsm.Encode(t, body)
	if err != nil {
		return fsm.Result{}, err
	}
	h.index++
	h.now = h.now.Add(time.Second)
	return h.s.Apply(h.index, data), nil
}

func result(r fsm.Result, err error) (string, error) {
	switch {
	case err != nil:
		return "", err
	case r.Err != nil:
		return "error: " + r.Err.Error() + "\n", nil
	case r.JobID != 0:
		return fmt.Sprintf("job %d\n", r.JobID), nil
	}
	return "ok\n", nil
}

func (h *harness) run(d *datadriven.TestData) (string, error) {
	args := map[string]string{}
	var words []string
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			words = append(words, a.Key)
			continue
		}
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	num := func(k string, def int) (int, error) {
		v, ok := args[k]
		if !ok {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: %w", k, v, err)
		}
		return n, nil
	}
	job := func() (*cluster.Job, error) {
		id, err := num("job", 0)
		if err != nil {
			return nil, err
		}
		j, ok := h.s.View().Job(cluster.JobID(id))
		if !ok {
			return nil, fmt.Errorf("no job %d", id)
		}
		return j, nil
	}
	switch d.Cmd {
	case "node":
		gpus, err := num("gpus", 8)
		if err != nil {
			return "", err
		}
		n := cluster.Node{Name: words[0], APIAddr: "127.0.0.1:7000", CPUs: 64,
			Topology: cluster.Topology{Switch: cmp.Or(args["switch"], "leaf0"), SwitchParent: "spine0"}}
		for i := range gpus {
			n.GPUs = append(n.GPUs, cluster.GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", n.Name, i), Model: "H100"})
		}
		return result(h.apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: h.now}))
	case "node-down":
		return result(h.apply(fsm.CmdNodeDown, fsm.NodeDown{Node: words[0], Time: h.now}))
	case "submit":
		var nodes, gpus, limit, uid, maxNodes, deadline, array int
		for _, a := range []struct {
			key string
			def int
			to  *int
		}{
			{"nodes", 1, &nodes}, {"gpus", 0, &gpus}, {"time", 0, &limit}, {"uid", 1000, &uid},
			{"max", 0, &maxNodes}, {"deadline", 0, &deadline}, {"array", 0, &array},
		} {
			v, err := num(a.key, a.def)
			if err != nil {
				return "", err
			}
			*a.to = v
		}
		sp := cluster.Spec{Name: "train", Command: []string{"python", "train.py"}, User: cmp.Or(args["user"], "ada"), UID: uid, GID: 1000,
			Request: cluster.Request{Nodes: nodes, NodesMax: maxNodes, GPUsPerNode: gpus, TimeLimit: time.Duration(limit) * time.Second}.WithDefaults(),
			QoS:     args["qos"], Hold: args["hold"] == "yes", Requeue: args["requeue"] != "no"}
		if deadline > 0 {
			sp.Deadline = h.now.Add(time.Duration(deadline) * time.Second) // seconds after this submit's time
		}
		if array > 0 {
			sp.Array = &cluster.ArraySpec{}
			for i := range array {
				sp.Array.Indices = append(sp.Array.Indices, i)
			}
		}
		if v := args["dep"]; v != "" {
			dep, err := slurm.ParseDependency(v)
			if err != nil {
				return "", err
			}
			sp.Dependency = cluster.DependencyFromSlurm(dep)
		}
		return result(h.apply(fsm.CmdSubmitJob, fsm.SubmitJob{Spec: sp, Time: h.now}))
	case "policy":
		p, err := cluster.ParsePolicyJSON([]byte(d.Input))
		if err != nil {
			return "", err
		}
		return result(h.apply(fsm.CmdSetPolicy, fsm.SetPolicy{Policy: p, Time: h.now}))
	case "started", "exited":
		j, err := job()
		if err != nil {
			return "", err
		}
		code, err := num("code", 0)
		if err != nil {
			return "", err
		}
		var out strings.Builder
		for _, n := range j.Alloc.NodeNames() {
			if only := args["node"]; only != "" && n != only {
				continue
			}
			var s string
			if d.Cmd == "started" {
				s, err = result(h.apply(fsm.CmdTaskStarted, fsm.TaskStarted{Job: j.ID, Incarnation: j.Incarnation, Node: n, Time: h.now}))
			} else {
				s, err = result(h.apply(fsm.CmdTaskExited, fsm.TaskExited{Job: j.ID, Incarnation: j.Incarnation, Node: n, ExitCode: code, Time: h.now}))
			}
			if err != nil {
				return "", err
			}
			if s != "ok\n" {
				out.WriteString(n + ": " + s)
			}
		}
		return cmp.Or(out.String(), "ok\n"), nil
	case "tick":
		s, err := num("s", 1)
		if err != nil {
			return "", err
		}
		h.now = h.now.Add(time.Duration(s) * time.Second)
		return "", nil
	case "pass":
		return h.pass(args["apply"] != "no", args["elastic"] != "no", args["rejoin"] != "no", args["self"])
	case "leases":
		return h.leases(args)
	case "jobs":
		return h.jobs(), nil
	case "op":
		return h.op(words, args, num)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// pass runs Pass and, when apply, acts on its plan in the agent's order,
// as the leader on node self (Scheduler.Self; empty: none of the nodes).
func (h *harness) pass(apply, elastic, rejoin bool, self string) (string, error) {
	now := h.now
	p, err := Pass(PassInput{View: h.s.View(), Now: now, Elastic: elastic, Rejoin: elastic && rejoin})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	line := func(name string, items []string) {
		if len(items) > 0 {
			fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(items, " "))
		}
	}
	var xs []string
	for _, id := range p.Cancel {
		xs = append(xs, fmt.Sprint(uint64(id)))
	}
	line("cancel", xs)
	xs = nil
	for _, id := range p.Deadline {
		xs = append(xs, fmt.Sprint(uint64(id)))
	}
	line("deadline", xs)
	line("wait", reasons(p.WaitReasons))
	xs = nil
	for _, e := range p.EndPreemptions {
		xs = append(xs, fmt.Sprintf("%d(%s)", e.Job, map[bool]string{true: "requeue", false: "cancel"}[e.Requeue]))
	}
	line("end-preemption", xs)
	xs = nil
	for _, dc := range p.Allocations {
		var nodes []string
		for _, pl := range dc.Nodes {
			nodes = append(nodes, fmt.Sprintf("%s:%s", pl.Node, cluster.CPUList(pl.GPUs)))
		}
		xs = append(xs, fmt.Sprintf("%d=%s", dc.Job, strings.Join(nodes, ",")))
	}
	line("allocate", xs)
	line("reasons", reasons(p.Reasons))
	xs = nil
	for _, g := range p.Grows {
		var nodes []string
		for _, pl := range g.Nodes {
			nodes = append(nodes, fmt.Sprintf("%s:%s", pl.Node, cluster.CPUList(pl.GPUs)))
		}
		x := fmt.Sprintf("%d+%s", g.Job, strings.Join(nodes, ","))
		if g.Rejoin {
			x += "(rejoin)"
		}
		xs = append(xs, x)
	}
	line("grow", xs)
	if !apply {
		return cmp.Or(b.String(), "nothing\n"), nil
	}
	// Act as the agent does: the leader's own Scheduler, proposing to
	// this harness's FSM at the pass's time.
	rec := &recorder{h: h}
	announced := 0
	s := Scheduler{State: h.s, Propose: rec, Clock: fixedClock(now), Metrics: rec,
		Log: slog.New(slog.DiscardHandler), Announce: func() { announced++ }, Self: self}
	if !elastic {
		s.Gate = func(context.Context, fsm.CmdType, int) error { return fsm.ErrUnsupportedByCluster }
	}
	if !rejoin {
		s.Agents = func(need int) bool { return need <= 4 }
	}
	if _, err := s.Pass(context.Background(), h.s.View(), nil); err != nil {
		return "", err
	}
	if len(rec.preempts) > 0 {
		var vs []string
		for _, pj := range rec.preempts {
			vs = append(vs, fmt.Sprint(uint64(pj.Job)))
		}
		pre := rec.preempts[0]
		fmt.Fprintf(&b, "preempt for %d: %s (grace until +%s)\n", pre.By, strings.Join(vs, " "), pre.Deadline.Sub(now))
	}
	for _, sj := range rec.shrinks {
		fmt.Fprintf(&b, "shrink %d: gives up %s\n", sj.Job, sj.Node)
	}
	errs := rec.errs
	for _, e := range errs {
		fmt.Fprintf(&b, "fsm: %s\n", e)
	}
	if announced > 0 { // the followers learn the commit at once (Scheduler.Announce)
		fmt.Fprintf(&b, "announce commit\n")
	}
	return cmp.Or(b.String(), "nothing\n"), nil
}

// recorder is the Scheduler's Proposer and SchedulerMetrics over the
// harness: it applies each command at the next index and notes what the
// FSM refused and which jobs were preempted.
type recorder struct {
	h        *harness
	errs     []string
	preempts []fsm.PreemptJob
	shrinks  []fsm.ShrinkJob
}

func (r *recorder) Apply(_ context.Context, t fsm.CmdType, body any) (fsm.Result, error) {
	res, err := r.h.apply(t, body)
	if err != nil {
		return res, err
	}
	if res.Err != nil {
		r.errs = append(r.errs, res.Err.Error())
	}
	for _, rej := range res.Rejected {
		r.errs = append(r.errs, fmt.Sprintf("job %d rejected: %s", rej.Job, rej.Reason))
	}
	if pj, ok := body.(fsm.PreemptJob); ok {
		r.preempts = append(r.preempts, pj)
	}
	if sj, ok := body.(fsm.ShrinkJob); ok && res.Err == nil {
		r.shrinks = append(r.shrinks, sj)
	}
	return res, nil
}

func (r *recorder) Passed(time.Duration)  {}
func (r *recorder) Placed()               {}
func (r *recorder) Started(time.Duration) {}
func (r *recorder) Preempted()            {}

// fixedClock is a Clock stopped at one time; Scheduler.Pass only reads Now.
type fixedClock time.Time

func (c fixedClock) Now() time.Time                     { return time.Time(c) }
func (fixedClock) After(time.Duration) <-chan time.Time { return nil }
func (fixedClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return nil, func() {}
}

func reasons(rs []fsm.JobReason) []string {
	var xs []string
	for _, r := range rs {
		xs = append(xs, fmt.Sprintf("%d=%s", r.Job, r.Reason))
	}
	return xs
}

// leases runs ExpiredLeases on the state's nodes.
func (h *harness) leases(args map[string]string) (string, error) {
	secs := func(k, v string) (time.Duration, error) {
		s, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: want seconds: %w", k, v, err)
		}
		return time.Duration(s) * time.Second, nil
	}
	elected, err := secs("elected", args["elected"])
	if err != nil {
		return "", err
	}
	failover, err := secs("failover", args["failover"])
	if err != nil {
		return "", err
	}
	grace, err := secs("grace", args["grace"])
	if err != nil {
		return "", err
	}
	held := map[string]time.Time{}
	if hb := args["held"]; hb != "" {
		for item := range strings.SplitSeq(hb, ",") {
			node, v, ok := strings.Cut(item, ":")
			if !ok {
				return "", fmt.Errorf("held: %q: want NODE:SECONDS", item)
			}
			d, err := secs("held", v)
			if err != nil {
				return "", err
			}
			held[node] = h.now.Add(d)
		}
	}
	var xs []string
	for _, e := range ExpiredLeases(h.s.View().Nodes(), args["self"], func(n string) time.Time { return held[n] },
		h.now.Add(-elected), h.now, failover, grace) {
		xs = append(xs, fmt.Sprintf("%s(ended -%s)", e.Node, h.now.Sub(e.Until)))
	}
	if len(xs) == 0 {
		return "none expired\n", nil
	}
	return "expired: " + strings.Join(xs, " ") + "\n", nil
}

func (h *harness) jobs() string {
	var b strings.Builder
	for _, j := range h.s.View().Jobs() {
		fmt.Fprintf(&b, "%d %s", j.ID, j.State)
		if j.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", j.Reason)
		}
		if j.Alloc != nil {
			fmt.Fprintf(&b, " nodes=%s", strings.Join(j.Alloc.LiveNodes(), ","))
			if j.Alloc.Elastic {
				b.WriteString(" elastic")
			}
		}
		if j.Preempt != nil {
			fmt.Fprintf(&b, " preempted-by=%d", j.Preempt.By)
		}
		if j.Incarnation > 1 {
			fmt.Fprintf(&b, " inc=%d", j.Incarnation)
		}
		b.WriteString("\n")
	}
	return cmp.Or(b.String(), "no jobs\n")
}
