package slurm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Command is the Slurm command whose options are parsed.
type Command string

// The commands ParseArgs knows.
const (
	Sbatch Command = "sbatch"
	Srun   Command = "srun"
	Salloc Command = "salloc"
)

// Options is what sbatch, srun or salloc options ask for, typed. A field
// left at its zero value was not given unless Set says otherwise; Set is
// keyed by the long option name ("nodes", "mem", "no-requeue").
type Options struct {
	Nodes         Nodes
	NTasks        int
	NTasksPerNode int
	// NTasksPerGPU is --ntasks-per-gpu: tasks for every GPU of the job.
	NTasksPerGPU int
	// Distribution is -m/--distribution: how the tasks are laid out on
	// the nodes (Layout).
	Distribution Distribution
	CPUsPerTask  int
	CPUsPerGPU   int
	// MinCPUs is --mincpus: the least CPUs per node.
	MinCPUs int
	// TimeLimit is --time; 0 means no limit (or not given: see Set).
	TimeLimit time.Duration
	Name      string
	// Output, Error and Input are filename patterns, kept raw (see
	// ExpandOutputPattern). Slurm's "none" is kept as written.
	Output, Error, Input string
	// Bcast is srun --bcast's destination: "" (the option's Set entry
	// tells it was given) or a directory ending in "/" for
	// slurm_bcast_* files, else the file to copy the program to.
	Bcast     string
	Partition string
	Account   string
	QOS       string
	// NodeList is --nodelist expanded and de-duplicated (first occurrence
	// kept); NodeListFile is its value instead when it names a file (it
	// contains '/'), which the parser does not read. Exclude likewise.
	NodeList     []string
	NodeListFile string
	Exclude      []string
	ExcludeFile  string
	// Constraint is --constraint, syntax-checked but kept raw.
	Constraint string
	// GPUs is --gpus (the job's total); GPUsPerNode is --gpus-per-node or
	// the count of --gres=gpu (they must agree when both are given);
	// GPUsPerTask is --gpus-per-task. GPUType is the one TYPE any of them
	// named ("a100" of --gres=gpu:a100:2).
	GPUs        int
	GPUsPerNode int
	GPUsPerTask int
	GPUType     string
	Gres        []Gres
	// Mem, MemPerGPU and MemPerCPU are in MiB. MemAll is --mem=0: all of
	// each node's memory.
	Mem       uint64
	MemAll    bool
	MemPerGPU uint64
	MemPerCPU uint64
	Exclusive bool
	// Requeue is --requeue (true) or --no-requeue (false); nil: the
	// cluster's default.
	Requeue  *bool
	Signal   *Signal
	OpenMode string // "append", "truncate" or "" (the cluster's default)
	Export   *Export
	// AsUser and AsGroup are sbatch's, srun's and salloc's --uid and
	// --gid (root only): the user (name or number) and group the job runs
	// as; the parser looks neither up.
	AsUser, AsGroup string
	// MPI is srun's --mpi as ParseMPI returns it ("" when not given):
	// "none", pmi2, or a PMIx type; the step's supervisors serve the
	// last two (ServesPMI).
	MPI string
	// MultiProg is srun --multi-prog: the command is a configuration
	// file naming each task's program (MultiProgScript).
	MultiProg bool
	// ExportFile is --export-file: a file (or descriptor number) of
	// NAME=value definitions separated by NUL bytes, which the parser
	// does not read.
	ExportFile string
	ChDir      string
	// Container is --container: the OCI bundle each task runs in (sbatch
	// and srun; salloc refuses it, as Slurm without use_interactive_step).
	Container string
	Parsable  bool
	Wrap      string
	TestOnly  bool
	Hold      bool
	// Begin is --begin as given: the request parses it (ParseBegin)
	// against the clock.
	Begin string
	// Deadline is --deadline as given, parsed as Begin is.
	Deadline string
	// NoKill is --no-kill: the job goes on when a node other than its
	// first is lost.
	NoKill bool
	// GetUserEnv is sbatch's --get-user-env[=TIMEOUT][S|L]: the batch
	// script runs with the user's login environment under the submitted
	// one. Slurm's slurmd ignores the timeout and mode, and so does Shoal.
	GetUserEnv bool
	// NoShell is salloc's --no-shell: return once the allocation is
	// granted, leaving it held.
	NoShell bool
	// KillCommand is salloc's -K/--kill-command[=SIGNAL]: the signal its
	// command gets when the allocation is revoked (SIGTERM without a
	// value); 0 when not given.
	KillCommand int
	// Immediate is srun's and salloc's --immediate[=SECONDS]: give up,
	// cancelling the job, if it has not started within it (1 s when no
	// seconds are given, as Slurm); 0: wait as long as it takes.
	Immediate time.Duration
	// Nice is the --nice adjustment (100 when given with no value).
	Nice       int
	Switches   *Switches
	Array      *Array
	Dependency *Dependency
	// KillOnBadExit is srun's -K: nil means the cluster's default.
	KillOnBadExit *bool
	Label         bool
	// Pty is srun's --pty: rank 0 runs on a terminal srun attaches to.
	Pty bool
	// Wait is sbatch's --wait: return when the job ends.
	Wait bool
	// TaskProlog and TaskEpilog are srun's --task-prolog/--task-epilog:
	// programs each task runs before and after its command; Prolog and
	// Epilog are srun's --prolog/--epilog, which srun runs itself before
	// and after the step ("none": none).
	TaskProlog, TaskEpilog, Prolog, Epilog string
	// WaitTime is srun's -W/--wait: how long after the step's first
	// task ends srun ends the others; 0 (Slurm's default WaitTime):
	// never, they run to their end.
	WaitTime time.Duration
	Quiet    bool
	// JobID is srun's --jobid: the running job to start the step in,
	// from outside its allocation too.
	JobID uint64
	// Overlap is srun's --overlap: the step shares the allocation's
	// resources with the steps already running and holds none of them;
	// without it a step holds its GPUs and CPUs (Slurm 20.11+).
	Overlap bool
	// Exact is srun's --exact: the step holds only the CPUs its tasks
	// ask for, not all the job's CPUs on its nodes.
	Exact   bool
	Verbose int

	Set      map[string]bool
	Warnings []string
}

