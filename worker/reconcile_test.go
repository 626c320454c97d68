package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/fsm"
)

// TestScripts runs the scenarios in testdata. Each directive describes
// the replicated jobs and the executor's tasks in its input lines, then
// shows the decision:
//
//	reconcile [canstart=no]                  Reconcile
//	exits [max=N]                            Exits (max 256 by default)
//	maystart renewed=SECONDS-AGO|never ttl=SECONDS index=I view=V
//	fence renewed=SECONDS-AGO|never inherited=SECONDS-FROM-NOW|none ttl=SECONDS running=N
//	                                         Fence; inherited is when the inherited
//	                                         lease ends (negative: it has ended)
//	round [canstart=no] [fail-start=J] [fail-report=N]
//	                                         Driver.Round, showing what it does in
//	                                         order: the start of job J fails, the
//	                                         Nth report (from 1) fails
//	report-round [fail-report=N]             Reporter.Round, showing each exit reported
//	                                         and acknowledged, in order
//
// with input lines
//
//	node NAME                                this node (default n1)
//	job id=J nodes=A,B [state=S] [inc=I] [batch=yes] [started=A,B] [released=A] [exited=A] [removed=A] [rejoined=A]
//	                                         (removed: a node an elastic job gave up;
//	                                         rejoined: one it lost and took back, Join 1)
//	                                         a job (state running, inc 1 by default);
//	                                         started: shares the leader saw start
//	step job=J id=S nodes=A,B [state=S] [inc=I] [exited=A] [lost=A]
//	running KEY...                           the executor's tasks: J.I (own task) or J.I.S,
//	                                         ~N for the node's entry N (J.I~1)
//	pending KEY...                           exits recorded, not yet acknowledged
//
// Regenerate with: go test ./worker -run TestScripts -rewrite
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			s := &script{node: "n1"}
			for line := range strings.Lines(d.Input) {
				if err := s.setup(strings.Fields(line)); err != nil {
					d.Fatalf(t, "%s: %v", d.Pos, err)
				}
			}
			out, err := s.decide(d.Cmd, argMap(d.CmdArgs))
			if err != nil {
				d.Fatalf(t, "%s: %v", d.Pos, err)
			}
			return out
		})
	})
}

type script struct {
	node             string
	jobs             []*cluster.Job
	running, pending []task.Key
}

