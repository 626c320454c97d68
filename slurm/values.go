package slurm

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The accepted forms, quoted in every error of the parser that owns them.
const (
	arrayForms      = "want N, N-M, N-M:S or lists of them, with an optional %LIMIT"
	dependencyForms = "want TYPE:ID[:ID...] (TYPE after, afterany, afterok, afternotok, aftercorr or afterburstbuffer; ID a job id, ID_TASK or ID_*; after:ID+MINUTES), singleton, or several joined by ',' (all) or '?' (any)"
	signalForms     = "want [B:]SIG[@SECONDS] (SIG a name such as USR1 or SIGUSR1, or a number 1-64; SECONDS 0-65535)"
	memoryForms     = "want a size in MiB, or a number with a K, M, G or T suffix"
	gresForms       = "want NAME[:TYPE][:COUNT] or a comma-separated list of them"
	gpuForms        = "want N or TYPE:N"
	exportForms     = "want ALL, NONE, or a comma-separated list of NAME or NAME=VALUE, optionally led by ALL or NONE"
	nodesForms      = "want N or N-M (each a positive number, optionally with a k or m suffix)"
	switchesForms   = "want COUNT[@MAX-TIME] (MAX-TIME as --time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)"
	constraintForms = "want features joined by & or |, each optionally *COUNT, grouped with ( ) and at most one [ ] set"
	positiveForms   = "want a positive whole number"
)

// MaxArraySize is Slurm's default MaxArraySize: array indices run from 0
// to MaxArraySize-1.
const MaxArraySize = 1001

// Array is a parsed --array value: the indices in ascending order without
// duplicates (Slurm keeps them in a bitmap), and the most elements that
// may run at once (0: no limit).
type Array struct {
	Indices  []int
	Throttle int
}

// ParseArray parses a Slurm --array value: comma-separated N, N-M or
// N-M:S items ("0-15", "1,3,5-7:2"), with an optional "%LIMIT" suffix
// ("0-15%4"). Indices must lie in 0..MaxArraySize-1; they are sorted and
// de-duplicated as Slurm does. The limit must be positive.
func ParseArray(s string) (Array, error) {
	bad := func(why string) (Array, error) {
		if why != "" {
			why += "; "
		}
		return Array{}, fmt.Errorf("--array %q: %s%s", clip(s), why, arrayForms)
	}
	spec, limit, hasLimit := strings.Cut(s, "%")
	var a Array
	if hasLimit {
		n, ok := decimal(limit)
		if !ok || n < 1 {
			return bad("the %LIMIT must be a positive number")
		}
		a.Throttle = int(min(n, math.MaxInt32))
	}
	var seen [MaxArraySize]bool
	for item := range strings.SplitSeq(spec, ",") {
		rng, stepText, hasStep := strings.Cut(item, ":")
		loText, hiText, isRange := strings.Cut(rng, "-")
		lo, ok := decimal(loText)
		if !ok {
			return bad(fmt.Sprintf("bad item %q", clip(item)))
		}
		hi, step := lo, int64(1)
		if isRange {
			if hi, ok = decimal(hiText); !ok {
				return bad(fmt.Sprintf("bad item %q", clip(item)))
			}
		}
		if hasStep {
			if !isRange {
				return bad(fmt.Sprintf("item %q: a :STEP needs a range N-M", clip(item)))
			}
			if step, ok = decimal(stepText); !ok || step < 1 {
				return bad(fmt.Sprintf("item %q: the step must be a positive number", clip(item)))
			}
		}
		if hi < lo {
			return bad(fmt.Sprintf("item %q: the range ends below its start", clip(item)))
		}
		if hi > MaxArraySize-1 {
			return bad(fmt.Sprintf("index %d is above %d (MaxArraySize %d)", hi, MaxArraySize-1, MaxArraySize))
		}
		for i := lo; i <= hi; i += step { // at most MaxArraySize iterations
			seen[i] = true
		}
	}
	for i, ok := range seen {
		if ok {
			a.Indices = append(a.Indices, i)
		}
	}
	return a, nil
}