// argMode is the table's name for ArgMode.
type argMode = ArgMode

const (
	noArg   = NoArg
	needArg = NeedArg
	optArg  = OptArg
)

type cmdSet uint8

const (
	cSbatch cmdSet = 1 << iota
	cSrun
	cSalloc
	cAll = cSbatch | cSrun | cSalloc
)

func (c Command) set() cmdSet {
	switch c {
	case Sbatch:
		return cSbatch
	case Srun:
		return cSrun
	case Salloc:
		return cSalloc
	}
	return 0
}

func (s cmdSet) names() string {
	var n []string
	for _, c := range []Command{Sbatch, Srun, Salloc} {
		if s&c.set() != 0 {
			n = append(n, string(c))
		}
	}
	return strings.Join(n, " and ")
}

// An optDef is one row of the option table. Exactly one of apply, warn
// and reject says what the option does:
//   - apply sets Options fields (value is "" when no argument was given);
//   - warn: Shoal accepts the option and ignores it, adding a warning
//     (only where Slurm itself uses it for accounting, notification or a
//     preference the job cannot tell apart from its absence);
//   - reject: Shoal refuses it, because ignoring it would change what
//     runs, where, when or with what; ok, if set, lets through the values
//     that already describe what Shoal does (--mpi=none). A row refuses
//     only what Debian's Slurm also refuses (slurm/testdata/
//     refusals_golden.txt; TestRefusalsGolden), or what the test lists
//     with its reason. On a warn row, ok names the values that need no
//     warning (--cpu-bind=none).
type optDef struct {
	long   string
	short  byte
	arg    argMode
	cmds   cmdSet
	apply  func(o *Options, v string) error
	warn   string
	reject string
	ok     func(v string) bool
}

// parseState is one run of the option parser over one argument list.
type parseState struct {
	cmd Command
	o   *Options
	at  int // index of the argument being parsed, for messages
}