func argMap(cas []datadriven.CmdArg) map[string]string {
	args := map[string]string{}
	for _, a := range cas {
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	return args
}

// setup applies one input line.
func (s *script) setup(f []string) error {
	if len(f) == 0 {
		return nil
	}
	args := map[string]string{}
	for _, w := range f[1:] {
		k, v, _ := strings.Cut(w, "=")
		args[k] = v
	}
	switch f[0] {
	case "node":
		if len(f) != 2 {
			return fmt.Errorf("node: want one name")
		}
		s.node = f[1]
		return nil
	case "job":
		return s.job(args)
	case "step":
		return s.step(args)
	case "running", "pending":
		var keys []task.Key
		for _, w := range f[1:] {
			k, err := parseKey(w)
			if err != nil {
				return err
			}
			keys = append(keys, k)
		}
		if f[0] == "running" {
			s.running = keys
		} else {
			s.pending = keys
		}
		return nil
	}
	return fmt.Errorf("unknown input %q", f[0])
}

// decide runs one decision on the state the input lines built.
func (s *script) decide(cmd string, args map[string]string) (string, error) {
	switch cmd {
	case "reconcile":
		p := Reconcile(Input{Node: s.node, Jobs: s.jobs, Running: s.running, PendingExits: s.pending, CanStart: args["canstart"] != "no"})
		return formatPlan(p), nil
	case "round":
		return s.round(args)
	case "report-round":
		return s.reportRound(args)
	case "exits":
		max := 256
		if m, ok := args["max"]; ok {
			var err error
			if max, err = strconv.Atoi(m); err != nil {
				return "", fmt.Errorf("max: %w", err)
			}
		}
		return joinKeys(Exits(s.running, s.pending, max)) + "\n", nil
	case "fence":
		now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		ago := func(k string) (time.Time, error) {
			switch v := args[k]; v {
			case "never", "none":
				return time.Unix(0, 0), nil // as the agent reads a lease never renewed
			default:
				n, err := strconv.Atoi(v)
				if err != nil {
					return time.Time{}, fmt.Errorf("%s=%q: %w", k, v, err)
				}
				return now.Add(-time.Duration(n) * time.Second), nil
			}
		}
		renewed, err := ago("renewed")
		if err != nil {
			return "", err
		}
		inherited := time.Unix(0, 0)
		if v := args["inherited"]; v != "none" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", fmt.Errorf("inherited=%q: %w", v, err)
			}
			inherited = now.Add(time.Duration(n) * time.Second)
		}
		ttl, err := strconv.Atoi(args["ttl"])
		if err != nil {
			return "", fmt.Errorf("ttl: %w", err)
		}
		running, err := strconv.Atoi(args["running"])
		if err != nil {
			return "", fmt.Errorf("running: %w", err)
		}
		end, fence := Fence(Lease{Renewed: renewed, TTL: time.Duration(ttl) * time.Second}, inherited, now, running)
		return fmt.Sprintf("fence=%t end=%+ds\n", fence, int(end.Sub(now)/time.Second)), nil
	case "maystart":
		now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		n := func(k string) int { v, _ := strconv.Atoi(args[k]); return v }
		l := Lease{Renewed: now.Add(-time.Duration(n("renewed")) * time.Second), TTL: time.Duration(n("ttl")) * time.Second, Index: uint64(n("index"))}
		if args["renewed"] == "never" {
			l.Renewed = time.Time{}
		}
		return fmt.Sprintln(MayStart(l, now, uint64(n("view")))), nil
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

func (s *script) job(args map[string]string) error {
	id, err := strconv.ParseUint(args["id"], 10, 64)
	if err != nil {
		return fmt.Errorf("id: %w", err)
	}
	j := &cluster.Job{ID: cluster.JobID(id), Incarnation: 1, State: cluster.JobRunning, Alloc: &cluster.Allocation{}}
	if st, ok := args["state"]; ok {
		j.State = cluster.JobState(strings.ToUpper(st))
	}
	if inc, ok := args["inc"]; ok {
		if j.Incarnation, err = strconv.ParseUint(inc, 10, 64); err != nil {
			return fmt.Errorf("inc: %w", err)
		}
	}
	if args["batch"] == "yes" {
		j.Spec.Batch = &cluster.Batch{}
	}
	in := func(list, node string) bool { return list != "" && strings.Contains(","+list+",", ","+node+",") }
	for n := range strings.SplitSeq(args["nodes"], ",") {
		na := cluster.NodeAlloc{Node: n, State: cluster.TaskAssigned}
		switch {
		case in(args["exited"], n):
			na.State = cluster.TaskExited
		case in(args["started"], n):
			na.State = cluster.TaskRunning
		}
		na.Released = in(args["released"], n)
		na.Removed = in(args["removed"], n)
		j.Alloc.Nodes = append(j.Alloc.Nodes, na)
	}
	// rejoined: nodes an elastic job lost and took back, as a new entry
	// (Join 1) after the released one.
	for n := range strings.SplitSeq(args["rejoined"], ",") {
		if i := j.Alloc.Find(n); n != "" && i >= 0 {
			j.Alloc.Elastic = true
			j.Alloc.Nodes[i].State, j.Alloc.Nodes[i].Released = cluster.TaskLost, true
			j.Alloc.Nodes = append(j.Alloc.Nodes, cluster.NodeAlloc{Node: n, State: cluster.TaskAssigned, Join: 1, Slot: i + 1})
		}
	}
	s.jobs = append(s.jobs, j)
	return nil
}

func (s *script) step(args map[string]string) error {
	var j *cluster.Job
	for _, x := range s.jobs {
		if fmt.Sprint(uint64(x.ID)) == args["job"] {
			j = x
		}
	}
	if j == nil {
		return fmt.Errorf("no job %q", args["job"])
	}
	id, err := strconv.Atoi(args["id"])
	if err != nil {
		return fmt.Errorf("id: %w", err)
	}
	st := cluster.Step{ID: id, Incarnation: j.Incarnation, State: cluster.StepRunning}
	if v, ok := args["state"]; ok {
		st.State = cluster.StepState(strings.ToUpper(v))
	}
	if inc, ok := args["inc"]; ok {
		if st.Incarnation, err = strconv.ParseUint(inc, 10, 64); err != nil {
			return fmt.Errorf("inc: %w", err)
		}
	}
	in := func(list, node string) bool { return list != "" && strings.Contains(","+list+",", ","+node+",") }
	for n := range strings.SplitSeq(args["nodes"], ",") {
		sn := cluster.StepNode{Node: n, Tasks: 1, State: cluster.TaskRunning}
		switch {
		case in(args["exited"], n):
			sn.State = cluster.TaskExited
		case in(args["lost"], n):
			sn.State = cluster.TaskLost
		}
		st.Nodes = append(st.Nodes, sn)
	}
	j.Steps = append(j.Steps, st)
	return nil
}

// parseKey reads J.I (a job's own task) or J.I.S (step S), each with
// ~N for the node's entry N (task.Key.Join).
func parseKey(s string) (task.Key, error) {
	s, join, rejoined := strings.Cut(s, "~")
	k, err := parseKey0(s)
	if err == nil && rejoined {
		k.Join, err = strconv.Atoi(join)
	}
	return k, err
}

func parseKey0(s string) (task.Key, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return task.Key{}, fmt.Errorf("task %q: want JOB.INC or JOB.INC.STEP", s)
	}
	var n [3]uint64
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return task.Key{}, fmt.Errorf("task %q: %w", s, err)
		}
		n[i] = v
	}
	k := task.Key{Job: cluster.JobID(n[0]), Incarnation: n[1], Step: task.NoStep}
	if len(parts) == 3 {
		k.Step = int(n[2])
	}
	return k, nil
}