// String formats the array as a --array value ParseArray reads back:
// runs of consecutive indices as N-M, joined by commas, then %LIMIT.
func (a Array) String() string {
	var b strings.Builder
	for i := 0; i < len(a.Indices); {
		j := i
		for j+1 < len(a.Indices) && a.Indices[j+1] == a.Indices[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(a.Indices[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(a.Indices[j]))
		}
		i = j + 1
	}
	if a.Throttle > 0 {
		fmt.Fprintf(&b, "%%%d", a.Throttle)
	}
	return b.String()
}

// digitsEnd returns the end of the run of ASCII digits in s that starts
// at i (i itself when s[i] is no digit).
func digitsEnd(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// decimal parses a non-empty run of at most 18 ASCII digits (no sign, no
// spaces), so the value always fits an int64 with room to add to it.
func decimal(s string) (int64, bool) {
	if len(s) > 18 {
		return 0, false
	}
	v, ok := parseDigits(s)
	return int64(v), ok
}

// positive parses a whole number of at least 1 that fits an int32, the
// way Slurm's parse_int(..., positive=true) accepts counts.
func positive(opt, s string) (int, error) {
	v, ok := decimal(s)
	if !ok || v < 1 || v > math.MaxInt32 {
		return 0, fmt.Errorf("--%s %q: %s", opt, clip(s), positiveForms)
	}
	return int(v), nil
}

// Dependency types, as Slurm spells them.
const (
	DepAfter         = "after"
	DepAfterAny      = "afterany"
	DepAfterOK       = "afterok"
	DepAfterNotOK    = "afternotok"
	DepAfterCorr     = "aftercorr"
	DepAfterBurstBuf = "afterburstbuffer"
	DepSingleton     = "singleton"
)

var depTypes = []string{DepAfter, DepAfterAny, DepAfterOK, DepAfterNotOK, DepAfterCorr, DepAfterBurstBuf, DepSingleton}

// MaxDependencyJobs bounds the job ids one --dependency may name.
const MaxDependencyJobs = 1024

// Dependency is a parsed --dependency value.
type Dependency struct {
	// Any is true when the conditions were joined by '?' (any one
	// suffices), false for ',' (all must hold).
	Any        bool
	Conditions []DepCondition
}

// DepCondition is one TYPE:ID[:ID...] item, or singleton (no Jobs).
type DepCondition struct {
	Type string
	Jobs []DepJob
}

// DepJob names one job a condition waits on.
type DepJob struct {
	ID uint64
	// Task is the array element ("123_4"), or -1 for the whole job.
	Task int
	// AllTasks is "123_*": every element of array job 123.
	AllTasks bool
	// Delay is after's +MINUTES: how long after the job started.
	Delay time.Duration
}

// ParseDependency parses a Slurm --dependency value: items TYPE:ID[:ID...]
// and singleton, joined by ',' (all must hold) or '?' (any suffices), never
// both. An ID is a job id, ID_TASK (one array element) or ID_* (all of
// them); after:ID+MINUTES delays the start. A bare list of ids ("12:13")
// is afterany, as in Slurm's old syntax.
func ParseDependency(s string) (Dependency, error) {
	bad := func(part, why string) (Dependency, error) {
		return Dependency{}, fmt.Errorf("--dependency %q: %q %s; %s", clip(s), clip(part), why, dependencyForms)
	}
	if strings.Contains(s, ",") && strings.Contains(s, "?") {
		return bad(s, "mixes ',' and '?' (Slurm allows one kind of separator)")
	}
	var d Dependency
	sep := ","
	if strings.Contains(s, "?") {
		d.Any, sep = true, "?"
	}
	jobs := 0
	for item := range strings.SplitSeq(s, sep) {
		if strings.EqualFold(item, DepSingleton) {
			d.Conditions = append(d.Conditions, DepCondition{Type: DepSingleton})
			continue
		}
		typ, ids, ok := strings.Cut(item, ":")
		if !ok || (typ != "" && typ[0] >= '0' && typ[0] <= '9') {
			typ, ids = DepAfterAny, item // old syntax: bare ids
		} else {
			typ = strings.ToLower(typ)
			if !slices.Contains(depTypes, typ) || typ == DepSingleton {
				return bad(item, "has an unknown type")
			}
		}
		c := DepCondition{Type: typ}
		for id := range strings.SplitSeq(ids, ":") {
			if jobs++; jobs > MaxDependencyJobs {
				return bad(item, fmt.Sprintf("names more than %d jobs", MaxDependencyJobs))
			}
			j, ok := parseDepJob(id, typ == DepAfter)
			if !ok {
				return bad(id, "is not a job id")
			}
			c.Jobs = append(c.Jobs, j)
		}
		d.Conditions = append(d.Conditions, c)
	}
	return d, nil
}

// parseDepJob parses ID, ID_TASK or ID_*, with +MINUTES when plus is set.
func parseDepJob(s string, plus bool) (DepJob, bool) {
	j := DepJob{Task: -1}
	if plus {
		if id, mins, ok := strings.Cut(s, "+"); ok {
			m, ok := decimal(mins)
			if !ok || m > maxTimeField {
				return j, false
			}
			j.Delay = time.Duration(m) * time.Minute
			s = id
		}
	}
	id, task, hasTask := strings.Cut(s, "_")
	v, ok := decimal(id)
	if !ok || v < 1 {
		return j, false
	}
	j.ID = uint64(v)
	if hasTask {
		if task == "*" {
			j.AllTasks = true
		} else if t, ok := decimal(task); ok && t < MaxArraySize {
			j.Task = int(t)
		} else {
			return j, false
		}
	}
	return j, true
}

// String formats the dependency as a --dependency value that
// ParseDependency reads back.
func (d Dependency) String() string {
	sep := ","
	if d.Any {
		sep = "?"
	}
	parts := make([]string, 0, len(d.Conditions))
	for _, c := range d.Conditions {
		if c.Type == DepSingleton {
			parts = append(parts, DepSingleton)
			continue
		}
		var b strings.Builder
		b.WriteString(c.Type)
		for _, j := range c.Jobs {
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(j.ID, 10))
			switch {
			case j.AllTasks:
				b.WriteString("_*")
			case j.Task >= 0:
				fmt.Fprintf(&b, "_%d", j.Task)
			}
			if j.Delay > 0 {
				fmt.Fprintf(&b, "+%d", j.Delay/time.Minute)
			}
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, sep)
}

// Signal is a parsed --signal value.
type Signal struct {
	// Name is the signal's name without "SIG" ("USR1"), or "" for a
	// number with no Linux name.
	Name   string
	Number int
	// Seconds is how long before the time limit the signal is sent.
	Seconds int
	// BatchOnly ("B:") signals only the batch shell, not the steps.
	BatchOnly bool
}

// signalNames are the Linux signal numbers by name (x86 and arm64).
var signalNames = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7,
	"FPE": 8, "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13,
	"ALRM": 14, "TERM": 15, "STKFLT": 16, "CHLD": 17, "CONT": 18, "STOP": 19,
	"TSTP": 20, "TTIN": 21, "TTOU": 22, "URG": 23, "XCPU": 24, "XFSZ": 25,
	"VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29, "PWR": 30, "SYS": 31,
}

// maxSignal is SIGRTMAX on Linux.
const maxSignal = 64

// DefaultSignalSeconds is the warning time Slurm uses when --signal gives
// no @SECONDS.
const DefaultSignalSeconds = 60

// ParseSignal parses a Slurm --signal value, [B:]SIG[@SECONDS]: SIG is a
// name with or without the SIG prefix, in any case, or a number;
// SECONDS defaults to 60. "R:" (and "RB:"/"BR:"), which only lets a job
// overlap a reservation, is accepted and has no effect (Shoal has no
// reservations). Unlike Slurm, which accepts numbers up to 65535, a
// number must be a Linux signal (1-64).
func ParseSignal(s string) (Signal, error) {
	bad := func() (Signal, error) {
		return Signal{}, fmt.Errorf("--signal %q: %s", clip(s), signalForms)
	}
	sig := Signal{Seconds: DefaultSignalSeconds}
	rest := s
	if p, r, ok := strings.Cut(rest, ":"); ok {
		switch strings.ToUpper(p) {
		case "B", "RB", "BR":
			sig.BatchOnly = strings.ContainsAny(p, "Bb")
		case "R":
		default:
			return bad()
		}
		rest = r
	}
	name, secs, hasSecs := strings.Cut(rest, "@")
	if hasSecs {
		v, ok := decimal(secs)
		if !ok || v > 0xffff {
			return bad()
		}
		sig.Seconds = int(v)
	}
	if v, ok := decimal(name); ok {
		if v < 1 || v > maxSignal {
			return bad()
		}
		sig.Number = int(v)
		for n, num := range signalNames {
			if num == sig.Number {
				sig.Name = n
			}
		}
		return sig, nil
	}
	up := strings.ToUpper(name)
	up = strings.TrimPrefix(up, "SIG")
	num, ok := signalNames[up]
	if !ok {
		return bad()
	}
	sig.Name, sig.Number = up, num
	return sig, nil
}

// String formats the signal as a --signal value ParseSignal reads back.
func (s Signal) String() string {
	var b strings.Builder
	if s.BatchOnly {
		b.WriteString("B:")
	}
	if s.Name != "" {
		b.WriteString(s.Name)
	} else {
		b.WriteString(strconv.Itoa(s.Number))
	}
	fmt.Fprintf(&b, "@%d", s.Seconds)
	return b.String()
}

// maxMiB bounds a memory size: 2^53 MiB is far above any machine and
// keeps conversions to bytes exact in a float64.
const maxMiB = 1 << 53

// ParseMemory parses a Slurm memory size (--mem, --mem-per-cpu,
// --mem-per-gpu) into MiB: a whole number, MiB by default, or with a K,
// M, G or T suffix in either case (K rounds up to whole MiB, as Slurm's
// str_to_mbytes does). Slurm ignores anything after the suffix, so people
// write "32GB"; a single B after the suffix is accepted here and anything
// else is an error.
func ParseMemory(s string) (uint64, error) {
	bad := func() (uint64, error) {
		return 0, fmt.Errorf("memory size %q: %s", clip(s), memoryForms)
	}
	i := digitsEnd(s, 0)
	v, ok := decimal(s[:i])
	if !ok {
		return bad()
	}
	n := uint64(v)
	suffix := strings.ToUpper(s[i:])
	if len(suffix) == 2 && suffix[1] == 'B' {
		suffix = suffix[:1]
	}
	switch suffix {
	case "", "M":
	case "K":
		n = (n + 1023) / 1024
	case "G":
		n <<= 10
		if v > maxMiB>>10 {
			return bad()
		}
	case "T":
		n <<= 20
		if v > maxMiB>>20 {
			return bad()
		}
	default:
		return bad()
	}
	if n > maxMiB {
		return bad()
	}
	return n, nil
}

// Gres is one item of a --gres list: NAME[:TYPE][:COUNT].
type Gres struct {
	Name  string
	Type  string
	Count uint64
}

// MaxGresItems bounds the items of one --gres list.
const MaxGresItems = 64

// ParseGres parses a Slurm --gres list: comma-separated NAME[[:TYPE]:COUNT]
// items ("gpu", "gpu:2", "gpu:a100:2"). COUNT defaults to 1 and may carry
// a k, m, g, t or p suffix (powers of 1024), as in Slurm. When the last
// field is not a number it is the type ("gpu:a100" is one a100).
func ParseGres(s string) ([]Gres, error) {
	var out []Gres
	for item := range strings.SplitSeq(s, ",") {
		if len(out) == MaxGresItems {
			return nil, fmt.Errorf("--gres %q: more than %d items; %s", clip(s), MaxGresItems, gresForms)
		}
		fields := strings.Split(item, ":")
		g := Gres{Name: fields[0], Count: 1}
		if !ValidName(g.Name) || len(fields) > 3 {
			return nil, fmt.Errorf("--gres %q: bad item %q; %s", clip(s), clip(item), gresForms)
		}
		switch len(fields) {
		case 2:
			if c, ok := gresCount(fields[1]); ok {
				g.Count = c
			} else if ValidName(fields[1]) && (fields[1][0] < '0' || fields[1][0] > '9') {
				g.Type = fields[1]
			} else {
				return nil, fmt.Errorf("--gres %q: bad item %q; %s", clip(s), clip(item), gresForms)
			}
		case 3:
			c, ok := gresCount(fields[2])
			if !ValidName(fields[1]) || !ok {
				return nil, fmt.Errorf("--gres %q: bad item %q; %s", clip(s), clip(item), gresForms)
			}
			g.Type, g.Count = fields[1], c
		}
		out = append(out, g)
	}
	return out, nil
}

// gresCount parses a GRES count with an optional k/m/g/t/p suffix.
func gresCount(s string) (uint64, bool) {
	s, mult := cutCountSuffix(s, "kmgtp")
	v, ok := decimal(s)
	if !ok || v > math.MaxInt32/mult {
		return 0, false
	}
	return uint64(v * mult), true
}

// ValidName reports whether s is a GRES name or type, or a node feature:
// 1 to 64 letters, digits and "_-.", starting with a letter or digit.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '_' && c != '-' && c != '.')) {
			return false
		}
	}
	return true
}

