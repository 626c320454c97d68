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

// option applies one of the layout options the accounting commands share
// (-n, -p, -P) named by its long name; false: name is none of them.
func (l *sacctLayout) option(name string) bool {
	switch name {
	case "noheader":
		l.header = false
	case "parsable":
		l.parsable, l.trailing = true, true
	case "parsable2":
		l.parsable, l.trailing = true, false
	default:
		return false
	}
	return true
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

// fieldCol is one resolved item of a format list: its field and its
// width (negative: left-aligned).
type fieldCol[F any] struct {
	field *F
	width int
}

// parseFieldList resolves the items of a format list ("Name[%WIDTH]",
// fieldItem) as the accounting commands do: find names an item's field
// and the field's own width, or the error the command prints; a width
// given in the item replaces the field's. A bad width is an error unless
// lenient (sreport keeps the field's width then). An empty list is an
// error naming opt.
func parseFieldList[F any](items []string, lenient bool, opt string, find func(name string) (*F, int, error)) ([]fieldCol[F], error) {
	var cols []fieldCol[F]
	for _, item := range items {
		name, width, err := fieldItem(item)
		if err != nil && !lenient {
			return nil, err
		}
		f, w, err := find(name)
		if err != nil {
			return nil, err
		}
		if width != 0 {
			w = width
		}
		cols = append(cols, fieldCol[F]{f, w})
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s: no fields given", opt)
	}
	return cols, nil
}

// printFieldCols prints rows through printFields: header is a column's
// header, value a row's cell in it.
func printFieldCols[F, R any](w io.Writer, cols []fieldCol[F], rows []R, l sacctLayout, header func(*F) string, value func(R, *F) string) {
	pcols := make([]printCol, len(cols))
	for i, c := range cols {
		pcols[i] = printCol{header(c.field), c.width}
	}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = make([]string, len(cols))
		for k, c := range cols {
			cells[i][k] = value(r, c.field)
		}
	}
	printFields(w, pcols, cells, l)
}

// abbreviates reports whether word abbreviates name, as Slurm's tools
// take field, report and unit names (xstrncasecmp(word, name,
// max(len(word), min)) == 0): a case-folded prefix of name, at least min
// letters long.
func abbreviates(word, name string, min int) bool {
	return len(word) >= min && len(word) <= len(name) && strings.EqualFold(word, name[:len(word)])
}