func formatKey(k task.Key) string {
	return k.DirName()
}

func joinKeys(ks []task.Key) string {
	if len(ks) == 0 {
		return "(none)"
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = formatKey(k)
	}
	return strings.Join(out, " ")
}

func formatPlan(p Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stop: %s\n", joinKeys(p.Stop))
	b.WriteString("start:")
	if len(p.Start) == 0 {
		b.WriteString(" (none)")
	}
	for _, s := range p.Start {
		fmt.Fprintf(&b, " %s@%d", formatKey(s.Key()), s.NodeIndex)
	}
	b.WriteString("\n")
	refs := func(name string, rs []Ref) {
		fmt.Fprintf(&b, "%s:", name)
		if len(rs) == 0 {
			b.WriteString(" (none)")
		}
		for _, r := range rs {
			fmt.Fprintf(&b, " %s", formatKey(task.Key{Job: r.Job, Incarnation: r.Incarnation, Step: task.NoStep, Join: r.Join}))
		}
		b.WriteString("\n")
	}
	refs("started", p.Started)
	refs("release", p.Release)
	return b.String()
}

// round runs Driver.Round over fakes that log each action in order.
func (s *script) round(args map[string]string) (string, error) {
	f := &fakeNode{script: s, canStart: args["canstart"] != "no"}
	var err error
	if v, ok := args["fail-start"]; ok {
		if f.failStart, err = strconv.ParseUint(v, 10, 64); err != nil {
			return "", fmt.Errorf("fail-start: %w", err)
		}
	}
	if v, ok := args["fail-report"]; ok {
		if f.failReport, err = strconv.Atoi(v); err != nil {
			return "", fmt.Errorf("fail-report: %w", err)
		}
	}
	d := Driver[fakeView]{Name: s.node, Node: f, Tasks: f, Log: slog.New(slog.DiscardHandler)}
	d.Round(context.Background(), fakeView{jobs: s.jobs})
	if len(f.did) == 0 {
		return "nothing\n", nil
	}
	return strings.Join(f.did, "\n") + "\n", nil
}

type fakeView struct{ jobs []*cluster.Job }

func (v fakeView) Jobs() []*cluster.Job   { return v.jobs }
func (fakeView) Changed() <-chan struct{} { return nil }

// fakeNode is worker.Node and worker.Tasks over a script: it logs what
// the round does.
type fakeNode struct {
	script     *script
	canStart   bool
	failStart  uint64
	failReport int
	reports    int
	did        []string
}

func (f *fakeNode) Current() (fakeView, bool) { return fakeView{jobs: f.script.jobs}, true }
func (f *fakeNode) MayStart(fakeView) bool    { return f.canStart }
func (f *fakeNode) Follow(fakeView)           {}
func (f *fakeNode) Running() []task.Key       { return f.script.running }
func (f *fakeNode) PendingExits() []task.Key  { return f.script.pending }

