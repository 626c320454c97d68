package fsm

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// TestScripts runs the scenarios in testdata/scripts. Each command applies
// one entry at the next index, one second after the last:
//
//	submit nodes=N gpus=G [rid=R] [name=X] [tpn=T] [requeue=yes] [batch=yes]
//	       [array=SPEC] [dep=SPEC] [hold=yes] [user=U]   (--array, --dependency, --hold)
//	       [partition=P] [time=SECONDS] [qos=Q] [begin=S] [deadline=S] [nokill=yes]
//	                                         (S: seconds after the log's first entry)
//	                                         SubmitJob (batch=yes: a script, no command)
//	       [cpt=C] [cpg=C] [mem=M] [mpc=M] [mpg=M] [excl=yes]
//	                                         -c, --cpus-per-gpu, --mem, --mem-per-cpu/-gpu, --exclusive
//	node NAME gpus=G [switch=S] [cpus=C] [mem=M] [layout=S,C,T]   UpsertNode
//	node-down NAME                           NodeDown
//	allocate [consumable=yes] job=J NODE:g,g[:CPULIST[:MEM]] ... | input lines of the same form
//	alloc job=J                              the job's allocation: GPUs, CPUs, memory per node
//	grow job=J NODE:g,g[:CPULIST[:MEM]] ... [inc=I]   GrowJob (submit max=N: -N nodes-N; allocate elastic=yes)
//	shrink job=J node=N [inc=I]              ShrinkJob
//	places job=J                             live nodes' places (SlotOf) and JoinSlot
//	update-nodes job=J nodes=K               UpdateJob NumNodes=K, as root
//	update-time job=J add=S [rid=R]          UpdateJob TimeLimit=+S seconds, as root
//	resizes job=J                            the elastic allocation's live nodes and resizes
//	started job=J node=N [inc=I]             TaskStarted (inc defaults to the job's)
//	exited job=J node=N [code=C] [cause=X] [inc=I]
//	cancel job=J [reason=R]
//	hold job=J [by=user|admin] / release job=J   SetHold
//	requeue job=J [hold=user|admin] [rid=R]  RequeueJob
//	signal job=J [sig=N] [rid=R]             SignalJob (sig defaults to 10)
//	signals job=J                            the job's signal requests: number@seq
//	gates                                    Gates.Admit for every pending job
//	policy + input: a policy file (JSON)     SetPolicy
//	spec job=J                               the job's partition and time limit
//	priority job=J p=P                       SetJobPriority
//	preempt job=J by=B [grace=S]             PreemptJob, deadline S seconds on
//	preempted job=J                          the job's preemption and signals
//	reasons J=REASON ...                     SetReasons
//	step job=J [nodes=N] [tpn=T] [n=NTASKS] [gpt=G] [cmd=(a,b)] [on=(n1,n2)] [inc=I]
//	     [excl=yes] [gpus=G] [gpn=G] [exact=yes] [c=C] [rid=R]
//	                                         StartStep (cmd defaults to hostname;
//	                                         excl: Exclusive, holding --gpus, --exact, -c;
//	                                         rid: its request id)
//	holds job=J                              what the job's live step nodes hold
//	step-exited job=J step=S node=N [code=C] [cause=X] [inc=I]
//	cancel-step job=J step=S                 CancelStep
//	archive age=S [forget=yes]               ArchiveJobs of jobs that ended S seconds
//	                                         before now (forget: ForgetRequests)
//	wait s=N                                 N seconds pass (no entry)
//	rids                                     the request id table: id kind job [step] [at]
//	raw hex=BYTES                            an arbitrary entry
//	show                                     jobs, steps (if any) and nodes as tables
//	roundtrip                                Snapshot -> Restore -> Snapshot
//
// Regenerate with: go test ./fsm -run TestScripts -rewrite
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		h := newHarness()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return runScript(t, h, d)
		})
	})
}

