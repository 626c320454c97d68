package leader

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// op runs the script command op (see TestScripts): a queue operation's
// plan, then each of its proposals applied at the next index as the agent
// does (node's propose), with what each refusal means.
func (h *harness) op(words []string, args map[string]string, num func(string, int) (int, error)) (string, error) {
	if len(words) != 1 {
		return "", fmt.Errorf("op: want one verb, have %q", words)
	}
	uid, err := num("uid", 1000)
	if err != nil {
		return "", err
	}
	c := Caller{Identity: cluster.Identity{User: args["user"], UID: uid, Proven: args["proven"] != "no"}, InOperatorGroup: args["group"] == "yes"}
	v := h.s.View()
	id := args["job"]
	ref := func() (cluster.JobRef, error) { return cluster.ParseJobRef(id) }
	jobID := func() (cluster.JobID, error) {
		n, err := strconv.ParseUint(id, 10, 64)
		return cluster.JobID(n), err
	}
	secs := func(k string) (*int64, error) {
		s, ok := args[k]
		if !ok {
			return nil, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return &n, err
	}
	var plan QueuePlan
	switch words[0] {
	case "cancel", "hold", "uhold", "release", "requeue":
		r, err := ref()
		if err != nil {
			return "", err
		}
		switch words[0] {
		case "cancel":
			plan, err = PlanCancel(v, r, c)
		case "hold", "uhold":
			plan, err = PlanHold(v, r, words[0] == "uhold", c)
		case "release":
			plan, err = PlanRelease(v, r, c)
		case "requeue":
			plan, err = PlanRequeue(v, r, args["held"] == "yes", args["rid"], args["elements"] != "no", c)
		}
		if err != nil {
			return refusal(err), nil
		}
	case "priority":
		p, err := num("priority", 0)
		if err != nil {
			return "", err
		}
		if plan, err = PlanSetPriority(v, id, int64(p), c); err != nil {
			return refusal(err), nil
		}
	case "update":
		var u JobUpdate
		if u.TimeLimitS, err = secs("limit"); err != nil {
			return "", err
		}
		if u.TimeLimitAddS, err = secs("add"); err != nil {
			return "", err
		}
		if d, ok := args["dep"]; ok {
			if d == "none" {
				d = ""
			}
			u.Dependency = &d
		}
		if name, ok := args["name"]; ok {
			u.Fields.Name = &name
		}
		u.RequestID, u.ElementIDs = args["rid"], args["elements"] != "no"
		if plan, err = PlanUpdate(v, id, u, c); err != nil {
			return refusal(err), nil
		}
	case "signal", "step", "cancel-step":
		j, err := jobID()
		if err != nil {
			return "", err
		}
		n, err := num(map[string]string{"signal": "signal", "step": "inc", "cancel-step": "step"}[words[0]], 0)
		if err != nil {
			return "", err
		}
		switch words[0] {
		case "signal":
			plan, err = PlanSignal(v, j, cmp.Or(n, 10), args["batch"] == "yes", args["rid"], c)
		case "step":
			plan, err = PlanStartStep(v, j, uint64(n), cluster.StepSpec{Command: []string{"hostname"}}, args["dealt"] != "no", args["rid"], c)
		case "cancel-step":
			plan, err = PlanCancelStep(v, j, n, c)
		}
		if err != nil {
			return refusal(err), nil
		}
	default:
		return "", fmt.Errorf("op: unknown verb %q", words[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "answer names %d\n", plan.ID)
	for _, p := range plan.Proposals {
		if p.Refused != nil {
			fmt.Fprintf(&b, "job %d: %s", p.Job, refusal(p.Refused))
			continue
		}
		fmt.Fprintf(&b, "job %d: propose %s\n", p.Job, describe(p.Stamp(h.now)))
	}
	if args["apply"] == "no" {
		return b.String(), nil
	}
	// Act as the agent does (node's propose): in order, ending at the
	// first refusal the plan does not pass over.
	var ids []string
	for _, p := range plan.Proposals {
		if p.Refused != nil {
			fmt.Fprintf(&b, "ends: %s", refusal(p.Refused))
			return b.String(), nil
		}
		res, err := h.apply(p.Type, p.Stamp(h.now))
		if err != nil {
			return "", err
		}
		if res.Err != nil {
			skip, marked := plan.Refusal(res.Err)
			if skip {
				fmt.Fprintf(&b, "job %d: passed over (%v)\n", p.Job, res.Err)
				continue
			}
			fmt.Fprintf(&b, "ends: %s", refusal(marked))
			return b.String(), nil
		}
		if p.Type == fsm.CmdStartStep {
			fmt.Fprintf(&b, "job %d: step %d\n", p.Job, res.StepID)
		}
		if res.Duplicate {
			fmt.Fprintf(&b, "job %d: duplicate: nothing changed\n", p.Job)
			continue
		}
		ids = append(ids, strconv.FormatUint(uint64(p.Job), 10))
	}
	fmt.Fprintf(&b, "changed: [%s]\n", strings.Join(ids, " "))
	return b.String(), nil
}

// refusal is err with the kind it is marked with (the HTTP status it
// becomes).
func refusal(err error) string {
	kind := "unmarked"
	for _, k := range []error{cluster.ErrInvalid, cluster.ErrForbidden, cluster.ErrNotFound, cluster.ErrConflict} {
		if errors.Is(err, k) {
			kind = k.Error()
			break
		}
	}
	return fmt.Sprintf("refused (%s): %v\n", kind, err)
}

// describe is a proposal's command, its pointers followed.
func describe(cmd any) string {
	switch c := cmd.(type) {
	case fsm.CancelJob:
		return "cancel"
	case fsm.SetHold:
		return fmt.Sprintf("hold=%q", c.Hold)
	case fsm.RequeueJob:
		s := fmt.Sprintf("requeue hold=%q", c.Hold)
		if c.RequestID != "" {
			s += " request_id=" + c.RequestID
		}
		return s
	case fsm.SetJobPriority:
		return fmt.Sprintf("priority %d", c.Priority)
	case fsm.UpdateJob:
		var fs []string
		if f := c.Fields.TimeLimit; f != nil {
			fs = append(fs, "limit="+f.String())
		}
		if f := c.Fields.TimeLimitAdd; f != nil {
			fs = append(fs, "add="+f.String())
		}
		if f := c.Fields.Dependency; f != nil {
			fs = append(fs, fmt.Sprintf("dep=%d", len(f.Conditions)))
		}
		if c.Fields.NoDependency {
			fs = append(fs, "no-dependency")
		}
		if f := c.Fields.Name; f != nil {
			fs = append(fs, "name="+*f)
		}
		if c.RequestID != "" {
			fs = append(fs, "request_id="+c.RequestID)
		}
		return fmt.Sprintf("update uid=%d admin=%t %s", c.UID, c.Admin, strings.Join(fs, " "))
	case fsm.SignalJob:
		s := fmt.Sprintf("signal %d batch_only=%t", c.Signal, c.BatchOnly)
		if c.RequestID != "" {
			s += " request_id=" + c.RequestID
		}
		return s
	case fsm.StartStep:
		s := fmt.Sprintf("start step incarnation=%d dealt=%t", c.Incarnation, c.Spec.Dealt)
		if c.RequestID != "" {
			s += " request_id=" + c.RequestID
		}
		return s
	case fsm.CancelStep:
		return fmt.Sprintf("cancel step %d", c.Step)
	}
	return fmt.Sprintf("%T", cmd)
}
