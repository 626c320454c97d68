//lint:file-ignore ST1005 scontrol update's refusals are Slurm's words, capitals included: scripts match them

package slurmcli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

// JobRefArg checks a job reference (slurm.ParseJobRef) and returns
// it as given, for the agent to resolve; without several, N_[LIST] is
// refused.
func JobRefArg(s string, several bool) (string, error) {
	r, err := slurm.ParseJobRef(s)
	if err != nil {
		return "", err
	}
	if r.List && !several {
		return "", fmt.Errorf("job id %q: names several array elements, want one (N or N_M)", s)
	}
	return s, nil
}

// runScontrolWrite carries out scontrol's writes: hold, uhold, release,
// requeue, requeuehold (on jobs, array elements or whole arrays, as a
// comma-separated list) and update of a node's State and Reason. It
// reports whether args were such a command.
func runScontrolWrite(ctx context.Context, connect Connect, args []string) (bool, error) {
	verb := strings.ToLower(args[0])
	switch verb {
	case "hold", "uhold", "release", "requeue", "requeuehold":
	case "update":
		return true, scontrolUpdate(ctx, connect, args[1:])
	default:
		return false, nil
	}
	ids := splitJobIDs(args[1:])
	if verb == "requeuehold" || verb == "requeue" {
		// scontrol requeuehold State=SpecialExit: Shoal has no such state.
		var kept []string
		for _, id := range ids {
			if strings.Contains(id, "=") {
				return true, fmt.Errorf("%s %s: not supported by Shoal", verb, id)
			}
			kept = append(kept, id)
		}
		ids = kept
	}
	if len(ids) == 0 {
		return true, fmt.Errorf("%s: want a job id (N, N_M, N_[LIST]), or several separated by commas", verb)
	}
	c, err := connect()
	if err != nil {
		return true, err
	}
	for _, id := range ids {
		ref, err := JobRefArg(id, true)
		if err != nil {
			return true, err
		}
		var changed api.JobsChanged
		switch verb {
		case "hold", "uhold":
			changed, err = c.Hold(ctx, ref, verb == "uhold")
		case "release":
			changed, err = c.Release(ctx, ref)
		default:
			// One request per reference: sent again across a failover, it
			// requeues one run (of each element, for an array).
			changed, err = c.Requeue(ctx, ref, verb == "requeuehold", request.NewID())
		}
		if err != nil {
			return true, fmt.Errorf("%s job %s: %w", verb, ref, err)
		}
		if len(changed.IDs) == 0 {
			return true, fmt.Errorf("%s job %s: no job in a state for it", verb, ref)
		}
	}
	return true, nil
}

// scontrolUpdate is `scontrol update NodeName=N State=DRAIN|RESUME
// Reason=...`; other updates are refused naming what is not supported.
func scontrolUpdate(ctx context.Context, connect Connect, args []string) error {
	fields := map[string]string{}
	var order []string
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("update: %q: want KEY=VALUE", a)
		}
		k = strings.ToLower(k)
		fields[k] = v
		order = append(order, k)
	}
	if job, ok := fields["jobid"]; ok {
		return scontrolUpdateJob(ctx, connect, job, fields, order)
	}
	node, ok := fields["nodename"]
	if !ok {
		return fmt.Errorf("update: want NodeName=NODE State=DRAIN|RESUME [Reason=...] or JobId=N FIELD=VALUE ...")
	}
	for _, k := range order {
		switch k {
		case "nodename", "state", "reason":
		default:
			return fmt.Errorf("update NodeName=%s: %s= not supported by Shoal (State and Reason are)", node, k)
		}
	}
	c, err := connect()
	if err != nil {
		return err
	}
	names, err := slurm.ExpandHostlist(node)
	if err != nil {
		return fmt.Errorf("update NodeName=%s: %w", node, err)
	}
	for _, n := range names {
		switch strings.ToUpper(fields["state"]) {
		case "DRAIN":
			if fields["reason"] == "" {
				return fmt.Errorf("update NodeName=%s State=DRAIN: Reason= is required, as in Slurm", node)
			}
			err = c.Drain(ctx, n, fields["reason"])
		case "RESUME", "IDLE":
			err = c.Resume(ctx, n)
		case "":
			return fmt.Errorf("update NodeName=%s: State= missing (DRAIN or RESUME)", node)
		default:
			return fmt.Errorf("update NodeName=%s State=%s: want DRAIN or RESUME", node, fields["state"])
		}
		if err != nil {
			return fmt.Errorf("update NodeName=%s: %w", n, err)
		}
	}
	return nil
}

