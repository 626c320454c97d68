package main

import (
	"fmt"
	"io"
	"strings"
)

// This file is the command-line parser of the Slurm query commands
// (squeue, scancel, sinfo, sacct): getopt_long as Slurm calls it, with
// GNU's argument permutation (options and operands mix, "--" ends the
// options), unambiguous prefixes of long names, bundled short flags and
// getopt's own error messages, so a typo reads as it does under Slurm.

// optArgMode says whether an option takes a value.
type optArgMode uint8

const (
	argNone     optArgMode = iota // --flag
	argRequired                   // --opt VALUE, --opt=VALUE, -oVALUE, -o VALUE
	argOptional                   // --opt[=VALUE], -o[VALUE] (attached only)
)

// cliOpt is one option of a query command.
type cliOpt struct {
	long  string // without the dashes
	short byte   // 0 for none
	arg   optArgMode
	// unsupported, when set, is why Shoal refuses an option the real
	// command has (instead of calling it unrecognized).
	unsupported string
}

// cliValue is one option as given.
type cliValue struct {
	opt   *cliOpt
	value string
	has   bool // a value was given (always, for argRequired)
}

// cliUsageError is a parse error already worded as getopt words it; the
// command prints it and the "Try ... --help" line.
type cliUsageError struct{ msg string }

func (e *cliUsageError) Error() string { return e.msg }

// parseCLI parses args against opts. It returns the options in the order
// given and the operands.
func parseCLI(cmd string, opts []cliOpt, args []string) ([]cliValue, []string, error) {
	var vals []cliValue
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return vals, append(rest, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			o, err := lookupLongOpt(cmd, opts, name)
			if err != nil {
				return nil, nil, err
			}
			switch o.arg {
			case argNone:
				if hasVal {
					return nil, nil, &cliUsageError{fmt.Sprintf("%s: option '--%s' doesn't allow an argument", cmd, o.long)}
				}
			case argRequired:
				if !hasVal {
					if i+1 >= len(args) {
						return nil, nil, &cliUsageError{fmt.Sprintf("%s: option '--%s' requires an argument", cmd, o.long)}
					}
					i++
					val, hasVal = args[i], true
				}
			}
			vals = append(vals, cliValue{opt: o, value: val, has: hasVal})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				o := lookupShortOpt(opts, a[j])
				if o == nil {
					return nil, nil, &cliUsageError{fmt.Sprintf("%s: invalid option -- '%c'", cmd, a[j])}
				}
				if o.arg == argNone {
					vals = append(vals, cliValue{opt: o})
					continue
				}
				val, hasVal := a[j+1:], j+1 < len(a)
				if !hasVal && o.arg == argRequired {
					if i+1 >= len(args) {
						return nil, nil, &cliUsageError{fmt.Sprintf("%s: option requires an argument -- '%c'", cmd, a[j])}
					}
					i++
					val, hasVal = args[i], true
				}
				vals = append(vals, cliValue{opt: o, value: val, has: hasVal})
				break
			}
		default:
			rest = append(rest, a)
		}
	}
	return vals, rest, nil
}

func lookupLongOpt(cmd string, opts []cliOpt, name string) (*cliOpt, error) {
	var matches []*cliOpt
	for i := range opts {
		if opts[i].long == name {
			return &opts[i], nil
		}
		if name != "" && strings.HasPrefix(opts[i].long, name) {
			matches = append(matches, &opts[i])
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, &cliUsageError{fmt.Sprintf("%s: unrecognized option '--%s'", cmd, name)}
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = "'--" + m.long + "'"
	}
	return nil, &cliUsageError{fmt.Sprintf("%s: option '--%s' is ambiguous; possibilities: %s", cmd, name, strings.Join(names, " "))}
}

func lookupShortOpt(opts []cliOpt, c byte) *cliOpt {
	for i := range opts {
		if opts[i].short == c && c != 0 {
			return &opts[i]
		}
	}
	return nil
}

// cliArgs parses a query command's arguments and prints a usage error as
// the command does; the returned error then only carries the exit code.
// An option Shoal refuses is an error naming it.
func cliArgs(cmd string, opts []cliOpt, args []string, stderr io.Writer) ([]cliValue, []string, error) {
	vals, rest, err := parseCLI(cmd, opts, args)
	if err != nil {
		fmt.Fprintln(stderr, err.Error())
		fmt.Fprintf(stderr, "Try \"%s --help\" for more information\n", cmd)
		return nil, nil, exitCode(1)
	}
	for _, v := range vals {
		if v.opt.unsupported != "" {
			return nil, nil, fmt.Errorf("--%s: not supported by Shoal yet: %s", v.opt.long, v.opt.unsupported)
		}
	}
	return vals, rest, nil
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

// naturalLess orders node names as people number them: n2 before n10.
func naturalLess(a, b string) bool {
	pa, na, oka := splitTrailingNumber(a)
	pb, nb, okb := splitTrailingNumber(b)
	if oka && okb && pa == pb && na != nb {
		return na < nb
	}
	return a < b
}

func splitTrailingNumber(s string) (string, uint64, bool) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) || len(s)-i > 18 {
		return s, 0, false
	}
	var n uint64
	for _, c := range s[i:] {
		n = n*10 + uint64(c-'0')
	}
	return s[:i], n, true
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
