package slurm

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Bounds on what one hostlist expression may expand to. They keep hostile
// input (an HTTP body, a script directive) from exhausting memory.
const (
	// MaxRangeHosts is the most names one range may give, as in Slurm
	// (MAX_RANGE): "n[1-65536]" is valid, "n[1-65537]" is not.
	MaxRangeHosts = 1 << 16
	// MaxHostlistNames is the most names one expression may expand to.
	MaxHostlistNames = 1 << 20
	// MaxHostlistBytes bounds the total length of the expanded names.
	MaxHostlistBytes = 64 << 20
)

// isSep reports whether c separates hostlist items (outside brackets).
func isSep(c byte) bool { return c == ',' || c == ' ' || c == '\t' || c == '\n' }

// numRange is one "LO" or "LO-HI" inside brackets.
type numRange struct {
	lo, hi uint64
	width  int // the low bound's digits, leading zeros included
}

func (r numRange) count() uint64 { return r.hi - r.lo + 1 }

// group is one bracket's range list.
type group []numRange

func (g group) count() uint64 {
	var n uint64
	for _, r := range g {
		n += r.count() // at most MaxRangeHosts per range, so no overflow for sane lengths
	}
	return n
}

// item is one name pattern: texts[0] [groups[0]] texts[1] [groups[1]] ...
// There is one more text than groups; the last text is always empty when
// there are groups (Slurm allows nothing after the last ']').
type item struct {
	texts  []string
	groups []group
}

// ExpandHostlist expands a Slurm hostlist expression ("n[1-3,7]",
// "gpu-a[1-2]-b[3-4]", "node[01-04]", "a1,b[2-3]") into host names, in
// Slurm's order, duplicates kept. Items are separated by commas, spaces,
// tabs or newlines; empty items are skipped, so "" gives no names and no
// error. Errors name the bad item and the accepted form.
func ExpandHostlist(expr string) ([]string, error) {
	var items []item
	var total, bytes uint64
	for rest := expr; ; {
		tok, next, ok := nextItem(rest)
		if !ok {
			break
		}
		rest = next
		it, err := parseItem(tok)
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", clip(expr), err)
		}
		n, size := it.size()
		total += n
		bytes += size
		if n > MaxHostlistNames || total > MaxHostlistNames {
			return nil, fmt.Errorf("hostlist %q: more than %d names", clip(expr), MaxHostlistNames)
		}
		if size > MaxHostlistBytes || bytes > MaxHostlistBytes {
			return nil, fmt.Errorf("hostlist %q: names longer than %d bytes in all", clip(expr), MaxHostlistBytes)
		}
		items = append(items, it)
	}
	names := make([]string, 0, total)
	for _, it := range items {
		names = it.expand(names)
	}
	return names, nil
}

// clip shortens user text quoted in an error.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// nextItem returns the next item of s (separators inside brackets do not
// split) and what follows it; ok is false when only separators are left.
func nextItem(s string) (tok, rest string, ok bool) {
	i := 0
	for i < len(s) && isSep(s[i]) {
		i++
	}
	if i == len(s) {
		return "", "", false
	}
	start, depth := i, 0
	for ; i < len(s) && (depth > 0 || !isSep(s[i])); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			if depth > 0 { // a ']' before any '[' is part of a name
				depth--
			}
		}
	}
	return s[start:i], s[i:], true
}

// parseItem parses one name pattern. A ']' before the first '[' is part
// of the name, as Slurm takes "n]1" and "n][1-2]" (n]1,n]2).
func parseItem(tok string) (item, error) {
	var it item
	text := 0 // start of the current literal text
	for i := 0; i < len(tok); i++ {
		switch tok[i] {
		case ']':
			if len(it.groups) == 0 {
				continue
			}
			return item{}, fmt.Errorf("%q: ']' without '['; want NAME or PREFIX[RANGES]", clip(tok))
		case '[':
			end := strings.IndexAny(tok[i+1:], "[]")
			if end < 0 || tok[i+1+end] != ']' {
				return item{}, fmt.Errorf("%q: unclosed or nested '['; want PREFIX[RANGES] with RANGES like 1-4,7", clip(tok))
			}
			g, err := parseGroup(tok[i+1 : i+1+end])
			if err != nil {
				return item{}, fmt.Errorf("%q: %w", clip(tok), err)
			}
			it.texts = append(it.texts, tok[text:i])
			it.groups = append(it.groups, g)
			i += 1 + end
			text = i + 1
		}
	}
	tail := tok[text:]
	if len(it.groups) > 0 && tail != "" {
		return item{}, fmt.Errorf("%q: text %q after the last ']'; want PREFIX[RANGES] with nothing after the bracket", clip(tok), clip(tail))
	}
	it.texts = append(it.texts, tail)
	return it, nil
}