// printPartitions is `scontrol show partition [NAME]`: the queue policy's
// partitions in Slurm's layout, or the one partition of a cluster that
// declares none.
func printPartitions(w io.Writer, pol cluster.PolicyFile, only []string) error {
	parts := pol.Partitions
	if len(parts) == 0 {
		parts = map[string]cluster.PartitionFile{ShoalPartition: {Default: true}}
	}
	names := slices.Sorted(maps.Keys(parts))
	if len(only) > 0 {
		if _, ok := parts[only[0]]; !ok {
			return fmt.Errorf("partition %s not found", only[0])
		}
		names = only[:1]
	}
	yesNo := map[bool]string{true: "YES", false: "NO"}
	for i, name := range names {
		p := parts[name]
		if i > 0 {
			fmt.Fprintln(w)
		}
		maxTime, defTime := "UNLIMITED", "NONE"
		if p.MaxTime != "" {
			if d, err := slurm.ParseTime(p.MaxTime); err == nil && d > 0 {
				maxTime = slurm.FormatTime(d)
			}
		}
		if p.DefaultTime != "" {
			if d, err := slurm.ParseTime(p.DefaultTime); err == nil && d > 0 {
				defTime = slurm.FormatTime(d)
			}
		}
		nodes := p.Nodes
		if nodes == "" {
			nodes = "ALL"
		}
		fmt.Fprintf(w, "PartitionName=%s\n", name)
		fmt.Fprintf(w, "   Default=%s State=UP\n", yesNo[p.Default])
		fmt.Fprintf(w, "   DefaultTime=%s MaxTime=%s PriorityJobFactor=%d\n", defTime, maxTime, p.Priority)
		fmt.Fprintf(w, "   Nodes=%s\n", nodes)
	}
	return nil
}

// scontrolUpdateJob is `scontrol update JobId=N Field=Value ...`:
// Priority (root: an absolute priority, 0 to return to the multifactor
// one), and TimeLimit, NumNodes, Partition, QOS, Dependency, Name (or
// JobName), Comment and Nice, which the leader checks as Slurm does
// (fsm.PlanJobUpdate) and applies all together or not at all.
func scontrolUpdateJob(ctx context.Context, connect Connect, job string, fields map[string]string, order []string) error {
	req, err := parseJobUpdate(fields, order)
	if err != nil {
		return err
	}
	priority, setPriority := int64(0), false
	if v, ok := fields["priority"]; ok {
		p, err := strconv.ParseInt(v, 10, 64)
		if err != nil || p < 0 || p > cluster.MaxAdminPriority {
			return fmt.Errorf("update JobId=%s Priority=%s: want 0 to %d", job, v, int64(cluster.MaxAdminPriority))
		}
		priority, setPriority = p, true
	}
	ids := splitJobIDs([]string{job})
	if len(ids) == 0 {
		return fmt.Errorf("update JobId=%s: want a job id (N, N_M, N_[LIST]), or several separated by commas", job)
	}
	var refs []string
	for _, id := range ids {
		ref, err := JobRefArg(id, true)
		if err != nil {
			return err
		}
		refs = append(refs, ref)
	}
	c, err := connect()
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if setPriority {
			if _, err := c.SetPriority(ctx, ref, priority); err != nil {
				return fmt.Errorf("update JobId=%s: %w", ref, err)
			}
		}
		if req == (api.UpdateRequest{}) {
			continue
		}
		// One request per reference: sent again across a failover, it
		// adds a relative time limit once (to each element, for an
		// array).
		one := req
		one.RequestID = request.NewID()
		if _, err := c.UpdateJob(ctx, ref, one); err != nil {
			return fmt.Errorf("update JobId=%s: %w", ref, err)
		}
	}
	return nil
}

// parseJobUpdate reads scontrol update's job fields (keys in lower case)
// into the request, with scontrol's words for a value it cannot read.
func parseJobUpdate(fields map[string]string, order []string) (api.UpdateRequest, error) {
	var req api.UpdateRequest
	str := func(k string) *string { v := fields[k]; return &v }
	for _, k := range order {
		v := fields[k]
		switch k {
		case "jobid", "priority":
		case "timelimit":
			// +M and -M change the limit by M (Slurm's time formats).
			sign, t := int64(0), v
			if v != "" && (v[0] == '+' || v[0] == '-') {
				sign, t = map[byte]int64{'+': 1, '-': -1}[v[0]], v[1:]
			}
			d, err := slurm.ParseTime(t)
			if err != nil || t == "" || (sign != 0 && d == 0) {
				return req, fmt.Errorf("Invalid TimeLimit value")
			}
			s := int64(d / time.Second)
			if sign != 0 {
				s *= sign
				req.TimeLimitAddS = &s
			} else {
				req.TimeLimitS = &s
			}
		case "numnodes":
			n, err := strconv.Atoi(v)
			if err != nil {
				return req, fmt.Errorf("Invalid numeric value %q for requested node count.", v)
			}
			req.Nodes = &n
		case "partition":
			req.Partition = str(k)
		case "qos":
			req.QoS = str(k)
		case "dependency":
			req.Dependency = str(k)
		case "name", "jobname":
			req.Name = str(k)
		case "comment":
			req.Comment = str(k)
		case "nice":
			n, err := strconv.Atoi(v)
			if err != nil {
				return req, fmt.Errorf("Invalid nice value %q", v)
			}
			req.Nice = &n
		default:
			return req, fmt.Errorf("Update of this parameter is not supported: %s=%s (Shoal updates TimeLimit, NumNodes, Partition, QOS, Dependency, Name, Comment, Nice and Priority)\nRequest aborted", k, v)
		}
	}
	return req, nil
}
