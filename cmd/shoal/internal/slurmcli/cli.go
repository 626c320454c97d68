package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/slurm"
)

// This file holds what the Slurm commands (squeue, scancel, sinfo,
// sacct, sprio, scontrol) share: their command lines go through slurm.Getopt (with
// GNU's argument permutation) and their -o formats through scanFormat.

// What the Slurm commands refuse alike: --help and --usage (Shoal's own
// help instead) and -M/--clusters (Shoal runs one cluster); and the
// options several of them take with the same letter and meaning.
const (
	seeHelp      = "see `shoal help`"
	noFederation = "Shoal has no federation of clusters"
)

var (
	optHelp     = slurm.Option{Long: "help", Arg: slurm.NoArg, Unsupported: seeHelp}
	optUsage    = slurm.Option{Long: "usage", Arg: slurm.NoArg, Unsupported: seeHelp}
	optClusters = slurm.Option{Long: "clusters", Short: 'M', Arg: slurm.NeedArg, Unsupported: noFederation}

	optVerbose   = slurm.Option{Long: "verbose", Short: 'v', Arg: slurm.NoArg}
	optFormat    = slurm.Option{Long: "format", Short: 'o', Arg: slurm.NeedArg}
	optUser      = slurm.Option{Long: "user", Short: 'u', Arg: slurm.NeedArg}
	optPartition = slurm.Option{Long: "partition", Short: 'p', Arg: slurm.NeedArg}
	optLong      = slurm.Option{Long: "long", Short: 'l', Arg: slurm.NoArg}
	optParsable  = slurm.Option{Long: "parsable", Short: 'p', Arg: slurm.NoArg}
	optParsable2 = slurm.Option{Long: "parsable2", Short: 'P', Arg: slurm.NoArg}
	optQuiet     = slurm.Option{Long: "quiet", Short: 'Q', Arg: slurm.NoArg}
	optJobs      = slurm.Option{Long: "jobs", Short: 'j', Arg: slurm.NeedArg}
	optQoS       = slurm.Option{Long: "qos", Short: 'q', Arg: slurm.NeedArg}
	// optNoheader is sacct's, sacctmgr's, sreport's and sshare's -n;
	// optNoheaderH sinfo's, squeue's and sprio's -h.
	optNoheader  = slurm.Option{Long: "noheader", Short: 'n', Arg: slurm.NoArg}
	optNoheaderH = slurm.Option{Long: "noheader", Short: 'h', Arg: slurm.NoArg}
)

// cliArgs parses a query command's arguments and prints a usage error as
// the command does; the returned error then only carries the exit code.
// An option Shoal refuses is an error naming it.
func cliArgs(cmd string, opts []slurm.Option, args []string, stderr io.Writer) ([]slurm.OptValue, []string, error) {
	vals, rest, err := parseCLI(cmd, opts, args)
	if err != nil {
		fmt.Fprintln(stderr, err.Error())
		fmt.Fprintf(stderr, "Try \"%s --help\" for more information\n", cmd)
		return nil, nil, exitcode.Code(1)
	}
	for _, v := range vals {
		if v.Opt.Unsupported != "" {
			return nil, nil, fmt.Errorf("--%s: not supported by Shoal yet: %s", v.Opt.Long, v.Opt.Unsupported)
		}
	}
	return vals, rest, nil
}

// cliOptions is cliArgs for a command that takes options only: an
// operand is an error.
func cliOptions(cmd string, opts []slurm.Option, args []string, stderr io.Writer) ([]slurm.OptValue, error) {
	vals, rest, err := cliArgs(cmd, opts, args, stderr)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("unexpected argument %q", rest[0])
	}
	return vals, nil
}

// parseCLI scans a query command's arguments: the options in the order
// given, and the operands. An error is a *slurm.UsageError worded as the
// command prints it ("squeue: unrecognized option '--bogus'").
func parseCLI(cmd string, opts []slurm.Option, args []string) ([]slurm.OptValue, []string, error) {
	var vals []slurm.OptValue
	rest, err := slurm.Getopt(opts, args, slurm.Permute, func(v slurm.OptValue) error {
		vals = append(vals, v)
		return nil
	})
	var ue *slurm.UsageError
	if errors.As(err, &ue) {
		prefixed := *ue
		prefixed.Msg = cmd + ": " + ue.Msg
		return nil, nil, &prefixed
	}
	return vals, rest, err
}

// splitList splits a comma-separated option value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// slurmError is an error worded as the Slurm command words it
// (capitalized: "Invalid job id specified").
type slurmError struct{ msg string }

func (e *slurmError) Error() string { return e.msg }

func slurmErrorf(format string, args ...any) error {
	return &slurmError{fmt.Sprintf(format, args...)}
}