// parseGPUCount parses the [TYPE:]N value of --gpus, --gpus-per-node and
// --gpus-per-task. Slurm allows a comma-separated list of types; Shoal
// takes one kind of GPU per job.
func parseGPUCount(opt, s string) (typ string, n int, err error) {
	t, c, ok := strings.Cut(s, ":")
	if !ok {
		t, c = "", s
	}
	v, vok := decimal(c)
	if (ok && !ValidName(t)) || !vok || v > math.MaxInt32 {
		return "", 0, fmt.Errorf("--%s %q: %s", opt, clip(s), gpuForms)
	}
	return t, int(v), nil
}

// Export is a parsed --export value.
type Export struct {
	// All passes the caller's whole environment (ALL, the default).
	All bool
	// Vars are the listed variables, in order: a NAME takes the caller's
	// value, NAME=VALUE sets one. With All false and no Vars (NONE), only
	// SLURM_* variables pass.
	Vars []ExportVar
}

// ExportVar is one NAME or NAME=VALUE of an --export list.
type ExportVar struct {
	Name     string
	Value    string
	HasValue bool
}

// MaxExportVars bounds the variables one --export list may name.
const MaxExportVars = 4096

// ParseExport parses a Slurm --export value: ALL, NONE, or a
// comma-separated list of NAME or NAME=VALUE items, optionally with ALL
// (then the whole environment passes too) or NONE among them. Items are
// split at every comma, so a VALUE cannot contain one.
func ParseExport(s string) (Export, error) {
	var e Export
	for item := range strings.SplitSeq(s, ",") {
		switch strings.ToUpper(item) {
		case "ALL":
			e.All = true
			continue
		case "NONE":
			continue
		}
		name, value, hasValue := strings.Cut(item, "=")
		if !validEnvName(name) {
			return Export{}, fmt.Errorf("--export %q: bad item %q; %s", clip(s), clip(item), exportForms)
		}
		if len(e.Vars) == MaxExportVars {
			return Export{}, fmt.Errorf("--export %q: more than %d variables; %s", clip(s), MaxExportVars, exportForms)
		}
		e.Vars = append(e.Vars, ExportVar{Name: name, Value: value, HasValue: hasValue})
	}
	return e, nil
}