// parseGroup parses the inside of a bracket: "1-3,7,09-12". Whitespace is
// refused: Slurm 22.05 counts a leading space as a digit of the width
// ("n[ 1-3]" is n01..n03) and refuses a trailing one.
func parseGroup(s string) (group, error) {
	var g group
	for part := range strings.SplitSeq(s, ",") {
		r, err := parseRange(part)
		if err != nil {
			return nil, err
		}
		g = append(g, r)
	}
	return g, nil
}

func parseRange(part string) (numRange, error) {
	bad := func(why string) (numRange, error) {
		return numRange{}, fmt.Errorf("range %q: %s; want N or LO-HI with decimal LO <= HI", clip(part), why)
	}
	if strings.ContainsAny(part, " \t\n") {
		return bad("whitespace inside brackets")
	}
	loS, hiS, isRange := strings.Cut(part, "-")
	if loS == "" || (isRange && hiS == "") {
		return bad("missing number")
	}
	lo, ok := parseDigits(loS)
	if !ok {
		return bad("not a number")
	}
	hi := lo
	if isRange {
		if hi, ok = parseDigits(hiS); !ok {
			return bad("not a number")
		}
	}
	if lo > hi {
		return bad("low bound above high bound")
	}
	if hi-lo >= MaxRangeHosts {
		return bad(fmt.Sprintf("more than %d hosts", MaxRangeHosts))
	}
	return numRange{lo: lo, hi: hi, width: len(loS)}, nil
}

// parseDigits parses a non-empty run of ASCII digits that fits 64 bits.
func parseDigits(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// size returns how many names the item gives and an upper bound of their
// total length, saturating instead of overflowing.
func (it item) size() (n, bytes uint64) {
	n = 1
	per := uint64(0)
	for _, t := range it.texts {
		per += uint64(len(t))
	}
	for _, g := range it.groups {
		hi, lo := bits.Mul64(n, g.count())
		if hi != 0 {
			return math.MaxUint64, math.MaxUint64
		}
		n = lo
		w := 0
		for _, r := range g {
			w = max(w, r.width, len(strconv.FormatUint(r.hi, 10)))
		}
		per += uint64(w)
	}
	hi, lo := bits.Mul64(n, per)
	if hi != 0 {
		return n, math.MaxUint64
	}
	return n, lo
}

// expand appends the item's names to dst in Slurm's order: the last
// bracket varies fastest, then the first, the second, and so on.
func (it item) expand(dst []string) []string {
	k := len(it.groups)
	if k == 0 {
		return append(dst, it.texts[0])
	}
	vals := make([][]string, k)
	for i, g := range it.groups {
		for _, r := range g {
			for v := r.lo; ; v++ {
				vals[i] = append(vals[i], pad(v, r.width))
				if v == r.hi {
					break
				}
			}
		}
	}
	// order lists the groups from fastest to slowest.
	order := make([]int, 0, k)
	order = append(order, k-1)
	for i := 0; i < k-1; i++ {
		order = append(order, i)
	}
	idx := make([]int, k)
	var b strings.Builder
	for {
		b.Reset()
		for i := 0; i < k; i++ {
			b.WriteString(it.texts[i])
			b.WriteString(vals[i][idx[i]])
		}
		dst = append(dst, b.String())
		j := 0
		for ; j < k; j++ {
			g := order[j]
			idx[g]++
			if idx[g] < len(vals[g]) {
				break
			}
			idx[g] = 0
		}
		if j == k {
			return dst
		}
	}
}

// pad formats v in decimal with at least width digits, as "%0*d" does.
func pad(v uint64, width int) string {
	s := strconv.FormatUint(v, 10)
	if len(s) >= width {
		return s
	}
	return strings.Repeat("0", width-len(s)) + s
}

// hostRange is a run of names PREFIX<lo>..PREFIX<hi>, as Slurm's hostlist
// keeps them; single is a name with no numeric suffix.
type hostRange struct {
	prefix string
	lo, hi uint64
	width  int
	single bool
}

// splitName splits a host name into its prefix and numeric suffix, as
// Slurm's hostname_create does. A name whose digits do not fit 64 bits is
// kept whole, so it prints back unchanged.
func splitName(name string) hostRange {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) {
		return hostRange{prefix: name, single: true}
	}
	v, err := strconv.ParseUint(name[i:], 10, 64)
	if err != nil {
		return hostRange{prefix: name, single: true}
	}
	return hostRange{prefix: name[:i], lo: v, hi: v, width: len(name) - i}
}