func (f *fakeNode) Start(_ context.Context, _ fakeView, st Start) bool {
	if uint64(st.Job.ID) == f.failStart {
		f.did = append(f.did, "start "+formatKey(st.Key())+": failed")
		return false
	}
	f.did = append(f.did, "start "+formatKey(st.Key()))
	return true
}

func (f *fakeNode) Stop(k task.Key, cause string) bool {
	f.did = append(f.did, "stop "+formatKey(k)+" cause="+cause)
	return true
}

func (f *fakeNode) Report(_ context.Context, r Report) error {
	f.reports++
	line := fmt.Sprintf("report %s %d.%d", r.Kind, r.Job, r.Incarnation)
	if f.reports == f.failReport {
		f.did = append(f.did, line+": leader unreachable")
		return fmt.Errorf("leader unreachable")
	}
	f.did = append(f.did, line)
	return nil
}

// reportRound runs Reporter.Round over the script's running tasks and
// pending exits (exit code 0, cause exit), logging each action.
func (s *script) reportRound(args map[string]string) (string, error) {
	f := &fakeExits{script: s}
	if v, ok := args["fail-report"]; ok {
		var err error
		if f.failReport, err = strconv.Atoi(v); err != nil {
			return "", fmt.Errorf("fail-report: %w", err)
		}
	}
	r := Reporter{Exits: f, Leader: f, Log: slog.New(slog.DiscardHandler)}
	r.Round(context.Background())
	if len(f.did) == 0 {
		return "nothing\n", nil
	}
	return strings.Join(f.did, "\n") + "\n", nil
}

// fakeExits is worker.ExitLog and worker.ExitReporter over a script.
type fakeExits struct {
	script     *script
	failReport int
	reports    int
	did        []string
}

func (f *fakeExits) Running() []task.Key     { return f.script.running }
func (f *fakeExits) Notify() <-chan struct{} { return nil }

func (f *fakeExits) Recorded() []Exit {
	var out []Exit
	for _, k := range f.script.pending {
		out = append(out, Exit{Key: k, Cause: task.CauseExit})
	}
	return out
}

func (f *fakeExits) Ack(k task.Key) error {
	f.did = append(f.did, "ack "+formatKey(k))
	return nil
}

func (f *fakeExits) ReportExit(_ context.Context, e Exit) error {
	f.reports++
	line := fmt.Sprintf("report %s code=%d cause=%s", formatKey(e.Key), e.ExitCode, e.Cause)
	if f.reports == f.failReport {
		f.did = append(f.did, line+": leader unreachable")
		return fmt.Errorf("leader unreachable")
	}
	f.did = append(f.did, line)
	return nil
}

// TestRunHolds: a run holds a node while its job is at that incarnation
// and the node's latest entry is not released.
func TestRunHolds(t *testing.T) {
	job := func(inc uint64, nodes ...cluster.NodeAlloc) *cluster.Job {
		return &cluster.Job{ID: 4, Incarnation: inc, State: cluster.JobRunning, Alloc: &cluster.Allocation{Nodes: nodes}}
	}
	ref := Ref{Job: 4, Incarnation: 2}
	for _, tt := range []struct {
		name string
		jobs []*cluster.Job
		want bool
	}{
		{"held", []*cluster.Job{job(2, cluster.NodeAlloc{Node: "n1"})}, true},
		{"released", []*cluster.Job{job(2, cluster.NodeAlloc{Node: "n1", Released: true})}, false},
		{"taken back after a release", []*cluster.Job{job(2, cluster.NodeAlloc{Node: "n1", Released: true}, cluster.NodeAlloc{Node: "n1", Join: 1})}, true},
		{"not on this node", []*cluster.Job{job(2, cluster.NodeAlloc{Node: "n2"})}, false},
		{"another run", []*cluster.Job{job(3, cluster.NodeAlloc{Node: "n1"})}, false},
		{"not allocated", []*cluster.Job{{ID: 4, Incarnation: 2, State: cluster.JobPending}}, false},
		{"gone", nil, false},
	} {
		if got := RunHolds(fsm.PartialView(5, tt.jobs, nil, nil, nil, nil), ref, "n1"); got != tt.want {
			t.Errorf("%s: RunHolds = %v; want %v", tt.name, got, tt.want)
		}
	}
}
