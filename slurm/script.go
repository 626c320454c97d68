package slurm

import (
	"bytes"
	"fmt"
	"strings"
)

// Bounds on what a batch script's header may hold.
const (
	// MaxScriptBytes is the largest script ParseBatch takes (Slurm's
	// default max_script_size is 4 MiB).
	MaxScriptBytes = 4 << 20
	// MaxDirectiveArgs bounds the arguments all #SBATCH lines may give.
	MaxDirectiveArgs = 4096
)

// directiveMagic starts a directive line, at the very start of the line.
const directiveMagic = "#SBATCH"

// directive is one argument of an #SBATCH line and the line it came from.
type directive struct {
	arg  string
	line int
}

// ScriptDirectives returns the arguments of the #SBATCH lines of a batch
// script's header, as sbatch finds them: lines are read until the first
// one that holds anything but white space and is not a comment (its first
// non-blank byte is not '#'); "#!" lines, blank lines and other comments
// do not end the header, and #SBATCH lines after it are ignored. A
// directive must start its line ("  #SBATCH" is a comment). Its text is
// split at white space; single or double quotes group, a backslash
// escapes the next byte (but, as in Slurm, never white space outside
// quotes: "a\ b" is two arguments), and an unquoted, unescaped '#' starts a comment
// to the end of the line ("#SBATCH -N 2 # two nodes" is -N 2). A quoted
// empty string ends the line, as in Slurm.
func ScriptDirectives(script []byte) ([]string, error) {
	ds, err := scriptDirectives(script)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.arg
	}
	return out, nil
}

func scriptDirectives(script []byte) ([]directive, error) {
	var out []directive
	lineNo := 0
	for rest := script; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		lineNo++
		text, ok := bytes.CutPrefix(line, []byte(directiveMagic))
		if !ok {
			i := 0
			for i < len(line) && isSpace(line[i]) {
				i++
			}
			if i < len(line) && line[i] != '#' {
				break // the first command ends the header
			}
			continue
		}
		for ptr := string(text); ; {
			arg, used, more, err := directiveArg(ptr)
			if err != nil {
				return nil, fmt.Errorf("#SBATCH line %d %q: %w", lineNo, clip(string(line)), err)
			}
			if !more {
				break
			}
			if len(out) == MaxDirectiveArgs {
				return nil, fmt.Errorf("#SBATCH line %d: more than %d directive arguments in all", lineNo, MaxDirectiveArgs)
			}
			out = append(out, directive{arg: arg, line: lineNo})
			ptr = ptr[used:]
		}
	}
	return out, nil
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// directiveArg takes the next argument from the rest of a directive line:
// the argument, the bytes it used, and whether there was one.
func directiveArg(s string) (arg string, used int, ok bool, err error) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i < len(s) && s[i] == ':' {
		return "", 0, false, fmt.Errorf("unexpected ':' (heterogeneous jobs are not supported by Shoal)")
	}
	var b strings.Builder
	var quote byte
	escaped := false
	for ; i < len(s) && (quote != 0 || !isSpace(s[i])); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
			continue
		case quote != 0:
			if c == quote {
				quote = 0
				continue
			}
		case c == '"' || c == '\'':
			quote = c
			continue
		case c == '#':
			return b.String(), i, b.Len() > 0, nil
		}
		b.WriteByte(c)
	}
	if quote != 0 {
		return "", 0, false, fmt.Errorf("unmatched %c", quote)
	}
	return b.String(), i, b.Len() > 0, nil
}

// ParseBatch parses a batch script and the sbatch command line that
// submits it: the #SBATCH directives first, then the command-line options,
// which win where both set an option (as Slurm documents). cmdline holds
// the options and then, unless --wrap builds the script, the script's
// name and arguments; the returned rest is the arguments after the
// script's name. The script must start with "#!" and use Unix line ends,
// as sbatch insists. Cross-option checks run once, on the merged options.
func ParseBatch(script []byte, cmdline []string) (Options, []string, error) {
	o := Options{Set: map[string]bool{}}
	switch {
	case len(script) > MaxScriptBytes:
		return o, nil, fmt.Errorf("batch script: %d bytes, want at most %d", len(script), MaxScriptBytes)
	case !bytes.HasPrefix(script, []byte("#!")):
		return o, nil, fmt.Errorf("batch script: the first line must start with #! followed by the path to an interpreter, for instance #!/bin/sh")
	case bytes.Contains(script, []byte("\r\n")):
		return o, nil, fmt.Errorf("batch script: DOS line breaks (\\r\\n) instead of Unix line breaks (\\n)")
	case bytes.IndexByte(script, 0) >= 0:
		return o, nil, fmt.Errorf("batch script: contains a NUL byte")
	}
	ds, err := scriptDirectives(script)
	if err != nil {
		return o, nil, err
	}
	// Like sbatch, parse all directive arguments as one argument list (an
	// option's value may be on the next line), naming the line of the
	// argument an error is about.
	args := make([]string, len(ds))
	for i, d := range ds {
		args[i] = d.arg
	}
	p := parseState{cmd: Sbatch, o: &o}
	rest, err := p.parse(args)
	if err != nil {
		return o, nil, fmt.Errorf("#SBATCH line %d: %w", ds[min(p.at, len(ds)-1)].line, err)
	}
	if len(rest) > 0 {
		d := ds[len(ds)-len(rest)]
		return o, nil, fmt.Errorf("#SBATCH line %d: invalid directive %q: want options only", d.line, clip(d.arg))
	}
	if o.Set["wrap"] {
		return o, nil, fmt.Errorf("#SBATCH --wrap: a batch script cannot wrap another command")
	}
	rest, err = p.parse(cmdline)
	if err != nil {
		return o, nil, err
	}
	if o.Set["wrap"] {
		return o, nil, fmt.Errorf("--wrap: a batch script was given as well")
	}
	if err := p.finish(rest); err != nil {
		return o, nil, err
	}
	if len(rest) > 0 {
		rest = rest[1:]
	}
	return o, rest, nil
}

// WrapScript returns the batch script sbatch --wrap=command submits.
func WrapScript(command string) []byte {
	return []byte("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n" + command + "\n")
}
