package slurm

import (
	"fmt"
	"strings"
)

// This file is the one command-line scanner of every Slurm front-end:
// getopt_long as Slurm's commands call it. sbatch, srun and salloc scan
// in RequireOrder (their optstring starts with "+": the first operand is
// the script or the command, and what follows is its own); squeue,
// scancel, sinfo, sacct and sprio scan with GNU's argument permutation
// (options and operands mix). Both accept unambiguous prefixes of long
// names, bundled short flags (-lN2), optional arguments only attached
// (--nice=5, -K1), "--" to end the options, and word their errors as
// getopt does, so a typo reads as it does under Slurm.

// ArgMode says whether an option takes a value.
type ArgMode uint8

const (
	NoArg   ArgMode = iota // --flag
	NeedArg                // --opt VALUE, --opt=VALUE, -oVALUE, -o VALUE
	OptArg                 // --opt[=VALUE], -o[VALUE] (attached only)
)

// Option is one option of a command, as getopt_long's struct option.
type Option struct {
	Long  string // without the dashes
	Short byte   // 0 for none
	Arg   ArgMode
	// Unsupported, when set, is why Shoal refuses an option the real
	// command has (instead of calling it unrecognized). Getopt does not
	// look at it; the command does, once the whole line has parsed.
	Unsupported string
}

// OptValue is one option as given.
type OptValue struct {
	Opt   *Option // points into the table Getopt was given
	Value string
	Has   bool // a value was given (always, for NeedArg)
	At    int  // index in args of the argument that holds the option
}

// Order is what Getopt does at an argument that is not an option.
type Order uint8

const (
	// Permute is GNU's default: operands and options mix, and the
	// operands are returned in their order.
	Permute Order = iota
	// RequireOrder ("+" in the optstring) stops at the first operand:
	// it and everything after it are returned.
	RequireOrder
)

// UsageError is a command-line error worded as getopt words it, without
// the command's name (the caller adds "squeue: " where the command
// prints it so).
type UsageError struct {
	Msg string
	At  int // index in args of the argument at fault
	// Unknown is set for an option the table does not have: Long names
	// it ("" for a short option), or Short does.
	Unknown bool
	Long    string
	Short   byte
}

func (e *UsageError) Error() string { return e.Msg }

// Getopt scans args against opts as getopt_long does and calls each, in
// the order given, with every option; it returns the operands (and what
// follows "--"). An error from each stops the scan and is returned as
// is. A long name matches exactly or as an unambiguous prefix; an
// ambiguous one lists the candidates in the table's order.
func Getopt(opts []Option, args []string, order Order, each func(OptValue) error) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a, at := args[i], i
		switch {
		case a == "--":
			return append(rest, args[i+1:]...), nil
		case len(a) < 2 || a[0] != '-':
			if order == RequireOrder {
				return append(rest, args[i:]...), nil
			}
			rest = append(rest, a)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			o, err := lookupLong(opts, name)
			if err != nil {
				err.At = at
				return nil, err
			}
			switch o.Arg {
			case NoArg:
				if hasVal {
					return nil, &UsageError{Msg: fmt.Sprintf("option '--%s' doesn't allow an argument", o.Long), At: at}
				}
			case NeedArg:
				if !hasVal {
					if i+1 >= len(args) {
						return nil, &UsageError{Msg: fmt.Sprintf("option '--%s' requires an argument", o.Long), At: at}
					}
					i++
					val, hasVal = args[i], true
				}
			}
			if err := each(OptValue{Opt: o, Value: val, Has: hasVal, At: at}); err != nil {
				return nil, err
			}
		default: // one or more short options
			for j := 1; j < len(a); j++ {
				o := lookupShort(opts, a[j])
				if o == nil {
					return nil, &UsageError{Msg: fmt.Sprintf("invalid option -- '%s'", printable(a[j])), At: at, Unknown: true, Short: a[j]}
				}
				if o.Arg == NoArg {
					if err := each(OptValue{Opt: o, At: at}); err != nil {
						return nil, err
					}
					continue
				}
				val, hasVal := a[j+1:], j+1 < len(a)
				if !hasVal && o.Arg == NeedArg {
					if i+1 >= len(args) {
						return nil, &UsageError{Msg: fmt.Sprintf("option requires an argument -- '%c'", a[j]), At: at}
					}
					i++
					val, hasVal = args[i], true
				}
				if err := each(OptValue{Opt: o, Value: val, Has: hasVal, At: at}); err != nil {
					return nil, err
				}
				break
			}
		}
	}
	return rest, nil
}

// lookupLong finds a long option by its name or an unambiguous prefix.
func lookupLong(opts []Option, name string) (*Option, *UsageError) {
	var matches []*Option
	for i := range opts {
		if opts[i].Long == name {
			return &opts[i], nil
		}
		if name != "" && strings.HasPrefix(opts[i].Long, name) {
			matches = append(matches, &opts[i])
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, &UsageError{Msg: fmt.Sprintf("unrecognized option '--%s'", clip(name)), Unknown: true, Long: name}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "option '--%s' is ambiguous; possibilities:", clip(name))
	for _, m := range matches {
		fmt.Fprintf(&b, " '--%s'", m.Long)
	}
	return nil, &UsageError{Msg: b.String()}
}

func lookupShort(opts []Option, c byte) *Option {
	for i := range opts {
		if opts[i].Short == c && c != 0 {
			return &opts[i]
		}
	}
	return nil
}

func printable(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(c)
	}
	return fmt.Sprintf("\\x%02x", c)
}
