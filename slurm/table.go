package slurm

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
)

// Reasons quoted in warnings and rejections.
const (
	whyAccounting = "Shoal has no accounting"
	whyNotify     = "Shoal sends no mail"
	whyCPULayout  = "Shoal does not place or bind tasks by socket, core or thread"
	whyBinding    = "Shoal does not bind tasks to CPUs, memory or GPUs (as Slurm with task/none)"
	whyFederation = "Shoal has no federation of clusters"
	whySteps      = "Shoal runs one step per job, with the job's resources"
	whyHetJob     = "heterogeneous jobs are not supported by Shoal"
	whyNoHardware = "Shoal does not manage this hardware setting; it is a preference Slurm ignores where unsupported"
)

// optionTable is the one table of sbatch, srun and salloc options, with
// the commands that accept each (as Slurm 22.05 does) and what Shoal does
// with it. Options of Slurm that are not here are unrecognized.
var optionTable = []optDef{
	// What a job asks for and Shoal implements.
	{long: "nodes", short: 'N', arg: needArg, cmds: cAll, apply: setNodes},
	{long: "ntasks", short: 'n', arg: needArg, cmds: cAll, apply: intOpt("ntasks", func(o *Options) *int { return &o.NTasks })},
	{long: "ntasks-per-node", arg: needArg, cmds: cAll, apply: intOpt("ntasks-per-node", func(o *Options) *int { return &o.NTasksPerNode })},
	{long: "ntasks-per-gpu", arg: needArg, cmds: cAll, apply: intOpt("ntasks-per-gpu", func(o *Options) *int { return &o.NTasksPerGPU })},
	{long: "distribution", short: 'm', arg: needArg, cmds: cAll, apply: setDistribution},
	{long: "cpus-per-task", short: 'c', arg: needArg, cmds: cAll, apply: intOpt("cpus-per-task", func(o *Options) *int { return &o.CPUsPerTask })},
	{long: "cpus-per-gpu", arg: needArg, cmds: cAll, apply: setCPUsPerGPU},
	{long: "mincpus", arg: needArg, cmds: cAll, apply: intOpt("mincpus", func(o *Options) *int { return &o.MinCPUs })},
	{long: "time", short: 't', arg: needArg, cmds: cAll, apply: parsedOpt(ParseTime, func(o *Options) *time.Duration { return &o.TimeLimit })},
	{long: "job-name", short: 'J', arg: needArg, cmds: cAll, apply: strOpt(func(o *Options) *string { return &o.Name })},
	{long: "output", short: 'o', arg: needArg, cmds: cSbatch | cSrun, apply: strOpt(func(o *Options) *string { return &o.Output })},
	{long: "error", short: 'e', arg: needArg, cmds: cSbatch | cSrun, apply: strOpt(func(o *Options) *string { return &o.Error })},
	{long: "input", short: 'i', arg: needArg, cmds: cSbatch | cSrun, apply: strOpt(func(o *Options) *string { return &o.Input })},
	{long: "partition", short: 'p', arg: needArg, cmds: cAll, apply: strOpt(func(o *Options) *string { return &o.Partition })},
	{long: "nodelist", short: 'w', arg: needArg, cmds: cAll, apply: hostOpt("nodelist", func(o *Options) *[]string { return &o.NodeList }, func(o *Options) *string { return &o.NodeListFile })},
	{long: "nodefile", short: 'F', arg: needArg, cmds: cAll, apply: strOpt(func(o *Options) *string { return &o.NodeListFile })},
	{long: "exclude", short: 'x', arg: needArg, cmds: cAll, apply: hostOpt("exclude", func(o *Options) *[]string { return &o.Exclude }, func(o *Options) *string { return &o.ExcludeFile })},
	{long: "constraint", short: 'C', arg: needArg, cmds: cAll, apply: setConstraint},
	{long: "gpus", short: 'G', arg: needArg, cmds: cAll, apply: gpuOpt("gpus", func(o *Options) *int { return &o.GPUs })},
	{long: "gpus-per-node", arg: needArg, cmds: cAll, apply: gpuOpt("gpus-per-node", func(o *Options) *int { return &o.GPUsPerNode })},
	{long: "gpus-per-task", arg: needArg, cmds: cAll, apply: gpuOpt("gpus-per-task", func(o *Options) *int { return &o.GPUsPerTask })},
	{long: "gres", arg: needArg, cmds: cAll, apply: parsedOpt(ParseGres, func(o *Options) *[]Gres { return &o.Gres })},
	{long: "mem", arg: needArg, cmds: cAll, apply: memOpt("mem", func(o *Options) *uint64 { return &o.Mem })},
	{long: "mem-per-cpu", arg: needArg, cmds: cAll, apply: memOpt("mem-per-cpu", func(o *Options) *uint64 { return &o.MemPerCPU })},
	{long: "mem-per-gpu", arg: needArg, cmds: cAll, apply: memOpt("mem-per-gpu", func(o *Options) *uint64 { return &o.MemPerGPU })},
	{long: "exclusive", arg: optArg, cmds: cAll, apply: setExclusive},
	{long: "requeue", arg: noArg, cmds: cSbatch, apply: setRequeue(true)},
	{long: "no-requeue", arg: noArg, cmds: cSbatch, apply: setRequeue(false)},
	{long: "signal", arg: needArg, cmds: cSbatch, apply: setSignal(cSbatch)},
	{long: "signal", arg: needArg, cmds: cSrun | cSalloc, apply: setSignal(cSrun)},
	{long: "open-mode", arg: needArg, cmds: cSbatch | cSrun, apply: setOpenMode},
	{long: "export", arg: needArg, cmds: cSbatch | cSrun, apply: parsedPtrOpt(ParseExport, func(o *Options) **Export { return &o.Export })},
	{long: "export-file", arg: needArg, cmds: cSbatch, apply: strOpt(func(o *Options) *string { return &o.ExportFile })},
	{long: "chdir", short: 'D', arg: needArg, cmds: cAll, apply: strOpt(func(o *Options) *string { return &o.ChDir })},
	{long: "parsable", arg: noArg, cmds: cSbatch, apply: flagOpt(func(o *Options) *bool { return &o.Parsable })},
	// -E: the caller's SLURM_NNODES and SLURM_NTASKS count the step
	// (srun reads them; see slurmcli.preserveEnv).
	{long: "preserve-env", short: 'E', arg: noArg, cmds: cSrun, apply: func(*Options, string) error { return nil }},
	{long: "wrap", arg: needArg, cmds: cSbatch, apply: setWrap},
	{long: "test-only", arg: noArg, cmds: cSbatch | cSrun, apply: flagOpt(func(o *Options) *bool { return &o.TestOnly })},
	{long: "hold", short: 'H', arg: noArg, cmds: cAll, apply: flagOpt(func(o *Options) *bool { return &o.Hold })},
	{long: "nice", arg: optArg, cmds: cAll, apply: setNice},
	{long: "switches", arg: needArg, cmds: cAll, apply: parsedPtrOpt(ParseSwitches, func(o *Options) **Switches { return &o.Switches })},
	{long: "array", short: 'a', arg: needArg, cmds: cSbatch, apply: parsedPtrOpt(ParseArray, func(o *Options) **Array { return &o.Array })},
	{long: "dependency", short: 'd', arg: needArg, cmds: cAll, apply: parsedPtrOpt(ParseDependency, func(o *Options) **Dependency { return &o.Dependency })},
	{long: "kill-on-bad-exit", short: 'K', arg: optArg, cmds: cSrun, apply: setKillOnBadExit},
	{long: "label", short: 'l', arg: noArg, cmds: cSrun, apply: flagOpt(func(o *Options) *bool { return &o.Label })},
	{long: "wait", short: 'W', arg: noArg, cmds: cSbatch, apply: flagOpt(func(o *Options) *bool { return &o.Wait })},
	{long: "quiet", short: 'Q', arg: noArg, cmds: cAll, apply: flagOpt(func(o *Options) *bool { return &o.Quiet })},
	{long: "verbose", short: 'v', arg: noArg, cmds: cAll, apply: setVerbose},
	{long: "account", short: 'A', arg: needArg, cmds: cAll, apply: func(o *Options, v string) error {
		o.Account = v // the job's fair-share account
		return nil
	}},
	{long: "qos", short: 'q', arg: needArg, cmds: cAll, apply: func(o *Options, v string) error {
		o.QOS = v // its priority level; the agent warns of one the policy lacks
		return nil
	}},

	// Accepted and ignored, with a warning: accounting, notification,
	// and preferences a job cannot tell apart from their absence.
	{long: "comment", arg: needArg, cmds: cAll, warn: whyAccounting},
	{long: "wckey", arg: needArg, cmds: cAll, warn: whyAccounting},
	{long: "acctg-freq", arg: needArg, cmds: cAll, warn: whyAccounting},
	{long: "profile", arg: needArg, cmds: cAll, warn: "Shoal has no profiling plugin"},
	{long: "mail-type", arg: needArg, cmds: cAll, warn: whyNotify},
	{long: "mail-user", arg: needArg, cmds: cAll, warn: whyNotify},
	{long: "bell", arg: noArg, cmds: cSalloc, warn: "a terminal bell"},
	{long: "no-bell", arg: noArg, cmds: cSalloc, warn: "a terminal bell"},
	{long: "time-min", arg: needArg, cmds: cAll, warn: "a backfill hint; Shoal runs jobs with their --time"},
	{long: "prefer", arg: needArg, cmds: cAll, warn: "soft features; Shoal has no node features to prefer"},
	{long: "oversubscribe", short: 's', arg: noArg, cmds: cAll, warn: "Shoal never shares a job's GPUs; the job runs as it would alone"},
	{long: "use-min-nodes", arg: noArg, cmds: cAll, warn: "Shoal allocates the minimum node count anyway"},
	{long: "cpu-freq", arg: needArg, cmds: cAll, warn: whyNoHardware},
	{long: "gpu-freq", arg: needArg, cmds: cAll, warn: whyNoHardware},
	{long: "power", arg: needArg, cmds: cAll, warn: whyNoHardware},
	{long: "network", arg: needArg, cmds: cAll, warn: "a Cray-only setting Slurm ignores elsewhere"},
	{long: "reboot", arg: noArg, cmds: cAll, warn: "only administrators may reboot nodes; Slurm ignores it otherwise"},
	{long: "delay-boot", arg: needArg, cmds: cAll, warn: "Shoal does not reboot nodes for jobs"},
	{long: "wait-all-nodes", arg: needArg, cmds: cSbatch | cSalloc, warn: "Shoal starts jobs only on nodes that are up"},
	{long: "priority", arg: needArg, cmds: cAll, warn: "Shoal schedules in submission order"},
	{long: "mcs-label", arg: needArg, cmds: cAll, warn: whyAccounting},
	{long: "unbuffered", short: 'u', arg: noArg, cmds: cSrun, warn: "Shoal writes each rank's output to files as it comes"},
	{long: "ignore-pbs", arg: noArg, cmds: cSbatch, warn: "Shoal reads only #SBATCH directives"},
	{long: "slurmd-debug", arg: needArg, cmds: cSrun, warn: "a Slurm daemon's log level"},
	{long: "disable-status", short: 'X', arg: noArg, cmds: cSrun, warn: "Shoal's srun has no Ctrl-C status report"},
	{long: "quit-on-interrupt", arg: noArg, cmds: cSrun, warn: "Shoal's srun has no Ctrl-C status report"},

	// Rejected: ignoring them would change what runs, where or when.
	{long: "reservation", arg: needArg, cmds: cAll, reject: "Shoal has no reservations (Slurm refuses a job naming one that does not exist)"},
	{long: "licenses", short: 'L', arg: needArg, cmds: cAll, reject: "Shoal has no licenses (Slurm refuses a job naming one it does not know)"},
	{long: "begin", short: 'b', arg: needArg, cmds: cSbatch | cSalloc | cSrun, apply: strOpt(func(o *Options) *string { return &o.Begin })},
	{long: "deadline", arg: needArg, cmds: cAll, apply: strOpt(func(o *Options) *string { return &o.Deadline })},
	{long: "immediate", short: 'I', arg: optArg, cmds: cSrun | cSalloc, apply: setImmediate},
	{long: "kill-on-invalid-dep", arg: needArg, cmds: cSbatch, reject: "Shoal always cancels a job whose dependency can never hold; accepted: yes", ok: func(v string) bool { return strings.EqualFold(v, "yes") }},
	{long: "no-kill", short: 'k', arg: optArg, cmds: cAll, apply: setNoKill},
	{long: "get-user-env", arg: optArg, cmds: cSbatch, apply: setGetUserEnv},
	{long: "propagate", arg: optArg, cmds: cSbatch | cSrun, warn: "Shoal does not propagate resource limits; ranks get the node's"},
	{long: "tmp", arg: needArg, cmds: cAll, reject: "Shoal does not track local disk"},
	{long: "contiguous", arg: noArg, cmds: cAll, warn: "Shoal places by switch, not by contiguous node names"},
	{long: "spread-job", arg: noArg, cmds: cAll, warn: "Shoal packs a job under as few switches as it can"},
	{long: "extra-node-info", short: 'B', arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "sockets-per-node", arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "cores-per-socket", arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "threads-per-core", arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "ntasks-per-core", arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "ntasks-per-socket", arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "gpus-per-socket", arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "hint", arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "core-spec", short: 'S', arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "thread-spec", arg: needArg, cmds: cAll, warn: whyCPULayout},
	{long: "overcommit", short: 'O', arg: noArg, cmds: cAll, warn: "Shoal allocates what the tasks ask for"},
	{long: "cpu-bind", arg: needArg, cmds: cSrun, warn: whyBinding, ok: noBinding},
	{long: "mem-bind", arg: needArg, cmds: cAll, warn: whyBinding, ok: noBinding},
	{long: "gpu-bind", arg: needArg, cmds: cAll, warn: whyBinding, ok: noBinding},
	{long: "accel-bind", arg: needArg, cmds: cSrun, warn: whyBinding},
	{long: "gres-flags", arg: needArg, cmds: cAll, warn: "Shoal does not bind GPUs to CPUs", ok: func(v string) bool { return v == "disable-binding" }},
	{long: "batch", arg: needArg, cmds: cSbatch, reject: "Shoal has no node features to pick the batch host by"},
	{long: "bb", arg: needArg, cmds: cAll, warn: "Shoal has no burst buffers (as Slurm without a burst buffer plugin)"},
	{long: "bbf", arg: needArg, cmds: cAll, reject: "Shoal has no burst buffers"},
	{long: "container", arg: needArg, cmds: cSbatch | cSrun, apply: strOpt(func(o *Options) *string { return &o.Container })},
	// salloc's shell runs on the caller's host, where no container can
	// hold it: Slurm refuses unless LaunchParameters=use_interactive_step
	// moves it into a step, in these words.
	{long: "container", arg: needArg, cmds: cSalloc, apply: func(*Options, string) error {
		return errors.New("--container requires LaunchParameters=use_interactive_step")
	}},
	{long: "clusters", short: 'M', arg: needArg, cmds: cAll, reject: whyFederation},
	{long: "cluster-constraint", arg: needArg, cmds: cAll, warn: whyFederation},
	{long: "uid", arg: needArg, cmds: cAll, apply: strOpt(func(o *Options) *string { return &o.AsUser })},
	{long: "gid", arg: needArg, cmds: cAll, apply: strOpt(func(o *Options) *string { return &o.AsGroup })},
	{long: "het-group", arg: needArg, cmds: cSrun, reject: whyHetJob + "; accepted: 0, the whole job", ok: func(v string) bool { return v == "0" }},
	{long: "multi-prog", arg: noArg, cmds: cSrun, apply: flagOpt(func(o *Options) *bool { return &o.MultiProg })},
	{long: "mpi", arg: needArg, cmds: cSrun, apply: setMPI},
	{long: "overlap", arg: noArg, cmds: cSrun, apply: flagOpt(func(o *Options) *bool { return &o.Overlap })},
	{long: "exact", arg: noArg, cmds: cSrun, apply: flagOpt(func(o *Options) *bool { return &o.Exact })},
	{long: "jobid", arg: needArg, cmds: cSrun, apply: setJobID},
	{long: "relative", short: 'r', arg: needArg, cmds: cSrun, reject: whySteps},
	{long: "no-allocate", short: 'Z', arg: noArg, cmds: cSrun, reject: whySteps},
	{long: "pty", arg: noArg, cmds: cSrun, apply: flagOpt(func(o *Options) *bool { return &o.Pty })},
	{long: "x11", arg: optArg, cmds: cSrun | cSalloc, reject: "Shoal forwards no X11"},
	{long: "task-prolog", arg: needArg, cmds: cSrun, apply: strOpt(func(o *Options) *string { return &o.TaskProlog })},
	{long: "task-epilog", arg: needArg, cmds: cSrun, apply: strOpt(func(o *Options) *string { return &o.TaskEpilog })},
	{long: "prolog", arg: needArg, cmds: cSrun, apply: strOpt(func(o *Options) *string { return &o.Prolog })},
	{long: "epilog", arg: needArg, cmds: cSrun, apply: strOpt(func(o *Options) *string { return &o.Epilog })},
	{long: "bcast", arg: optArg, cmds: cSrun, apply: strOpt(func(o *Options) *string { return &o.Bcast })},
	{long: "compress", arg: optArg, cmds: cSrun, warn: "Shoal's agents send --bcast's file whole"},
	{long: "send-libs", arg: optArg, cmds: cSrun, warn: "Shoal copies --bcast's program alone, not its libraries"},
	{long: "resv-ports", arg: optArg, cmds: cSrun, warn: "Shoal reserves no MPI ports (it sets MASTER_PORT)"},
	{long: "wait", short: 'W', arg: needArg, cmds: cSrun, apply: setWaitTime},
	{long: "no-shell", arg: noArg, cmds: cSalloc, apply: flagOpt(func(o *Options) *bool { return &o.NoShell })},
	{long: "kill-command", short: 'K', arg: optArg, cmds: cSalloc, apply: setKillCommand},
	{long: "help", short: 'h', arg: noArg, cmds: cAll, apply: helpOpt("help")},
	{long: "usage", arg: noArg, cmds: cAll, apply: helpOpt("usage")},
	{long: "version", short: 'V', arg: noArg, cmds: cAll, apply: helpOpt("version")},
}