// String formats the export as an --export value ParseExport reads back.
func (e Export) String() string {
	var parts []string
	if e.All {
		parts = append(parts, "ALL")
	} else if len(e.Vars) == 0 {
		return "NONE"
	}
	for _, v := range e.Vars {
		if v.HasValue {
			parts = append(parts, v.Name+"="+v.Value)
		} else {
			parts = append(parts, v.Name)
		}
	}
	return strings.Join(parts, ",")
}

// validEnvName reports whether s is a shell variable name.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Nodes is a --nodes request: at least Min and at most Max nodes.
type Nodes struct {
	Min, Max int
}

// ParseNodes parses a Slurm --nodes value, N or N-M, each number with an
// optional k (×1024) or m (×1048576) suffix. Slurm accepts 0 nodes;
// Shoal's gangs need at least one.
func ParseNodes(s string) (lo, hi int, err error) {
	loText, hiText, isRange := strings.Cut(s, "-")
	lo, ok := nodeCount(loText)
	if !ok {
		return 0, 0, fmt.Errorf("--nodes %q: %s", clip(s), nodesForms)
	}
	hi = lo
	if isRange {
		if hi, ok = nodeCount(hiText); !ok {
			return 0, 0, fmt.Errorf("--nodes %q: %s", clip(s), nodesForms)
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("--nodes %q: the maximum %d is below the minimum %d; %s", clip(s), hi, lo, nodesForms)
		}
	}
	return lo, hi, nil
}