// ParseArgs parses sbatch, srun or salloc options from args, up to the
// first argument that is not an option (or after "--"); that argument
// and everything after it are returned as rest: the script and its
// arguments, or the command to run. It follows getopt_long as Slurm uses
// it: --opt=value and --opt value, an unambiguous prefix of a long name,
// -N2 and -N 2, grouped flags (-lN2), optional arguments only attached
// (--nice=5, -K1). Cross-option checks run on the whole list.
func ParseArgs(cmd Command, args []string) (Options, []string, error) {
	o := Options{Set: map[string]bool{}}
	if cmd.set() == 0 {
		return o, nil, fmt.Errorf("command %q: want sbatch, srun or salloc", clip(string(cmd)))
	}
	p := parseState{cmd: cmd, o: &o}
	rest, err := p.parse(args)
	if err != nil {
		if hr := (*HelpRequest)(nil); errors.As(err, &hr) {
			hr.Cmd = cmd
		}
		return o, nil, err
	}
	if err := p.finish(rest); err != nil {
		return o, nil, err
	}
	return o, rest, nil
}

// parse reads options until the first non-option and returns the rest.
func (p *parseState) parse(args []string) ([]string, error) {
	idx := tableFor(p.cmd)
	p.at = 0
	rest, err := Getopt(idx.opts, args, RequireOrder, func(v OptValue) error {
		p.at = v.At
		return p.apply(idx.long[v.Opt.Long], v.Value, v.Has)
	})
	var ue *UsageError
	if errors.As(err, &ue) {
		p.at = ue.At
		if ue.Unknown {
			return nil, p.unknown(ue)
		}
	}
	return rest, err
}

// unknown words an option p.cmd does not have, naming the commands that
// take it.
func (p *parseState) unknown(ue *UsageError) error {
	if ue.Short == 0 {
		if other := commandsTaking(ue.Long, 0); ue.Long != "" && other != 0 {
			return fmt.Errorf("unrecognized option '--%s': %s takes it, %s does not", clip(ue.Long), other.names(), p.cmd)
		}
		return ue
	}
	if other := commandsTaking("", ue.Short); other != 0 {
		return fmt.Errorf("invalid option -- '%c': %s takes -%c, %s does not", ue.Short, other.names(), ue.Short, p.cmd)
	}
	return ue
}

// apply runs one option.
func (p *parseState) apply(d *optDef, val string, hasVal bool) error {
	shown := "--" + d.long
	if hasVal {
		shown = fmt.Sprintf("--%s=%s", d.long, val)
	}
	switch {
	case d.reject != "" && (d.ok == nil || !d.ok(val)):
		return fmt.Errorf("%s: not supported by Shoal: %s", clip(shown), d.reject)
	case d.warn != "" && (d.ok == nil || !d.ok(val)):
		p.o.Warnings = append(p.o.Warnings, fmt.Sprintf("%s ignored: %s", clip(shown), d.warn))
	case d.apply != nil:
		if err := d.apply(p.o, val); err != nil {
			return err
		}
	}
	p.o.Set[d.long] = true
	return nil
}

// finish runs the checks Slurm makes once all options are known.
func (p *parseState) finish(rest []string) error {
	o := p.o
	if p.cmd == Sbatch && len(rest) > 0 && rest[0] == ":" || p.cmd != Sbatch && slices.Contains(rest, ":") {
		return fmt.Errorf("\":\": heterogeneous jobs are not supported by Shoal")
	}
	if p.cmd == Sbatch && o.Set["wrap"] && len(rest) > 0 {
		return fmt.Errorf("--wrap: script arguments %q are not permitted with --wrap", clip(strings.Join(rest, " ")))
	}
	return o.check()
}