// CompareNodeNames orders node names as people number them, as sinfo
// lists nodes: names with the same prefix and different trailing numbers
// compare by number ("n2" before "n10"); any other two compare as
// strings ("n01" before "n1", "gpu1" before "n1").
func CompareNodeNames(a, b string) int {
	ra, rb := splitName(a), splitName(b)
	if !ra.single && !rb.single && ra.prefix == rb.prefix && ra.lo != rb.lo {
		return cmp.Compare(ra.lo, rb.lo)
	}
	return strings.Compare(a, b)
}

// zeroPadded returns how many leading zeros "%0*d" adds to num at width.
func zeroPadded(num uint64, width int) int {
	n := len(strconv.FormatUint(num, 10))
	if width > n {
		return width - n
	}
	return 0
}

// widthEquiv reports whether two ranges print compatibly when joined and,
// if so, sets the widths to agree. It is Slurm's _width_equiv: a width that
// adds no zeros to a range's low bound may take the other's width.
func widthEquiv(n uint64, wn *int, m uint64, wm *int) bool {
	npad, nmpad := zeroPadded(n, *wn), zeroPadded(n, *wm)
	mpad, mnpad := zeroPadded(m, *wm), zeroPadded(m, *wn)
	switch {
	case npad != nmpad && mpad != mnpad:
		return false
	case npad != nmpad:
		*wm = *wn
	default:
		*wn = *wm
	}
	return true
}

// CompressHostlist writes names as one hostlist expression, exactly as
// Slurm 22.05's `scontrol show hostlist` (and SLURM_JOB_NODELIST) does:
// consecutive names that differ only in an adjacent number join into a
// range ("n1,n2,n3" is "n[1-3]"), runs with the same prefix share one
// bracket ("n[1-3,7]"), zero-padding is kept, and the order and any
// duplicates are kept ("n1,n3,n2" is "n[1,3,2]"). No names give "".
func CompressHostlist(names []string) string {
	return formatRanges(nameRanges(names))
}

// SortedHostlist is `scontrol show hostlistsorted`: the ranges of names
// sorted by prefix (byte order), then first number, then zero-padding
// width; overlapping ranges are cut where they meet and adjacent ones
// joined, as Slurm 22.05's hostlist_sort does: duplicates stay
// ("n[1-2],n[2-3]" stays "n[1-2,2-3]", "n[1-3],n[2-4]" is
// "n[1-2,2-3,3-4]", "n3,n1,n2,n1" is "n[1,1-3]").
func SortedHostlist(names []string) string {
	hr := nameRanges(names)
	slices.SortStableFunc(hr, func(a, b hostRange) int {
		if c := strings.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		switch {
		case a.single != b.single:
			if a.single {
				return -1
			}
			return 1
		case a.lo != b.lo:
			return cmp.Compare(a.lo, b.lo)
		}
		return cmp.Compare(a.width, b.width)
	})
	return formatRanges(collapse(coalesce(hr)))
}

