package slurm

import (
	"strconv"
	"strings"
)

// Slurm's default output file names (--output and --error left out).
const (
	DefaultOutputPattern      = "slurm-%j.out"
	DefaultArrayOutputPattern = "slurm-%A_%a.out"
)

// DefaultOutput returns the output pattern Slurm uses when --output is
// not given: slurm-%A_%a.out for an array job, slurm-%j.out otherwise.
func DefaultOutput(array bool) string {
	if array {
		return DefaultArrayOutputPattern
	}
	return DefaultOutputPattern
}

// noArrayTask is what Slurm writes for %a in a job that is not an array
// (its NO_VAL).
const noArrayTask = "4294967294"

// PatternFields are the values an output filename pattern may name.
type PatternFields struct {
	JobID uint64
	// ArrayJobID and ArrayTaskID are %A and %a; IsArray says they apply.
	IsArray     bool
	ArrayJobID  uint64
	ArrayTaskID int
	// StepID is %s: "batch" for the batch script, or a step number.
	StepID   string
	User     string // %u
	JobName  string // %x
	NodeName string // %N, the short host name
	NodeID   int    // %n, the node's index in the job
	TaskID   int    // %t, the task's rank
}

// maxPad bounds the zero-padding width of "%NNj" (Slurm reads it with
// strtoul and uses it as a printf width; wider than any id gains nothing).
const maxPad = 64

// ExpandOutputPattern expands a --output, --error or --input filename
// pattern as Slurm does: %j job id, %J job id.step id (the job id alone
// with no step), %A array master job id (the job id outside arrays), %a
// array index (4294967294 outside arrays, as Slurm), %s step id, %u user,
// %x job name, %N short host name, %n node index, %t task rank, %% a
// percent sign. A number between % and the letter zero-pads a numeric
// value to that width ("job%4j.out" is job0128.out). A pattern that
// contains a backslash is not expanded; its backslashes are dropped.
// Unknown %-sequences are kept as they are.
func ExpandOutputPattern(pattern string, f PatternFields) string {
	if strings.Contains(pattern, `\`) {
		return strings.ReplaceAll(pattern, `\`, "")
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' || i+1 >= len(pattern) {
			b.WriteByte(c)
			continue
		}
		j := digitsEnd(pattern, i+1)
		if j >= len(pattern) {
			b.WriteString(pattern[i:])
			break
		}
		width, _ := strconv.Atoi(pattern[i+1 : j])
		width = min(width, maxPad)
		num := func(v uint64) { b.WriteString(pad(v, width)) }
		switch pattern[j] {
		case '%':
			b.WriteByte('%')
		case 'j':
			num(f.JobID)
		case 'J':
			num(f.JobID)
			if f.StepID != "" {
				b.WriteByte('.')
				b.WriteString(f.StepID)
			}
		case 'A':
			if f.IsArray {
				num(f.ArrayJobID)
			} else {
				num(f.JobID)
			}
		case 'a':
			if f.IsArray && f.ArrayTaskID >= 0 {
				num(uint64(f.ArrayTaskID))
			} else {
				b.WriteString(noArrayTask)
			}
		case 's':
			if v, err := strconv.ParseUint(f.StepID, 10, 64); err == nil {
				num(v)
			} else {
				b.WriteString(f.StepID)
			}
		case 'n':
			num(uint64(max(f.NodeID, 0)))
		case 't':
			num(uint64(max(f.TaskID, 0)))
		case 'u':
			b.WriteString(f.User)
		case 'x':
			b.WriteString(f.JobName)
		case 'N':
			b.WriteString(f.NodeName)
		default:
			b.WriteString(pattern[i : j+1])
		}
		i = j
	}
	return b.String()
}

// PerTaskPattern reports whether a filename pattern names something of a
// task's own, as ExpandOutputPattern expands it: %t (its rank), %n (its
// node's index) or %N (its node's name), with or without a width. Slurm's
// srun opens an --input file whose name has none itself and sends its
// bytes to the tasks (fname.c: IO_PER_TASK otherwise); a pattern with a
// backslash is not expanded, so names nothing.
func PerTaskPattern(pattern string) bool {
	if strings.Contains(pattern, `\`) {
		return false
	}
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '%' {
			continue
		}
		j := digitsEnd(pattern, i+1)
		if j >= len(pattern) {
			return false
		}
		switch pattern[j] {
		case 't', 'n', 'N':
			return true
		}
		i = j
	}
	return false
}