func nodeCount(s string) (int, bool) {
	s, mult := cutCountSuffix(s, "km")
	v, ok := decimal(s)
	if !ok || v < 1 || v > math.MaxInt32/mult {
		return 0, false
	}
	return int(v * mult), true
}

// Switches is a parsed --switches value.
type Switches struct {
	// Count is the most leaf switches the job wants.
	Count int
	// MaxWait is how long to wait for them; 0 means the cluster's
	// default (Slurm's max_switch_wait).
	MaxWait time.Duration
}

// ParseSwitches parses a Slurm --switches value, COUNT[@MAX-TIME], the
// time in --time syntax.
func ParseSwitches(s string) (Switches, error) {
	c, t, hasTime := strings.Cut(s, "@")
	n, ok := decimal(c)
	if !ok || n < 1 || n > math.MaxInt32 {
		return Switches{}, fmt.Errorf("--switches %q: %s", clip(s), switchesForms)
	}
	sw := Switches{Count: int(n)}
	if hasTime {
		d, err := ParseTime(t)
		if err != nil {
			return Switches{}, fmt.Errorf("--switches %q: bad time; %s", clip(s), switchesForms)
		}
		sw.MaxWait = d
	}
	return sw, nil
}

// String formats the switches as a --switches value.
func (s Switches) String() string {
	if s.MaxWait == 0 {
		return strconv.Itoa(s.Count)
	}
	return strconv.Itoa(s.Count) + "@" + FormatTime(s.MaxWait)
}