// coalesce is Slurm's hostlist_coalesce on sorted ranges: where two
// neighbours overlap, the first is cut at the overlap's start, the second
// starts at its end, and the numbers between go in as single ranges.
// Every pass removes an overlap or ends, and the names stay the same, so
// it ends.
func coalesce(hr []hostRange) []hostRange {
	for i := len(hr) - 1; i > 0; i-- {
		prev, next := hr[i-1], hr[i]
		if prev.single || next.single || prev.prefix != next.prefix || prev.hi <= next.lo ||
			!widthEquiv(prev.lo, &prev.width, next.lo, &next.width) {
			continue
		}
		lo, hi := next.lo, min(next.hi, prev.hi)
		if hi < prev.hi {
			next.hi = prev.hi
		}
		prev.hi, next.lo = lo, hi
		mid := []hostRange{prev}
		for v := lo; ; v++ {
			one := hostRange{prefix: prev.prefix, lo: v, hi: v, width: prev.width}
			if v > prev.hi {
				mid = append(mid, one)
			}
			if v < next.lo {
				mid = append(mid, one)
			}
			if v == hi {
				break
			}
		}
		mid = append(mid, next)
		hr = slices.Concat(hr[:i-1], mid, hr[i+1:])
		i = len(hr)
	}
	return hr
}

// collapse is Slurm's hostlist_collapse: neighbours that continue each
// other join, from the end.
func collapse(hr []hostRange) []hostRange {
	for i := len(hr) - 1; i > 0; i-- {
		prev, next := &hr[i-1], &hr[i]
		if !prev.single && !next.single && prev.prefix == next.prefix &&
			prev.hi != math.MaxUint64 && prev.hi+1 == next.lo &&
			widthEquiv(prev.lo, &prev.width, next.lo, &next.width) {
			prev.hi = next.hi
			hr = slices.Delete(hr, i, i+1)
		}
	}
	return hr
}

// nameRanges joins consecutive names that differ only in an adjacent
// number into ranges, keeping their order.
func nameRanges(names []string) []hostRange {
	var hr []hostRange
	for _, name := range names {
		hr = appendRange(hr, splitName(name))
	}
	return hr
}

// appendRange appends r to hr, or extends hr's last range with it when r
// continues it: same prefix, the next number, a compatible zero-padding.
func appendRange(hr []hostRange, r hostRange) []hostRange {
	if n := len(hr); n > 0 {
		t := &hr[n-1]
		if !t.single && !r.single && t.prefix == r.prefix &&
			t.hi != math.MaxUint64 && t.hi+1 == r.lo &&
			widthEquiv(t.lo, &t.width, r.lo, &r.width) {
			t.hi = r.hi
			return hr
		}
	}
	return append(hr, r)
}

// formatRanges writes ranges as a hostlist expression, ranges with the
// same prefix next to each other sharing one bracket.
func formatRanges(hr []hostRange) string {
	var b strings.Builder
	for i := 0; i < len(hr); {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(hr[i].prefix)
		if hr[i].single {
			i++
			continue
		}
		bracket := hr[i].lo != hr[i].hi || withinRange(hr, i+1, i)
		if bracket {
			b.WriteByte('[')
		}
		for first := true; ; first = false {
			if !first {
				b.WriteByte(',')
			}
			r := hr[i]
			b.WriteString(pad(r.lo, r.width))
			if r.lo < r.hi {
				b.WriteByte('-')
				b.WriteString(pad(r.hi, r.width))
			}
			i++
			if !withinRange(hr, i, i-1) {
				break
			}
		}
		if bracket {
			b.WriteByte(']')
		}
	}
	return b.String()
}

// withinRange reports whether hr[i] may share hr[j]'s bracket: both exist,
// both are numbered, and their prefixes are equal.
func withinRange(hr []hostRange, i, j int) bool {
	return i < len(hr) && j < len(hr) && !hr[i].single && !hr[j].single && hr[i].prefix == hr[j].prefix
}

// UniqueHosts drops the repeats from a list of node names, keeping each
// name's first place; it reuses names' array.
func UniqueHosts(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