// check makes the cross-option checks Slurm makes, on the merged options.
func (o *Options) check() error {
	n := 0
	for _, m := range []string{"mem", "mem-per-cpu", "mem-per-gpu"} {
		if o.Set[m] {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("--mem, --mem-per-cpu and --mem-per-gpu are mutually exclusive")
	}
	gresGPU, gresType, hasGresGPU := 0, "", false
	for _, g := range o.Gres {
		if g.Name != "gpu" {
			return fmt.Errorf("--gres %q: not supported by Shoal: it allocates only GPUs (--gres=gpu[:TYPE][:COUNT])", g.Name)
		}
		if hasGresGPU {
			return fmt.Errorf("--gres: gpu given twice: want one gpu[:TYPE][:COUNT] item (Shoal takes one kind of GPU per job)")
		}
		gresGPU, gresType, hasGresGPU = int(g.Count), g.Type, true
	}
	perNode := o.GPUsPerNode
	if hasGresGPU {
		if o.Set["gpus-per-node"] && perNode != gresGPU {
			return fmt.Errorf("--gres=gpu:%d and --gpus-per-node=%d disagree: give one of them", gresGPU, perNode)
		}
		perNode = gresGPU
	}
	typ := ""
	for _, t := range []string{gresType, o.GPUType} {
		if t != "" && typ != "" && t != typ {
			return fmt.Errorf("GPU types %q and %q: want one GPU type per job", typ, t)
		}
		if t != "" {
			typ = t
		}
	}
	o.GPUsPerNode, o.GPUType = perNode, typ
	if o.Set["gpus"] && perNode > 0 {
		if o.GPUs%perNode != 0 {
			return fmt.Errorf("--gpus=%d is not a multiple of --gres=gpu/--gpus-per-node (%d)", o.GPUs, perNode)
		}
		if nodes := o.GPUs / perNode; o.Set["nodes"] && (nodes < o.Nodes.Min || nodes > o.Nodes.Max) {
			return fmt.Errorf("--gpus=%d at %d per node needs %d nodes, outside --nodes %d-%d", o.GPUs, perNode, nodes, o.Nodes.Min, o.Nodes.Max)
		}
	}
	if o.Set["gpus-per-task"] {
		switch {
		case !o.Set["gpus"] && !o.Set["ntasks"]:
			return fmt.Errorf("--gpus-per-task needs --gpus or -n/--ntasks")
		case o.Set["gpus"] && o.Set["ntasks"] && o.GPUs != o.GPUsPerTask*o.NTasks:
			return fmt.Errorf("--gpus=%d, --gpus-per-task=%d and --ntasks=%d disagree: want gpus = gpus-per-task × ntasks", o.GPUs, o.GPUsPerTask, o.NTasks)
		}
	}
	return nil
}

// intOpt returns an apply function that parses a positive count into *f.
func intOpt(name string, f func(o *Options) *int) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := positive(name, v)
		*f(o) = n
		return err
	}
}

// parsedOpt returns an apply function that parses the value with parse
// into *f (set even when parse fails, as parse leaves it).
func parsedOpt[T any](parse func(string) (T, error), f func(o *Options) *T) func(*Options, string) error {
	return func(o *Options, v string) error {
		x, err := parse(v)
		*f(o) = x
		return err
	}
}

// parsedPtrOpt is parsedOpt for an optional value: *f points to it.
func parsedPtrOpt[T any](parse func(string) (T, error), f func(o *Options) **T) func(*Options, string) error {
	return func(o *Options, v string) error {
		x, err := parse(v)
		*f(o) = &x
		return err
	}
}

func strOpt(f func(o *Options) *string) func(*Options, string) error {
	return func(o *Options, v string) error {
		*f(o) = v
		return nil
	}
}

// setWaitTime takes srun's -W SECONDS: a decimal, 0 or more, as Slurm's
// srun reads it (past 32 bits it is taken as the most).
func setWaitTime(o *Options, v string) error {
	n, ok := decimal(v)
	if !ok || n < 0 {
		return fmt.Errorf("--wait %q: want whole seconds, 0 or more (0: wait for every task)", clip(v))
	}
	o.WaitTime = time.Duration(min(n, math.MaxInt32)) * time.Second
	return nil
}

// setImmediate takes --immediate[=SECONDS].
func setImmediate(o *Options, v string) error {
	if v == "" {
		o.Immediate = time.Second
		return nil
	}
	n, err := positive("immediate", v)
	o.Immediate = time.Duration(n) * time.Second
	return err
}

func setJobID(o *Options, v string) error {
	id, err := ParseJobID(v)
	if err != nil {
		return fmt.Errorf("--jobid: %w", err)
	}
	o.JobID = id
	return nil
}

