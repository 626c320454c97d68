package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

var scancelOpts = []slurm.Option{
	optUser,
	{Long: "me", Arg: slurm.NoArg},
	{Long: "name", Short: 'n', Arg: slurm.NeedArg},
	{Long: "jobname", Arg: slurm.NeedArg},
	{Long: "state", Short: 't', Arg: slurm.NeedArg},
	optPartition,
	optQuiet,
	optVerbose,
	{Long: "hurry", Short: 'H', Arg: slurm.NoArg},
	{Long: "full", Short: 'f', Arg: slurm.NoArg},
	{Long: "signal", Short: 's', Arg: slurm.NeedArg},
	{Long: "batch", Short: 'b', Arg: slurm.NoArg},
	{Long: "interactive", Short: 'i', Arg: slurm.NoArg, Unsupported: "scancel asks no questions here"},
	{Long: "account", Short: 'A', Arg: slurm.NeedArg},
	optQoS,
	{Long: "reservation", Short: 'R', Arg: slurm.NeedArg, Unsupported: "Shoal has no reservations"},
	{Long: "nodelist", Short: 'w', Arg: slurm.NeedArg},
	optClusters,
	{Long: "sibling", Arg: slurm.NeedArg, Unsupported: noFederation},
	{Long: "wckey", Arg: slurm.NeedArg, Unsupported: "Shoal has no accounting"},
	optHelp,
	optUsage,
}

// scancelTarget is one job (or step, when step >= 0) named on the
// command line.
type scancelTarget struct {
	job  uint64
	step int
	arg  string
	// element is "N_M" or "N_[LIST]" for array elements.
	element string
}

// parseScancelIDs parses scancel's operands: N (a job, or every element
// of array N), N_M or N_[LIST] (array elements), or N.S for one step.
func parseScancelIDs(args []string) ([]scancelTarget, error) {
	var out []scancelTarget
	for _, s := range splitJobIDs(args) {
		jobPart, stepPart, hasStep := strings.Cut(s, ".")
		t := scancelTarget{step: -1, arg: s}
		r, err := slurm.ParseJobRef(jobPart)
		if err != nil || (r.Tasks != nil && hasStep) {
			return nil, slurmErrorf("Invalid job id %s", s)
		}
		t.job = r.ID
		if r.Tasks != nil {
			t.element = jobPart
		}
		if hasStep {
			st, err := strconv.Atoi(stepPart)
			if err != nil || st < 0 {
				return nil, slurmErrorf("Invalid job id %s", s)
			}
			t.step = st
		}
		out = append(out, t)
	}
	return out, nil
}

// parseScancelStates parses scancel -t: the states (slurm.ParseJobState)
// a job can be cancelled in, which are all scancel takes.
func parseScancelStates(list string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, s := range splitList(list) {
		name, _ := slurm.ParseJobState(s)
		switch name {
		case "PENDING":
			want["PENDING"] = true
			want["REQUEUED"] = true // waiting to run again
		case "RUNNING":
			want["RUNNING"] = true
		case "SUSPENDED":
			want["SUSPENDED"] = true // no Shoal job is ever suspended
		default:
			return nil, slurmErrorf("Invalid job state specified: %s\nValid job states are PENDING, RUNNING, and SUSPENDED", s)
		}
	}
	return want, nil
}

