package slurm

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Bounds of a --multi-prog configuration.
const (
	maxMultiProgBytes = 1 << 20
	maxMultiProgRank  = 1 << 22
)

// MultiProgScript turns srun --multi-prog's configuration file into a
// /bin/sh script every task of the step runs: it execs the program the
// configuration gives the task's SLURM_PROCID, as Slurm's srun does. Each
// line is RANKS PROGRAM [ARGS...]: RANKS is * (every task no other line
// names) or a comma list of N and N-M; words split on blanks, with '...'
// and "..." quoting; # starts a comment. In the words %t is the task's
// rank and %o its offset within its line's ranks (the n-th of them,
// from 0). A task no line names fails with exit 1 and a message.
func MultiProgScript(text string) (string, error) {
	if len(text) > maxMultiProgBytes {
		return "", fmt.Errorf("multi-prog: %d bytes, want at most %d", len(text), maxMultiProgBytes)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return "", fmt.Errorf("multi-prog: a NUL byte: want a text file")
	}
	var b strings.Builder
	b.WriteString("case \"$SLURM_PROCID\" in\n")
	var star string
	seen := map[int]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), maxMultiProgBytes)
	n := 0
	for sc.Scan() {
		n++
		words, err := splitWords(sc.Text())
		if err != nil {
			return "", fmt.Errorf("multi-prog line %d: %w", n, err)
		}
		if len(words) == 0 {
			continue
		}
		if len(words) < 2 {
			return "", fmt.Errorf("multi-prog line %d: %q: want RANKS PROGRAM [ARGS...]", n, clip(sc.Text()))
		}
		if words[0] == "*" {
			if star != "" {
				return "", fmt.Errorf("multi-prog line %d: a second * line", n)
			}
			if strings.Contains(strings.Join(words[1:], " "), "%o") {
				return "", fmt.Errorf("multi-prog line %d: %%o on the * line: its offset is not defined", n)
			}
			star = execLine(words[1:], "")
			continue
		}
		ranks, err := multiProgRanks(words[0])
		if err != nil {
			return "", fmt.Errorf("multi-prog line %d: %w", n, err)
		}
		for off, r := range ranks {
			if seen[r] {
				return "", fmt.Errorf("multi-prog line %d: rank %d named twice", n, r)
			}
			seen[r] = true
			fmt.Fprintf(&b, "%d) %s ;;\n", r, execLine(words[1:], strconv.Itoa(off)))
			if b.Len() > maxMultiProgBytes {
				return "", fmt.Errorf("multi-prog: the script grows past %d bytes", maxMultiProgBytes)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("multi-prog: %w", err)
	}
	if len(seen) == 0 && star == "" {
		return "", fmt.Errorf("multi-prog: no line names a program")
	}
	if star == "" {
		star = `echo "srun: error: multi-prog: no program for task $SLURM_PROCID" >&2; exit 1`
	}
	fmt.Fprintf(&b, "*) %s ;;\nesac\n", star)
	return b.String(), nil
}

// execLine is an sh exec of words, %t as the task's rank and %o as off.
func execLine(words []string, off string) string {
	var b strings.Builder
	b.WriteString("exec")
	for _, w := range words {
		b.WriteByte(' ')
		for i, part := range strings.Split(w, "%t") {
			if i > 0 {
				b.WriteString(`"$SLURM_PROCID"`)
			}
			b.WriteString(shellQuote(strings.ReplaceAll(part, "%o", off)))
		}
	}
	return b.String()
}

// shellQuote quotes s for sh: '...' with ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// multiProgRanks reads "0,2-4": the ranks in the order given.
func multiProgRanks(v string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(v, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		c := a
		var err2 error
		if isRange {
			c, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || c < a || c > maxMultiProgRank {
			return nil, fmt.Errorf("ranks %q: want * or a comma list of N and N-M (0 to %d)", clip(v), maxMultiProgRank)
		}
		for r := a; r <= c; r++ {
			out = append(out, r)
			if len(out) > maxMultiProgRank {
				return nil, fmt.Errorf("ranks %q: more than %d", clip(v), maxMultiProgRank)
			}
		}
	}
	return out, nil
}

// splitWords splits a configuration line on blanks, with '...' and
// "..." quoting; # outside quotes ends the line.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '#':
			i = len(line)
		case c == ' ' || c == '\t' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