func flagOpt(f func(o *Options) *bool) func(*Options, string) error {
	return func(o *Options, v string) error {
		*f(o) = true
		return nil
	}
}

func memOpt(name string, f func(o *Options) *uint64) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := ParseMemory(v)
		if err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
		*f(o) = n
		if name == "mem" {
			o.MemAll = n == 0
		}
		return nil
	}
}

func gpuOpt(name string, f func(o *Options) *int) func(*Options, string) error {
	return func(o *Options, v string) error {
		t, n, err := parseGPUCount(name, v)
		if err != nil {
			return err
		}
		if t != "" && o.GPUType != "" && t != o.GPUType {
			return fmt.Errorf("--%s %q: GPU type %q differs from %q given before: want one GPU type per job", name, clip(v), t, o.GPUType)
		}
		if t != "" {
			o.GPUType = t
		}
		*f(o) = n
		return nil
	}
}

// hostOpt sets a host list (expanded, de-duplicated) or, for a value with
// a '/', the name of the file that holds it.
func hostOpt(name string, list func(o *Options) *[]string, file func(o *Options) *string) func(*Options, string) error {
	return func(o *Options, v string) error {
		if strings.Contains(v, "/") {
			*file(o), *list(o) = v, nil
			return nil
		}
		names, err := ExpandHostlist(v)
		if err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
		*list(o), *file(o) = UniqueHosts(names), ""
		return nil
	}
}

func setNodes(o *Options, v string) error {
	lo, hi, err := ParseNodes(v)
	o.Nodes = Nodes{Min: lo, Max: hi}
	return err
}

func setConstraint(o *Options, v string) error {
	o.Constraint = v
	return checkConstraint(v)
}

func setExclusive(o *Options, v string) error {
	if v != "" {
		return fmt.Errorf("--exclusive=%s: not supported by Shoal: only whole-node --exclusive (no =user or =mcs)", clip(v))
	}
	o.Exclusive = true
	return nil
}

func setRequeue(b bool) func(*Options, string) error {
	return func(o *Options, _ string) error {
		o.Requeue = &b
		return nil
	}
}

func setSignal(cmd cmdSet) func(*Options, string) error {
	return func(o *Options, v string) error {
		s, err := ParseSignal(v)
		if err != nil {
			return err
		}
		if s.BatchOnly && cmd != cSbatch {
			return fmt.Errorf("--signal %q: B: (batch shell only) is an sbatch option; %s", clip(v), signalForms)
		}
		o.Signal = &s
		return nil
	}
}

func setOpenMode(o *Options, v string) error {
	// Slurm looks only at the first letter.
	switch {
	case v != "" && (v[0] == 'a' || v[0] == 'A'):
		o.OpenMode = "append"
	case v != "" && (v[0] == 't' || v[0] == 'T'):
		o.OpenMode = "truncate"
	default:
		return fmt.Errorf("--open-mode %q: want append or truncate", clip(v))
	}
	return nil
}

func setNice(o *Options, v string) error {
	if v == "" {
		o.Nice = 100
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < -2147483645 || n > 2147483645 {
		return fmt.Errorf("--nice %q: want a whole number from -2147483645 to 2147483645", clip(v))
	}
	o.Nice = int(n)
	return nil
}

// setGetUserEnv is --get-user-env[=TIMEOUT][S|L], as Slurm's
// arg_set_get_user_env takes it: digits, then S or L, in any case.
func setGetUserEnv(o *Options, v string) error {
	mode := strings.TrimLeft(v, "0123456789")
	if len(mode) > 1 || mode != "" && !strings.ContainsAny(mode, "SsLl") {
		return fmt.Errorf("--get-user-env %q: want [SECONDS][S|L]", clip(v))
	}
	o.GetUserEnv = true
	return nil
}

// setKillCommand is salloc's -K/--kill-command[=SIGNAL], as Slurm's
// arg_set_kill_command: SIGTERM without a value, else a signal name (with
// or without SIG, any case) or number.
func setKillCommand(o *Options, v string) error {
	if v == "" {
		o.KillCommand = int(syscall.SIGTERM)
		return nil
	}
	sig, err := ParseSignal(v)
	if err != nil || strings.ContainsAny(v, ":@") {
		return fmt.Errorf("--kill-command %q: want a signal name (TERM, SIGUSR1) or number (1-64)", clip(v))
	}
	o.KillCommand = sig.Number
	return nil
}

// setNoKill is --no-kill[=set|off|no], as Slurm's arg_set_no_kill takes it.
func setNoKill(o *Options, v string) error {
	switch strings.ToLower(v) {
	case "", "set":
		o.NoKill = true
	case "off", "no":
		o.NoKill = false
	default:
		return fmt.Errorf("--no-kill %q: want set, off or no (or no value)", clip(v))
	}
	return nil
}

func setKillOnBadExit(o *Options, v string) error {
	b := true
	if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("--kill-on-bad-exit %q: want 0 or 1 (or no value, meaning 1)", clip(v))
		}
		b = n != 0
	}
	o.KillOnBadExit = &b
	return nil
}

