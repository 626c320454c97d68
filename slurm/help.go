package slurm

import (
	"strings"
)

// HelpRequest is the error ParseArgs returns for --help (-h), --usage
// and --version: client actions, which the command answers by printing
// Text and exiting 0, as Slurm's do, rather than running anything.
type HelpRequest struct {
	Cmd  Command
	Kind string // "help", "usage", "version" or "mpi-list" (srun --mpi=list)
}

func (h *HelpRequest) Error() string {
	return "--" + h.Kind + ": a client action, answered by printing"
}

func helpOpt(kind string) func(*Options, string) error {
	return func(*Options, string) error { return &HelpRequest{Kind: kind} }
}

// usageLines are the commands' usage lines, as Slurm words them.
var usageLines = map[Command]string{
	Sbatch: "Usage: sbatch [OPTIONS(0)...] script(0) [args(0)...]",
	Srun:   "Usage: srun [OPTIONS(0)...] executable(0) [args(0)...]",
	Salloc: "Usage: salloc [OPTIONS(0)...] [command(0) [args(0)...]]",
}

// Text is what the command prints for h: for --version, "shoal
// VERSION"; for --usage, the usage line; for --help, the usage line and
// every option of the command's table with what Shoal does with it
// (taken, ignored with a warning and why, or refused and why).
func (h *HelpRequest) Text(version string) string {
	switch h.Kind {
	case "version":
		return "shoal " + version + "\n"
	case "usage":
		return usageLines[h.Cmd] + "\n"
	case "mpi-list":
		return MPIListText
	}
	var b strings.Builder
	b.WriteString(usageLines[h.Cmd])
	b.WriteString("\n\nOptions (Slurm 22.05's, as Shoal takes them):\n")
	idx := tableFor(h.Cmd)
	for _, o := range idx.opts {
		d := idx.long[o.Long]
		b.WriteString("  ")
		if d.short != 0 {
			b.WriteString("-" + string(d.short) + ", ")
		}
		b.WriteString("--" + d.long)
		switch d.arg {
		case needArg:
			b.WriteString("=VALUE")
		case optArg:
			b.WriteString("[=VALUE]")
		}
		switch {
		case d.reject != "":
			b.WriteString("\n      refused: " + d.reject)
		case d.warn != "":
			b.WriteString("\n      accepted and ignored with a warning: " + d.warn)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