// optIndex is the table as one command sees it.
type optIndex struct {
	long map[string]*optDef
	// opts are the command's options sorted by long name, which is the
	// order an ambiguous prefix lists them in.
	opts []Option
}

var (
	indexOnce sync.Once
	indexes   map[cmdSet]*optIndex
)

func tableFor(c Command) *optIndex {
	indexOnce.Do(func() {
		indexes = map[cmdSet]*optIndex{}
		for _, cs := range []cmdSet{cSbatch, cSrun, cSalloc} {
			idx := &optIndex{long: map[string]*optDef{}}
			for i := range optionTable {
				d := &optionTable[i]
				if d.cmds&cs == 0 {
					continue
				}
				idx.long[d.long] = d
				idx.opts = append(idx.opts, Option{Long: d.long, Short: d.short, Arg: d.arg})
			}
			slices.SortFunc(idx.opts, func(a, b Option) int { return strings.Compare(a.Long, b.Long) })
			indexes[cs] = idx
		}
	})
	return indexes[c.set()]
}

// commandsTaking returns the commands whose tables have the long name
// (when long is not "") or the short letter.
func commandsTaking(long string, short byte) cmdSet {
	var s cmdSet
	for i := range optionTable {
		d := &optionTable[i]
		if long != "" && d.long == long || long == "" && d.short == short {
			s |= d.cmds
		}
	}
	return s
}