func setWrap(o *Options, v string) error {
	o.Wrap = v
	return nil
}

func setVerbose(o *Options, _ string) error {
	o.Verbose++
	return nil
}

func setCPUsPerGPU(o *Options, v string) error {
	n, err := positive("cpus-per-gpu", v)
	o.CPUsPerGPU = n
	return err
}

// MPI types: what srun --mpi and SLURM_MPI_TYPE take, as Debian's Slurm
// 22.05 (built with PMIx 4, as Debian's libpmix2) lists them on the
// peer: "pmix" and the specific "pmix_v4", "none", and "pmi2", which
// serves PMI-2 and PMI-1 (MPICH's clients) as Slurm's mpi/pmi2 plugin
// does. Its "cray_shasta" (Cray PMI's environment) has no counterpart.
var mpiTypes = []string{"pmix", "none", MPIPMI2, "pmix_v4"}

// MPIPMI2 is the MPI type of srun --mpi=pmi2.
const MPIPMI2 = "pmi2"

// MPIListText is what srun --mpi=list prints, in Slurm's words (the
// peer's list, less cray_shasta).
const MPIListText = "MPI plugin types are...\n\tpmix\n\tnone\n\tpmi2\nspecific pmix plugin versions available: pmix_v4\n"

// ParseMPI checks an MPI type (srun --mpi, SLURM_MPI_TYPE) and returns
// it in lower case: "pmix", "none", "pmi2" or "pmix_v4".
func ParseMPI(v string) (string, error) {
	low := strings.ToLower(v)
	if slices.Contains(mpiTypes, low) {
		return low, nil
	}
	return "", fmt.Errorf("--mpi %q: want one of %s, or list", clip(v), strings.Join(mpiTypes, ", "))
}

// UsesPMIx reports whether MPI type t (as ParseMPI returns it) asks for
// a PMIx server beside the step's tasks.
func UsesPMIx(t string) bool { return strings.HasPrefix(t, "pmix") }

// ServesPMI reports whether MPI type t asks the step's supervisors for a
// process-management server: PMIx, or PMI-2 (and PMI-1) for pmi2.
func ServesPMI(t string) bool { return UsesPMIx(t) || t == MPIPMI2 }

func setMPI(o *Options, v string) error {
	if strings.EqualFold(v, "list") {
		return &HelpRequest{Kind: "mpi-list"}
	}
	t, err := ParseMPI(v)
	o.MPI = t
	return err
}

// noBinding accepts a --cpu-bind, --mem-bind or --gpu-bind value that asks
// for no binding: none, alone or with the verbosity words (quiet, verbose,
// q, v) that only change what srun reports, as Slurm does where it does
// not bind.
func noBinding(v string) bool {
	if v == "" {
		return false
	}
	for _, w := range strings.Split(v, ",") {
		switch strings.ToLower(w) {
		case "none", "no", "quiet", "q", "verbose", "v":
		default:
			return false
		}
	}
	return true
}

func setDistribution(o *Options, v string) error {
	d, err := ParseDistribution(v)
	o.Distribution = d
	return err
}