func runScript(t *testing.T, h *harness, d *datadriven.TestData) string {
	intArg := func(key string, def int) int {
		if !d.HasArg(key) {
			return def
		}
		var v int
		d.ScanArgs(t, key, &v)
		return v
	}
	strArg := func(key, def string) string {
		if !d.HasArg(key) {
			return def
		}
		var v string
		d.ScanArgs(t, key, &v)
		return v
	}
	jobArg := func() cluster.JobID { return cluster.JobID(intArg("job", 0)) }
	// incArg defaults to the job's current incarnation.
	incArg := func(id cluster.JobID) uint64 {
		def := 0
		if j, ok := h.s.View().Job(id); ok {
			def = int(j.Incarnation)
		}
		return uint64(intArg("inc", def))
	}
	positional := func() string {
		if len(d.CmdArgs) == 0 || len(d.CmdArgs[0].Vals) != 0 {
			d.Fatalf(t, "%s: want a name first", d.Cmd)
		}
		return d.CmdArgs[0].Key
	}

	switch d.Cmd {
	case "submit":
		sp := spec(1, 0) // no WithDefaults here: nodes=0 must stay invalid
		sp.Request.Nodes, sp.Request.GPUsPerNode = intArg("nodes", 1), intArg("gpus", 0)
		sp.Name = strArg("name", sp.Name)
		sp.Requeue = strArg("requeue", "") == "yes"
		sp.Request.TasksPerNode = intArg("tpn", sp.Request.TasksPerNode)
		if strArg("batch", "") == "yes" {
			sp.Command = nil
			sp.Batch = &cluster.Batch{Script: "#!/bin/sh\nsrun hostname\n", Elastic: strArg("elastic", "") == "yes"}
		}
		if v := strArg("array", ""); v != "" {
			a, err := slurm.ParseArray(v)
			if err != nil {
				d.Fatalf(t, "submit: %v", err)
			}
			sp.Array = cluster.ArrayFromSlurm(a)
		}
		if v := strArg("dep", ""); v != "" {
			dep, err := slurm.ParseDependency(v)
			if err != nil {
				d.Fatalf(t, "submit: %v", err)
			}
			sp.Dependency = cluster.DependencyFromSlurm(dep)
		}
		sp.Hold = strArg("hold", "") == "yes"
		sp.NoKill = strArg("nokill", "") == "yes"
		if b := intArg("begin", 0); b > 0 {
			sp.Begin = t0.Add(time.Duration(b) * time.Second) // seconds after the log's first entry
		}
		if dl := intArg("deadline", 0); dl > 0 {
			sp.Deadline = t0.Add(time.Duration(dl) * time.Second) // as begin=
		}
		sp.Request.Partition = strArg("partition", "")
		sp.QoS = strArg("qos", "")
		sp.Request.TimeLimit = time.Duration(intArg("time", 0)) * time.Second
		sp.User = strArg("user", sp.User)
		sp.Request.CPUsPerTask = intArg("cpt", sp.Request.CPUsPerTask)
		sp.Request.CPUsPerGPU = intArg("cpg", 0)
		sp.Request.MemPerNodeMiB = uint64(intArg("mem", 0))
		sp.Request.MemPerCPUMiB = uint64(intArg("mpc", 0))
		sp.Request.MemPerGPUMiB = uint64(intArg("mpg", 0))
		sp.Request.Exclusive = strArg("excl", "") == "yes"
		sp.Request.NodesMax = intArg("max", 0)
		return resultString(h.apply(t, CmdSubmitJob, SubmitJob{RequestID: strArg("rid", ""), Spec: sp}))
	case "node":
		n := gpuNode(positional(), intArg("gpus", 0), strArg("switch", "leaf0"))
		n.CPUs = intArg("cpus", n.CPUs)
		n.MemoryMiB = uint64(intArg("mem", 0))
		if l := strArg("layout", ""); l != "" {
			if _, err := fmt.Sscanf(l, "%d,%d,%d", &n.Sockets, &n.CoresPerSocket, &n.ThreadsPerCore); err != nil {
				d.Fatalf(t, "node: layout %q: want S,C,T", l)
			}
		}
		return resultString(h.apply(t, CmdUpsertNode, UpsertNode{Node: n}))
	case "node-down":
		return resultString(h.apply(t, CmdNodeDown, NodeDown{Node: positional()}))
	case "node-left":
		return resultString(h.apply(t, CmdNodeLeft, NodeLeft{Node: positional()}))
	case "allocate":
		var ds []Decision
		if d.Input != "" {
			for _, line := range strings.Split(d.Input, "\n") {
				ds = append(ds, parseDecision(t, d, strings.Fields(line)))
			}
		} else {
			var words []string
			for _, a := range d.CmdArgs {
				words = append(words, a.String())
			}
			ds = append(ds, parseDecision(t, d, words))
		}
		if strArg("elastic", "") == "yes" {
			for i := range ds {
				ds[i].Elastic = true
			}
		}
		return resultString(h.apply(t, CmdAllocate, Allocate{Decisions: ds, Consumable: strArg("consumable", "") == "yes"}))
	case "grow":
		var words []string
		for _, a := range d.CmdArgs {
			if a.Key != "inc" && a.Key != "rejoin" {
				words = append(words, a.String())
			}
		}
		dec := parseDecision(t, d, words)
		inc := uint64(intArg("inc", 0))
		if j, ok := h.s.View().Job(dec.Job); ok && inc == 0 {
			inc = j.Incarnation
		}
		return resultString(h.apply(t, CmdGrowJob, GrowJob{Job: dec.Job, Incarnation: inc, Nodes: dec.Nodes, Rejoin: strArg("rejoin", "") == "yes"}))
	case "shrink":
		id := jobArg()
		inc := uint64(intArg("inc", 0))
		if j, ok := h.s.View().Job(id); ok && inc == 0 {
			inc = j.Incarnation
		}
		return resultString(h.apply(t, CmdShrinkJob, ShrinkJob{Job: id, Incarnation: inc, Node: strArg("node", "")}))
	case "update-time":
		add := time.Duration(intArg("add", 0)) * time.Second
		return resultString(h.apply(t, CmdUpdateJob, UpdateJob{Job: jobArg(), Admin: true, Fields: JobUpdate{TimeLimitAdd: &add}, Time: h.now, RequestID: strArg("rid", "")}))
	case "update-nodes":
		n := intArg("nodes", 0)
		return resultString(h.apply(t, CmdUpdateJob, UpdateJob{Job: jobArg(), Admin: true, Fields: JobUpdate{Nodes: &n}, Time: h.now}))
	case "resizes":
		j, ok := h.s.View().Job(jobArg())
		if !ok || j.Alloc == nil {
			return "no allocation\n"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "elastic=%v live=%s\n", j.Alloc.Elastic, strings.Join(j.Alloc.LiveNodes(), ","))
		for _, r := range j.Alloc.Resizes {
			fmt.Fprintf(&b, "%s %s %s nodes=%d\n", offset(r.Time), r.Cause, r.Node, r.Nodes)
		}
		return b.String()
	case "report-switch":
		// report-switch switch=S [bridge=A,B] [host=C,D]: its LLDP
		// neighbours, switches (bridge) and hosts.
		r := cluster.SwitchReport{Switch: strArg("switch", "")}
		for _, a := range d.CmdArgs {
			for _, v := range a.Vals {
				switch a.Key {
				case "bridge":
					r.Neighbors = append(r.Neighbors, cluster.SwitchNeighbor{Name: v, Bridge: true})
				case "host":
					r.Neighbors = append(r.Neighbors, cluster.SwitchNeighbor{Name: v})
				}
			}
		}
		return resultString(h.apply(t, CmdReportSwitch, ReportSwitch{Report: r.Canonical(), Time: h.now}))
	case "switches":
		var b strings.Builder
		for _, r := range h.s.View().Switches() {
			fmt.Fprintf(&b, "%s %s:", offset(r.Time), r.Switch)
			for _, n := range r.Neighbors {
				fmt.Fprintf(&b, " %s", n.Name)
				if n.Bridge {
					b.WriteString("(bridge)")
				}
			}
			b.WriteString("\n")
		}
		links := h.s.View().SwitchLinks()
		for _, sw := range slices.Sorted(maps.Keys(links)) {
			fmt.Fprintf(&b, "link %s: %s\n", sw, strings.Join(links[sw], " "))
		}
		return cmp.Or(b.String(), "none\n")
	case "places", "alloc":
		j, ok := h.s.View().Job(jobArg())
		if !ok || j.Alloc == nil {
			return "no allocation\n"
		}
		var b strings.Builder
		if d.Cmd == "places" {
			for i, na := range j.Alloc.Nodes {
				if j.Alloc.Live(i) {
					fmt.Fprintf(&b, "%s=%d ", na.Node, j.Alloc.SlotOf(i))
				}
			}
			fmt.Fprintf(&b, "join=%d\n", j.Alloc.JoinSlot())
			return b.String()
		}
		for _, na := range j.Alloc.Nodes {
			fmt.Fprintf(&b, "%s gpus=%v cpus=%s mem=%d released=%v", na.Node, na.GPUs, cmp.Or(cluster.CPUList(na.CPUs), "-"), na.MemMiB, na.Released)
			if j.Alloc.Elastic {
				fmt.Fprintf(&b, " state=%s join=%d", na.State, na.Join)
			}
			b.WriteString("\n")
		}
		return b.String()
	case "started":
		id := jobArg()
		return resultString(h.apply(t, CmdTaskStarted, TaskStarted{Job: id, Incarnation: incArg(id), Node: strArg("node", ""), Join: intArg("join", 0)}))
	case "exited":
		id := jobArg()
		return resultString(h.apply(t, CmdTaskExited, TaskExited{
			Job: id, Incarnation: incArg(id), Node: strArg("node", ""), Join: intArg("join", 0),
			ExitCode: intArg("code", 0), Cause: strArg("cause", CauseExit),
		}))
	case "cancel":
		return resultString(h.apply(t, CmdCancelJob, CancelJob{Job: jobArg(), Reason: strArg("reason", "")}))
	case "policy":
		p, err := cluster.ParsePolicyJSON([]byte(d.Input))
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return resultString(h.apply(t, CmdSetPolicy, SetPolicy{Policy: p}))
	case "spec":
		j, ok := h.s.View().Job(jobArg())
		if !ok {
			return "no such job\n"
		}
		return fmt.Sprintf("partition=%s time_limit=%s\n", orDash(j.Spec.Request.Partition), j.Spec.Request.TimeLimit)
	case "priority":
		r := h.apply(t, CmdSetJobPriority, SetJobPriority{Job: jobArg(), Priority: int64(intArg("p", 0))})
		if r.Err != nil {
			return resultString(r)
		}
		j, _ := h.s.View().Job(jobArg())
		return fmt.Sprintf("admin priority %d\n", j.AdminPriority)
	case "preempt":
		// The deadline is grace seconds after this entry's time.
		deadline := h.now.Add(time.Second + time.Duration(intArg("grace", 0))*time.Second)
		return resultString(h.apply(t, CmdPreemptJob, PreemptJob{Job: jobArg(), By: cluster.JobID(intArg("by", 0)), Deadline: deadline}))
	case "preempted":
		j, ok := h.s.View().Job(jobArg())
		if !ok || j.Preempt == nil {
			return "not preempted\n"
		}
		var sigs []string
		for _, r := range j.Signals {
			sigs = append(sigs, fmt.Sprintf("%d(batch=%v,everywhere=%v)", r.Number, r.BatchOnly, r.Everywhere))
		}
		return fmt.Sprintf("by %d until %s, signals %s\n", j.Preempt.By, offset(j.Preempt.Deadline), strings.Join(sigs, " "))
	case "signal":
		return resultString(h.apply(t, CmdSignalJob, SignalJob{Job: jobArg(), Signal: intArg("sig", 10), RequestID: strArg("rid", "")}))
	case "signals":
		j, ok := h.s.View().Job(jobArg())
		if !ok {
			return "no such job\n"
		}
		var sigs []string
		for _, r := range j.Signals {
			sigs = append(sigs, fmt.Sprintf("%d@%d", r.Number, r.Seq))
		}
		return fmt.Sprintf("signals [%s]\n", strings.Join(sigs, " "))
	case "hold":
		return resultString(h.apply(t, CmdSetHold, SetHold{Job: jobArg(), Hold: strArg("by", cluster.HoldUser)}))
	case "release":
		return resultString(h.apply(t, CmdSetHold, SetHold{Job: jobArg()}))
	case "requeue":
		return resultString(h.apply(t, CmdRequeueJob, RequeueJob{Job: jobArg(), Hold: strArg("hold", ""), RequestID: strArg("rid", "")}))
	case "gates":
		// What Gates says of every pending job, in ID order, at the time
		// the next entry would carry.
		v := h.s.View()
		g := v.Gates(h.now.Add(time.Second))
		var b strings.Builder
		for _, j := range v.Jobs() {
			if j.State != cluster.JobPending {
				continue
			}
			name := strconv.FormatUint(uint64(j.ID), 10)
			if j.Array != nil {
				name += " (" + j.Array.Name() + ")"
			}
			fmt.Fprintf(&b, "%s: %s\n", name, orDash(g.Admit(j)))
		}
		return b.String()
	case "step":
		id := jobArg()
		sp := cluster.StepSpec{Command: []string{"hostname"}, Nodes: intArg("nodes", 0), TasksPerNode: intArg("tpn", 0), GPUsPerTask: intArg("gpt", 0), NTasks: intArg("n", 0)}
		for _, a := range d.CmdArgs {
			switch a.Key {
			case "cmd":
				sp.Command = a.Vals
			case "on":
				sp.NodeList = a.Vals
			case "nokill":
				sp.NoKill = a.Vals[0] == "yes"
			case "excl":
				sp.Exclusive = a.Vals[0] == "yes"
			case "exact":
				sp.Exact = a.Vals[0] == "yes"
			}
		}
		sp.GPUs, sp.GPUsPerNode, sp.CPUsPerTask = intArg("gpus", 0), intArg("gpn", 0), intArg("c", 0)
		r := h.apply(t, CmdStartStep, StartStep{Job: id, Incarnation: incArg(id), Spec: sp, RequestID: strArg("rid", "")})
		switch {
		case r.Err != nil:
			return resultString(r)
		case r.Duplicate:
			return fmt.Sprintf("duplicate of step %d.%d\n", r.JobID, r.StepID)
		}
		return fmt.Sprintf("step %d.%d\n", id, r.StepID)
	case "holds":
		// What each step of the job holds on its nodes, live ones only.
		j, ok := h.s.View().Job(jobArg())
		if !ok {
			d.Fatalf(t, "holds: no job %d", jobArg())
		}
		var b strings.Builder
		for _, st := range j.Steps {
			for _, sn := range st.Nodes {
				if taskLive(sn.State) && (len(sn.GPUs) > 0 || len(sn.CPUs) > 0) {
					fmt.Fprintf(&b, "step %d %s: gpus %v cpus %s\n", st.ID, sn.Node, sn.GPUs, orDash(cluster.CPUList(sn.CPUs)))
				}
			}
		}
		return orDash(b.String())
	case "step-exited":
		id := jobArg()
		return resultString(h.apply(t, CmdStepExited, StepExited{
			Job: id, Incarnation: incArg(id), Step: intArg("step", 0), Node: strArg("node", ""),
			ExitCode: intArg("code", 0), Cause: strArg("cause", CauseExit),
		}))
	case "cancel-step":
		return resultString(h.apply(t, CmdCancelStep, CancelStep{Job: jobArg(), Step: intArg("step", 0)}))
	case "reasons":
		var c SetReasons
		for _, a := range d.CmdArgs {
			id, err := strconv.ParseUint(a.Key, 10, 64)
			if err != nil || len(a.Vals) != 1 {
				d.Fatalf(t, "reasons: %s: want JOB=REASON", a)
			}
			c.Reasons = append(c.Reasons, JobReason{Job: cluster.JobID(id), Reason: a.Vals[0]})
		}
		return resultString(h.apply(t, CmdSetReasons, c))
	case "drain", "resume":
		return resultString(h.apply(t, CmdSetDrain, SetDrain{Node: positional(), Drain: d.Cmd == "drain", Reason: strArg("reason", "")}))
	case "archive":
		return resultString(h.apply(t, CmdArchiveJobs, ArchiveJobs{
			Before:         h.now.Add(time.Second - time.Duration(intArg("age", 0))*time.Second), // as of the entry's own time
			ForgetRequests: strArg("forget", "") == "yes",
		}))
	case "wait":
		h.now = h.now.Add(time.Duration(intArg("s", 0)) * time.Second)
		return "ok\n"
	case "rids":
		var b strings.Builder
		for _, p := range h.s.View().rids.sorted() {
			fmt.Fprintf(&b, "%s %s job %d", p.RequestID, cmp.Or(p.Kind, "submit"), p.Job)
			if p.Kind == ridStep {
				fmt.Fprintf(&b, " step %d.%d", p.Incarnation, p.Step)
			}
			if !p.At.IsZero() {
				fmt.Fprintf(&b, " at +%ds", int(p.At.Sub(t0)/time.Second))
			}
			b.WriteString("\n")
		}
		return cmp.Or(b.String(), "none\n")
	case "raw":
		b, err := hex.DecodeString(strArg("hex", ""))
		if err != nil {
			d.Fatalf(t, "raw: %v", err)
		}
		h.index++
		return resultString(h.s.Apply(h.index, b))
	case "show":
		return show(h.s.View())
	case "roundtrip":
		a := mustSnapshot(t, h.s)
		r := New()
		if err := r.Restore(a); err != nil {
			return "restore: " + err.Error() + "\n"
		}
		if b := mustSnapshot(t, r); !bytes.Equal(a, b) {
			return "snapshot differs after restore\n"
		}
		// Not the size: it moves with every field a record gains.
		return "identical\n"
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// parseDecision parses "job=J node:g,g node:g,g" ("node:" for no GPUs).
func parseDecision(t *testing.T, d *datadriven.TestData, words []string) Decision {
	var dec Decision
	for _, w := range words {
		if strings.HasPrefix(w, "consumable=") || strings.HasPrefix(w, "elastic=") {
			continue
		}
		if v, ok := strings.CutPrefix(w, "job="); ok {
			id, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				d.Fatalf(t, "allocate: %s: %v", w, err)
			}
			dec.Job = cluster.JobID(id)
			continue
		}
		name, list, ok := strings.Cut(w, ":")
		if !ok {
			d.Fatalf(t, "allocate: %q: want job=J or NODE:g,g[:CPULIST[:MEM]]", w)
		}
		p := Placement{Node: name}
		list, cpus, _ := strings.Cut(list, ":")
		cpus, mem, _ := strings.Cut(cpus, ":")
		var err error
		if p.CPUs, err = cluster.ParseCPUList(cpus); err != nil {
			d.Fatalf(t, "allocate: %q: %v", w, err)
		}
		if mem != "" {
			m, err := strconv.ParseUint(mem, 10, 64)
			if err != nil {
				d.Fatalf(t, "allocate: %q: %v", w, err)
			}
			p.MemMiB = m
		}
		for _, g := range strings.Split(list, ",") {
			if g == "" {
				continue
			}
			n, err := strconv.Atoi(g)
			if err != nil {
				d.Fatalf(t, "allocate: %q: %v", w, err)
			}
			p.GPUs = append(p.GPUs, n)
		}
		dec.Nodes = append(dec.Nodes, p)
	}
	return dec
}

func resultString(r Result) string {
	var b strings.Builder
	switch {
	case r.Err != nil:
		fmt.Fprintf(&b, "error: %v\n", r.Err)
	case r.Duplicate:
		fmt.Fprintf(&b, "duplicate of job %d\n", r.JobID)
	case r.JobID != 0:
		fmt.Fprintf(&b, "job %d\n", r.JobID)
	case len(r.Rejected) == 0:
		b.WriteString("ok\n")
	}
	for _, rj := range r.Rejected {
		fmt.Fprintf(&b, "rejected job %d: %s\n", rj.Job, rj.Reason)
	}
	return b.String()
}

// show prints the view as two compact tables; times are seconds after t0.
func show(v *View) string {
	var b strings.Builder
	fmt.Fprintf(&b, "index %d\n", v.Index)
	w := tabwriter.NewWriter(&b, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "job\tstate\tinc\treason\texit\tstart\tend\tport\talloc")
	for _, j := range v.Jobs() {
		port, alloc := "-", "-"
		if j.Alloc != nil {
			port = strconv.Itoa(j.Alloc.MasterPort)
			var parts []string
			for _, na := range j.Alloc.Nodes {
				s := fmt.Sprintf("%s[%s]:%s", na.Node, cluster.IndexCSV(na.GPUs), na.State)
				if na.State == cluster.TaskExited {
					s += fmt.Sprintf("(%d)", na.ExitCode)
				}
				if na.Released {
					s += "*"
				}
				parts = append(parts, s)
			}
			alloc = strings.Join(parts, " ")
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", j.ID, j.State, j.Incarnation, orDash(j.Reason),
			j.ExitCode, offset(j.StartTime), offset(j.EndTime), port, alloc)
	}
	w.Flush()
	showSteps(&b, v)
	w = tabwriter.NewWriter(&b, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "node\tstatus\tgpus\tfree\tswitch")
	for _, n := range v.Nodes() {
		status := string(n.Status)
		if n.Drain {
			status += fmt.Sprintf("+drain(%s)", n.DrainReason)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", n.Name, status, len(n.GPUs), orDash(cluster.IndexCSV(v.FreeGPUs(n.Name))), n.Topology.Switch)
	}
	w.Flush()
	return b.String()
}

// showSteps prints every job's steps, if any job has one, as JOB.STEP
// lines; each node shows its ranks, its state and, once exited, its code.
func showSteps(b *strings.Builder, v *View) {
	w := tabwriter.NewWriter(b, 0, 0, 1, ' ', 0)
	header := false
	for _, j := range v.Jobs() {
		for _, st := range j.Steps {
			if !header {
				fmt.Fprintln(w, "step\tstate\tinc\texit\tstart\tend\ttpn\tgpt\tnodes")
				header = true
			}
			parts := make([]string, len(st.Nodes))
			for i, sn := range st.Nodes {
				parts[i] = fmt.Sprintf("%s[%d-%d]:%s", sn.Node, sn.FirstRank, sn.FirstRank+sn.Tasks-1, sn.State)
				if sn.State != cluster.TaskAssigned {
					parts[i] += fmt.Sprintf("(%d)", sn.ExitCode)
				}
			}
			fmt.Fprintf(w, "%d.%d\t%s\t%d\t%d\t%s\t%s\t%d\t%d\t%s\n", j.ID, st.ID, st.State, st.Incarnation, st.ExitCode,
				offset(st.StartTime), offset(st.EndTime), st.Spec.TasksPerNode, st.Spec.GPUsPerTask, strings.Join(parts, " "))
		}
	}
	w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func offset(tm time.Time) string {
	if tm.IsZero() {
		return "-"
	}
	return fmt.Sprintf("+%ds", int(tm.Sub(t0)/time.Second))
}
