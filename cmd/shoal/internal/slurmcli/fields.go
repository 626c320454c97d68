package slurmcli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// This file holds the table printer of the accounting commands (sacct,
// sacctmgr, sshare, sreport): Slurm's src/common/print_fields.c, which all three
// print through.

// sacctLayout is how rows are printed: aligned columns, or delimited
// with or without a delimiter after the last field.
type sacctLayout struct {
	parsable  bool
	delimiter string
	trailing  bool // --parsable: a delimiter after the last field too
	header    bool
}

// fieldItem splits one item of a format list, "Name[%WIDTH]", as the
// Slurm commands take it (print_fields' format): width 0 when none is
// given; a width that is not a non-zero number is an error naming the
// item, in Slurm's words.
func fieldItem(item string) (name string, width int, err error) {
	name, w, hasW := strings.Cut(item, "%")
	if !hasW {
		return name, 0, nil
	}
	n, err := strconv.Atoi(w)
	if err != nil || n == 0 {
		return name, 0, slurmErrorf("Invalid field width: %q", item)
	}
	return name, n, nil
}

// printCol is one printed column: its header and width (negative:
// left-aligned).
type printCol struct {
	name  string
	width int
}

// sacctCell fits one value to its column as print_fields_str does: right-
// aligned (left for a negative width), an overlong value cut with "+".
func sacctCell(s string, width int) string {
	w := width
	if w < 0 {
		w = -w
	}
	if len(s) > w {
		s = s[:w-1] + "+"
	}
	return fitField(s, w, width > 0) + " "
}

// printFields prints a table as print_fields.c: the header (cut to the
// width without a "+") and a line of dashes, then the rows; or, parsable,
// the values joined by the delimiter.
func printFields(w io.Writer, cols []printCol, rows [][]string, l sacctLayout) {
	line := func(header bool, cells []string) {
		var b strings.Builder
		for i, c := range cols {
			s := cells[i]
			switch {
			case !l.parsable && header:
				b.WriteString(fitField(s, max(c.width, -c.width), c.width > 0) + " ")
			case !l.parsable:
				b.WriteString(sacctCell(s, c.width))
			case i < len(cols)-1 || l.trailing:
				b.WriteString(s + l.delimiter)
			default:
				b.WriteString(s)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	if l.header {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.name
		}
		line(true, names)
		if !l.parsable {
			var b strings.Builder
			for _, c := range cols {
				b.WriteString(strings.Repeat("-", max(c.width, -c.width)) + " ")
			}
			fmt.Fprintln(w, b.String())
		}
	}
	for _, r := range rows {
		line(false, r)
	}
}