// formatSpec is one "%[.][#][width]letter" field of a Slurm -o format, as
// squeue and sinfo take them.
type formatSpec struct {
	right  bool // ".": right-aligned
	auto   bool // "#" (sinfo): as wide as the widest value
	width  int  // 0: as wide as the value
	letter byte // 0 when the format ends before one
	raw    string
}

// formatCol is one column of a -o table (squeue, sinfo, sprio): literal
// text, or a field whose cells are fitted to width (0: as wide as the
// value), right- or left-aligned; auto (sinfo's "#") asks the printer to
// widen it to the widest value.
type formatCol[F any] struct {
	field   *F
	width   int
	auto    bool
	right   bool
	literal string
}

// specCol is the column of a field a -o specification names.
func specCol[F any](field *F, f formatSpec) formatCol[F] {
	return formatCol[F]{field: field, width: f.width, auto: f.auto, right: f.right}
}

// printFormatLine prints one line of a -o table: each column's literal,
// or the cell of its field fitted to the column.
func printFormatLine[F any](w io.Writer, cols []formatCol[F], cell func(*F) string) {
	var b strings.Builder
	for _, c := range cols {
		if c.field == nil {
			b.WriteString(c.literal)
			continue
		}
		b.WriteString(fitField(cell(c.field), c.width, c.right))
	}
	fmt.Fprintln(w, b.String())
}

// scanFormat splits a Slurm -o format into literal text ("%%" is a "%")
// and field specifications, handing each to text or spec in order; the
// commands differ only in what they do with a letter they do not know.
// allowAuto says whether "#" is syntax (sinfo) or a letter (squeue).
func scanFormat(format string, allowAuto bool, text func(string), spec func(formatSpec) error) error {
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			text(lit.String())
			lit.Reset()
		}
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			lit.WriteByte(format[i])
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			lit.WriteByte('%')
			i++
			continue
		}
		var f formatSpec
		j := i + 1
		if j < len(format) && format[j] == '.' {
			f.right = true
			j++
		}
		if allowAuto && j < len(format) && format[j] == '#' {
			f.auto = true
			j++
		}
		for j < len(format) && format[j] >= '0' && format[j] <= '9' && f.width < 1<<20 {
			f.width = f.width*10 + int(format[j]-'0')
			j++
		}
		if j < len(format) {
			f.letter = format[j]
			f.raw = format[i : j+1]
		} else {
			f.raw = format[i:]
		}
		flush()
		if err := spec(f); err != nil {
			return err
		}
		i = j
	}
	flush()
	return nil
}

// Elapsed is how long the job has run (squeue's TIME; shoal queue's too).
func Elapsed(j api.Job, now time.Time) time.Duration {
	start, end, ok := runSpan(j, now)
	if !ok || end.Before(start) {
		return 0
	}
	return end.Sub(start).Truncate(time.Second)
}

// runSpan is when j held its allocation: from its start to its end, or
// to now while it runs; ok is false for a job that never started.
func runSpan(j api.Job, now time.Time) (start, end time.Time, ok bool) {
	start, err := time.Parse(time.RFC3339, j.StartTime)
	if err != nil {
		return start, end, false
	}
	end = now
	if e, err := time.Parse(time.RFC3339, j.EndTime); err == nil {
		end = e
	}
	return start, end, true
}

// currentIdentity is who runs the command: the user of --me, and whose
// jobs sacct lists by default.
func currentIdentity() api.Identity {
	id := api.Identity{UID: os.Getuid(), GID: os.Getgid(), User: strconv.Itoa(os.Getuid())}
	if u, err := user.Current(); err == nil {
		id.User = u.Username
	}
	return id
}

// Connect returns the client of the agent a command talks to; a command
// calls it once its arguments are parsed.
type Connect func() (*api.Client, error)

// reads names what a reporting command (sacct, sinfo, sreport, ...)
// reads from the agent.
type reads uint8

const (
	readJobs   reads = 1 << iota // every job, finished ones included
	readNodes                    // the nodes
	readPolicy                   // the queue policy
)

// agentReads is what readAgent read.
type agentReads struct {
	jobs   []api.Job
	nodes  []api.Node
	policy api.PolicyResponse
}

// readAgent connects to the agent and reads what want names, jobs, then
// nodes, then the policy; the client stays usable for further calls.
func readAgent(ctx context.Context, connect Connect, want reads) (*api.Client, agentReads, error) {
	var r agentReads
	c, err := connect()
	if err != nil {
		return nil, r, err
	}
	if want&readJobs != 0 {
		if r.jobs, err = c.Jobs(ctx, true); err != nil {
			return nil, r, err
		}
	}
	if want&readNodes != 0 {
		if r.nodes, err = c.Nodes(ctx); err != nil {
			return nil, r, err
		}
	}
	if want&readPolicy != 0 {
		if r.policy, err = c.Policy(ctx); err != nil {
			return nil, r, err
		}
	}
	return c, r, nil
}

// orNull is Slurm's "(null)" for an empty field.
func orNull(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}
