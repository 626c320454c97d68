package slurm

import (
	"strconv"
	"strings"
)

// InputKind is what -i/--input asks for the tasks' standard input.
type InputKind int

const (
	// InputAll is srun's default: srun's stdin broadcast to every task
	// ("all", or any value starting with "all" or "-", as Slurm's
	// fname_create reads it).
	InputAll InputKind = iota
	// InputNone is "none" (any case): stdin is /dev/null.
	InputNone
	// InputTask is a task id below the step's task count: that task gets
	// srun's stdin, the others /dev/null.
	InputTask
	// InputFile is a filename pattern (ExpandOutputPattern's %-sequences).
	InputFile
)

// Input is a parsed -i/--input value.
type Input struct {
	Kind InputKind
	// Task is InputTask's task id.
	Task int
	// Pattern is InputFile's filename pattern, as given.
	Pattern string
}

// ParseInput reads srun's -i/--input value as Slurm 22.05's srun does
// (src/srun/libsrun/fname.c, src/common/slurm_opt.c): "" or "all"
// (compared on its first three letters, any case) or "-..." is every
// task, "none" (any case) is /dev/null, a number below ntasks is that
// task, anything else (a larger number too) a filename pattern. ntasks 0
// means the task count is not known yet: any number is then a task id.
// sbatch reads its --input as a filename pattern, "none" meaning
// /dev/null (cluster's Job.BatchInput).
func ParseInput(value string, ntasks int) Input {
	switch {
	case value == "" || len(value) >= 3 && strings.EqualFold(value[:3], "all") || strings.HasPrefix(value, "-"):
		return Input{Kind: InputAll}
	case strings.EqualFold(value, "none"):
		return Input{Kind: InputNone}
	}
	if n, err := strconv.ParseUint(value, 10, 31); err == nil && (ntasks <= 0 || int(n) < ntasks) {
		return Input{Kind: InputTask, Task: int(n)}
	}
	return Input{Kind: InputFile, Pattern: value}
}