// Scancel is scancel: cancel the jobs named, or every live job that
// matches the filters. Like Slurm 22.05's scancel, a job that does not
// exist or has already ended is not an error (-v reports it); a
// malformed id, a job of another user and a failed request are.
func Scancel(ctx context.Context, connect Connect, args []string, stderr io.Writer) error {
	vals, rest, err := cliArgs("scancel", scancelOpts, args, stderr)
	if err != nil {
		return err
	}
	var users, names, nodes []string
	var states map[string]bool
	quiet, verbose := false, false
	var parts, accounts, qos []string
	// --signal sends a signal instead of cancelling: to the jobs' steps,
	// or with --batch to their batch shells (without --signal, --batch
	// changes nothing: a cancel ends the whole job).
	var sig api.SignalRequest
	for _, v := range vals {
		switch v.Opt.Long {
		case "user":
			users = append(users, resolveUsers(v.Value)...)
		case "me":
			users = append(users, currentIdentity().User)
		case "name", "jobname":
			names = append(names, splitList(v.Value)...)
		case "nodelist":
			if nodes, err = expandNodeFilter(v.Value); err != nil {
				return err
			}
		case "state":
			if states, err = parseScancelStates(v.Value); err != nil {
				return err
			}
		case "partition":
			parts = append(parts, splitList(v.Value)...)
		case "account":
			accounts = append(accounts, splitList(v.Value)...)
		case "qos":
			qos = append(qos, splitList(v.Value)...)
		case "quiet":
			quiet = true
		case "verbose":
			verbose = true
		case "signal":
			if sig.Signal, err = SignalName("--signal", v.Value); err != nil {
				return slurmErrorf("Invalid signal name: %s", v.Value)
			}
		case "batch":
			sig.BatchOnly = true
		}
	}
	targets, err := parseScancelIDs(rest)
	if err != nil {
		return err
	}
	filtered := len(users) > 0 || len(names) > 0 || states != nil || len(parts) > 0 || len(nodes) > 0 ||
		len(accounts) > 0 || len(qos) > 0
	if len(targets) == 0 && !filtered {
		return slurmErrorf("No job identification provided")
	}
	c, err := connect()
	if err != nil {
		return err
	}
	if filtered {
		jobs, err := c.Jobs(ctx, false)
		if err != nil {
			return err
		}
		match := func(j api.Job) bool {
			switch {
			case len(parts) > 0 && !slices.Contains(parts, jobPartition(j)):
				return false
			case len(nodes) > 0 && !onNodes(j, nodes):
				return false
			case len(users) > 0 && !slices.Contains(users, j.User):
				return false
			case len(accounts) > 0 && !slices.Contains(accounts, j.Account):
				return false
			case len(qos) > 0 && !slices.Contains(qos, j.QoS):
				return false
			case len(names) > 0 && !slices.Contains(names, j.Name):
				return false
			case states != nil:
				return states[j.State]
			}
			return liveState(j.State)
		}
		if len(targets) == 0 {
			for _, j := range jobs {
				if match(j) {
					targets = append(targets, scancelTarget{job: j.ID, step: -1, arg: strconv.FormatUint(j.ID, 10)})
				}
			}
		} else {
			// Ids and filters: only the named jobs that match.
			var keep []scancelTarget
			for _, t := range targets {
				i := slices.IndexFunc(jobs, func(j api.Job) bool { return j.ID == t.job })
				if i >= 0 && match(jobs[i]) {
					keep = append(keep, t)
				}
			}
			targets = keep
		}
	}
	failed := false
	for _, t := range targets {
		what := "job"
		if t.step >= 0 {
			what = "step"
		}
		if verbose {
			fmt.Fprintf(stderr, "scancel: Terminating %s %s\n", what, t.arg)
		}
		var err error
		if sig.Signal != 0 {
			err = scancelSignal(ctx, c, t, sig)
		} else if t.step >= 0 {
			err = c.CancelStep(ctx, t.job, t.step)
		} else {
			ref := t.element
			if ref == "" {
				ref = strconv.FormatUint(t.job, 10)
			}
			_, err = c.CancelRef(ctx, ref)
		}
		if err == nil {
			continue
		}
		var se *api.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusConflict) {
			if verbose && !quiet {
				fmt.Fprintf(stderr, "scancel: error: Kill job error on job id %s: %s\n", t.arg, scancelReason(se))
			}
			continue
		}
		failed = true
		if !quiet {
			fmt.Fprintf(stderr, "scancel: error: Kill job error on job id %s: %s\n", t.arg, scancelReason(err))
		}
	}
	if failed {
		return exitcode.Code(1)
	}
	return nil
}

// scancelReason words a failed cancel as Slurm's error strings do, with
// the agent's message where Slurm has no equivalent.
func scancelReason(err error) string {
	var se *api.StatusError
	if errors.As(err, &se) {
		switch se.Code {
		case http.StatusNotFound:
			return "Invalid job id specified"
		case http.StatusConflict:
			return "Job/step already completing or completed"
		case http.StatusForbidden:
			return "Access/permission denied"
		}
		return se.Message
	}
	return err.Error()
}

// splitJobIDs splits comma-separated job ids, keeping "12_[1,3]" whole.
func splitJobIDs(args []string) []string {
	var out []string
	for _, a := range args {
		depth, start := 0, 0
		for i := 0; i <= len(a); i++ {
			switch {
			case i == len(a) || (a[i] == ',' && depth == 0):
				if part := strings.TrimSpace(a[start:i]); part != "" {
					out = append(out, part)
				}
				start = i + 1
			case a[i] == '[':
				depth++
			case a[i] == ']':
				depth--
			}
		}
	}
	return out
}

// SignalName parses the signal of scancel --signal and shoal cancel
// --signal: a name with or without SIG, in any case, or a number 1-64.
func SignalName(flag, s string) (int, error) {
	if strings.ContainsAny(s, ":@") {
		return 0, fmt.Errorf("%s %q: want a signal name (USR1, SIGTERM) or number (1-64)", flag, s)
	}
	sig, err := slurm.ParseSignal(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want a signal name (USR1, SIGTERM) or number (1-64)", flag, s)
	}
	return sig.Number, nil
}

// scancelSignal sends scancel --signal to one target: a whole job (steps
// and array elements are refused: the request goes to a job's tasks).
func scancelSignal(ctx context.Context, c *api.Client, t scancelTarget, sig api.SignalRequest) error {
	switch {
	case t.step >= 0:
		return slurmErrorf("Invalid job id %s: signalling one step is not supported by Shoal yet; signal the job", t.arg)
	case strings.Contains(t.arg, "_"):
		return slurmErrorf("Invalid job id %s: signalling array elements is not supported by Shoal yet; signal the element's own job id", t.arg)
	}
	sig.RequestID = request.NewID() // one request per job: sent again across a failover, delivered once
	return c.Signal(ctx, t.job, sig)
}