// checkConstraint checks the syntax of a --constraint (or --batch)
// expression: feature names, each with an optional *COUNT, joined by &
// (and) or | (or), grouped with parentheses, with at most one [ ] set,
// not nested, as Slurm's build_feature_list allows.
func checkConstraint(s string) error {
	p := constraintParser{s: s}
	if err := p.expr(0); err != nil {
		return fmt.Errorf("--constraint %q: %v; %s", clip(s), err, constraintForms)
	}
	if p.i < len(s) {
		return fmt.Errorf("--constraint %q: unexpected %q at byte %d; %s", clip(s), s[p.i], p.i, constraintForms)
	}
	return nil
}

type constraintParser struct {
	s        string
	i        int
	brackets int // [ ] sets seen
	inBrack  bool
}

// maxConstraintDepth bounds parenthesis nesting.
const maxConstraintDepth = 16

func (p *constraintParser) expr(depth int) error {
	if depth > maxConstraintDepth {
		return fmt.Errorf("nested deeper than %d", maxConstraintDepth)
	}
	for {
		if err := p.term(depth); err != nil {
			return err
		}
		if p.i < len(p.s) && (p.s[p.i] == '&' || p.s[p.i] == '|') {
			p.i++
			continue
		}
		return nil
	}
}

// group reads a bracketed expression: the opening bracket at p.i, the
// expression, and the closing one.
func (p *constraintParser) group(depth int, closing byte) error {
	open := p.s[p.i]
	p.i++
	if err := p.expr(depth + 1); err != nil {
		return err
	}
	if p.i >= len(p.s) || p.s[p.i] != closing {
		return fmt.Errorf("'%c' is not closed", open)
	}
	p.i++
	return nil
}

func (p *constraintParser) term(depth int) error {
	if p.i >= len(p.s) {
		return fmt.Errorf("a feature is missing at the end")
	}
	switch p.s[p.i] {
	case '[':
		if p.inBrack || p.brackets > 0 {
			return fmt.Errorf("only one [ ] set is allowed, not nested")
		}
		p.brackets++
		p.inBrack = true
		if err := p.group(depth, ']'); err != nil {
			return err
		}
		p.inBrack = false
		return nil
	case '(':
		if err := p.group(depth, ')'); err != nil {
			return err
		}
		return p.count()
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune("&|[]()*", rune(p.s[p.i])) {
		p.i++
	}
	if !ValidName(p.s[start:p.i]) {
		if start == p.i {
			return fmt.Errorf("a feature is missing at byte %d", start)
		}
		return fmt.Errorf("bad feature %q", clip(p.s[start:p.i]))
	}
	return p.count()
}

func (p *constraintParser) count() error {
	if p.i >= len(p.s) || p.s[p.i] != '*' {
		return nil
	}
	p.i++
	start := p.i
	p.i = digitsEnd(p.s, p.i)
	if v, ok := decimal(p.s[start:p.i]); !ok || v < 1 {
		return fmt.Errorf("'*' must be followed by a positive count")
	}
	return nil
}

// cutCountSuffix cuts a count's binary suffix off s (k for 2^10, m, g, t,
// p for 2^50, in either case) when its letter is in allowed, and returns
// what is left with the multiplier (1 without a suffix).
func cutCountSuffix(s, allowed string) (string, int64) {
	if s == "" {
		return s, 1
	}
	c := s[len(s)-1] | 0x20 // lower case
	if i := strings.IndexByte("kmgtp", c); i >= 0 && strings.IndexByte(allowed, c) >= 0 {
		return s[:len(s)-1], 1 << (10 * (i + 1))
	}
	return s, 1
}
