//lint:file-ignore ST1005 sreport's refusals ("Unknown condition: ...") are Slurm's words, capitals included
package slurmcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// sreport answers two of Slurm's reports, `cluster Utilization` and
// `user TopUsage`, from the jobs the API knows (live and archived) and
// the nodes it knows now. The layout is Slurm 22.05's: src/sreport/
// sreport.c (options, -t's names), common.c (slurmdb_report_print_time,
// sreport_set_usage_col_width, sanity_check_endtime, sort_user_dec),
// cluster_reports.c (_get_cluster_list's header, _setup_print_fields_list,
// cluster_utilization, _cluster_util_tres_report), user_reports.c
// (user_top) and src/common/slurmdb_defs.c's
// slurmdb_report_set_start_end_time. The peer has no slurmdbd, so no
// golden exists; the tests hold the layout derived from that source.
//
// What differs, because Shoal keeps no history of its nodes and has no
// reservations: Reported is the TRES of the nodes known NOW times the
// window; Down is 0 (Shoal does not record when a node went down, so a
// node down now is counted as reported and idle rather than guessed
// down); PLND Down and Planned are 0; Over Comm is what jobs held beyond
// the nodes known now (nodes that left). Energy is always 0.

// sreportTime is -t: how usage is printed.
type sreportTime int

const (
	sreportMins sreportTime = iota
	sreportSecs
	sreportHours
	sreportPercent
	sreportSecsPer
	sreportMinsPer
	sreportHoursPer
)

// perCent says the format prints "VALUE(PCT%)" (wider columns).
func (t sreportTime) perCent() bool {
	return t == sreportSecsPer || t == sreportMinsPer || t == sreportHoursPer
}

// sreportTimeNames are -t's formats as _set_time_format matches them
// (a prefix of at least min letters), with the header's words. The
// "UNIT/Percent" spellings are Shoal's aliases of SecPer, MinPer and
// HourPer.
var sreportTimeNames = []struct {
	name   string
	min    int
	format sreportTime
	words  string
}{
	{"SecPer", 6, sreportSecsPer, "Seconds/Percentage of Total"},
	{"MinPer", 6, sreportMinsPer, "Minutes/Percentage of Total"},
	{"HourPer", 6, sreportHoursPer, "Hours/Percentage of Total"},
	{"Seconds/Percent", 9, sreportSecsPer, "Seconds/Percentage of Total"},
	{"Minutes/Percent", 9, sreportMinsPer, "Minutes/Percentage of Total"},
	{"Hours/Percent", 7, sreportHoursPer, "Hours/Percentage of Total"},
	{"Seconds", 1, sreportSecs, "Seconds"},
	{"Minutes", 1, sreportMins, "Minutes"},
	{"Hours", 1, sreportHours, "Hours"},
	{"Percent", 1, sreportPercent, "Percentage of Total"},
}

// parseSreportTime resolves -t.
func parseSreportTime(s string) (sreportTime, string, error) {
	for _, n := range sreportTimeNames {
		if abbreviates(s, n.name, n.min) {
			return n.format, n.words, nil
		}
	}
	return 0, "", fmt.Errorf("-t: unknown time format %q: want Seconds, Minutes, Hours, Percent, SecPer, MinPer or HourPer (or Seconds/Percent, Minutes/Percent, Hours/Percent)", clipArg(s))
}

func clipArg(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// sreportTRESNames are the TRES Shoal counts, in Slurm's order (ALL).
var sreportTRESNames = []string{"cpu", "mem", "gres/gpu"}

// parseSreportTRES resolves -T's comma list (case-insensitive; ALL is
// every one).
func parseSreportTRES(s string) ([]string, error) {
	var out []string
	for _, t := range splitList(s) {
		if strings.EqualFold(t, "ALL") {
			return slices.Clone(sreportTRESNames), nil
		}
		i := slices.IndexFunc(sreportTRESNames, func(n string) bool { return strings.EqualFold(n, t) })
		if i < 0 {
			return nil, fmt.Errorf("-T: unknown TRES %q: Shoal counts cpu, mem and gres/gpu (or ALL)", clipArg(t))
		}
		if !slices.Contains(out, sreportTRESNames[i]) {
			out = append(out, sreportTRESNames[i])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-T: No valid TRES given")
	}
	return out, nil
}

// sreportWindow is slurmdb_report_set_start_end_time: a start or end not
// given is yesterday's or today's midnight; a given one is rounded to the
// nearest hour (30 seconds round a minute up, 30 minutes an hour); the
// window is at least an hour. Unlike Slurm, a given end is not held to
// now first (sanity_check_endtime): Slurm's usage is rolled up hourly,
// so the hour in progress has none yet, while Shoal's is computed from
// the jobs, and an end in the next hour takes in the one in progress
// (sreportUsage counts its time up to now only).
func sreportWindow(start, end time.Time, now time.Time) (time.Time, time.Time) {
	loc := now.Location()
	round := func(t time.Time) time.Time {
		t = t.In(loc)
		h, m, s := t.Clock()
		if s >= 30 {
			m++
		}
		if m >= 30 {
			h++
		}
		y, mo, d := t.Date()
		return time.Date(y, mo, d, h, 0, 0, 0, loc)
	}
	y, mo, d := now.Date()
	if end.IsZero() {
		end = time.Date(y, mo, d, 0, 0, 0, 0, loc)
	} else {
		end = round(end)
	}
	if start.IsZero() {
		start = time.Date(y, mo, d-1, 0, 0, 0, 0, loc)
	} else {
		start = round(start)
	}
	if end.Sub(start) < time.Hour {
		end = start.Add(time.Hour)
	}
	return start, end
}

// tresUse is a cluster's accounting of one TRES over the window, in
// TRES-seconds, as a cluster accounting record holds it.
type tresUse struct {
	count                                int64
	alloc, down, pdown, idle, plan, over int64
	capacity                             int64 // count × the window up to now
}

// tresUsage are cluster utilization's usage columns, each a share of
// what the cluster reported, by key.
var tresUsage = map[string]func(tresUse) int64{
	"alloc": func(u tresUse) int64 { return u.alloc },
	"down":  func(u tresUse) int64 { return u.down },
	"idle":  func(u tresUse) int64 { return u.idle },
	"plan":  func(u tresUse) int64 { return u.plan },
	"over":  func(u tresUse) int64 { return u.over },
	"pdown": func(u tresUse) int64 { return u.pdown },
}

// reported is what the cluster reported: allocated, down and idle time
// (cluster_utilization's tres_rec.alloc_secs).
func (u tresUse) reported() int64 { return u.alloc + u.down + u.pdown + u.idle + u.plan }

// sreportUser is one association's usage (user top's record): a user in
// an account, TRES-seconds by TRES name.
type sreportUser struct {
	user, account string
	used          map[string]int64
}

// sreportUsage is the usage within [start, end): each TRES's cluster
// accounting and each association's usage. A job counts from its start
// to its end (now while it runs); its TRES are what its allocation holds
// (CPUs, memory, GPUs on every node). The cluster's capacity counts the
// window's time up to now: what is still to come is neither allocated
// nor idle yet.
func sreportUsage(jobs []api.Job, nodes []api.Node, start, end, now time.Time) (map[string]tresUse, []sreportUser) {
	window := max(0, int64(minTime(end, now).Sub(start)/time.Second))
	use := map[string]tresUse{}
	for _, n := range nodes {
		for name, c := range map[string]int64{"cpu": int64(n.CPUs), "mem": int64(n.MemoryMiB), "gres/gpu": int64(n.GPUs)} {
			u := use[name]
			u.count += c
			use[name] = u
		}
	}
	byAssoc := map[[2]string]*sreportUser{}
	var users []sreportUser
	var order [][2]string
	for _, j := range jobs {
		secs := jobSeconds(j, start, end, now)
		if secs <= 0 {
			continue
		}
		key := [2]string{j.User, j.Account}
		a := byAssoc[key]
		if a == nil {
			a = &sreportUser{user: j.User, account: j.Account, used: map[string]int64{}}
			byAssoc[key] = a
			order = append(order, key)
		}
		for name, c := range jobTRES(j) {
			a.used[name] += c * secs
			u := use[name]
			u.alloc += c * secs
			use[name] = u
		}
	}
	for _, k := range order {
		users = append(users, *byAssoc[k])
	}
	for _, name := range sreportTRESNames {
		u := use[name]
		u.capacity = u.count * window
		if u.alloc > u.capacity {
			u.over = u.alloc - u.capacity
			u.alloc = u.capacity
		}
		u.idle = u.capacity - u.alloc - u.down
		use[name] = u
	}
	return use, users
}

// jobSeconds is how long the job held its allocation within [start,
// end): 0 for one that never started.
func jobSeconds(j api.Job, start, end, now time.Time) int64 {
	s, e, ok := runSpan(j, now)
	if !ok {
		return 0
	}
	s, e = maxTime(s, start), minTime(e, end)
	if !e.After(s) {
		return 0
	}
	return int64(e.Sub(s) / time.Second)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// jobTRES is what the job's allocation holds in all: its CPUs, memory
// (MiB) and GPUs, from its tasks where they say, else from its request.
func jobTRES(j api.Job) map[string]int64 {
	cpus := int64(allocCPUs(j.Tasks))
	if cpus == 0 {
		cpus = int64(jobCPUs(j))
	}
	var gpus, mem int64
	for _, t := range j.Tasks {
		gpus += int64(len(t.GPUs))
		mem += int64(t.MemMiB)
	}
	nodes := int64(max(len(j.Tasks), jobNodeCount(j)))
	if gpus == 0 {
		gpus = int64(j.GPUsPerNode) * nodes
	}
	if mem == 0 {
		mem = int64(j.MemPerNodeMiB) * nodes
	}
	return map[string]int64{"cpu": cpus, "mem": mem, "gres/gpu": gpus}
}

// sreportValue is slurmdb_report_print_time's text of value TRES-seconds
// (total: what a percentage is of; 0 counts as 1). C's "%.0lf" and Go's
// 'f' both round half to even.
func sreportValue(value, total int64, t sreportTime) string {
	if total == 0 {
		total = 1
	}
	pct := float64(value) / float64(total) * 100
	f0 := func(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }
	switch t {
	case sreportSecs:
		return strconv.FormatInt(value, 10)
	case sreportHours:
		return f0(float64(value) / 3600)
	case sreportPercent:
		return fmt.Sprintf("%.2f%%", pct)
	case sreportSecsPer:
		return fmt.Sprintf("%d(%.2f%%)", value, pct)
	case sreportMinsPer:
		return fmt.Sprintf("%s(%.2f%%)", f0(float64(value)/60), pct)
	case sreportHoursPer:
		return fmt.Sprintf("%s(%.2f%%)", f0(float64(value)/3600), pct)
	}
	return f0(float64(value) / 60)
}

// sreportUsageWidth is sreport_set_usage_col_width: 8 for numbers under
// 10^8, one more per digit beyond, 9 more with a percentage.
func sreportUsageWidth(n int64, t sreportTime) int {
	w := 8
	for order := int64(100000000); order < 1e17 && n >= order; order *= 10 {
		w++
	}
	if t.perCent() {
		w += 9
	}
	return w
}

// sreportOpts are sreport's options (sreport.c's "aM:hnpPQs:t:T:vV").
var sreportOpts = []slurm.Option{
	optNoheader,
	optParsable,
	optParsable2,
	optQuiet,
	{Long: "time-format", Short: 't', Arg: slurm.NeedArg},
	{Long: "tres", Short: 'T', Arg: slurm.NeedArg},
	optVerbose,
	{Long: "all_clusters", Short: 'a', Arg: slurm.NoArg},
	{Long: "local", Arg: slurm.NoArg},
	{Long: "cluster", Short: 'M', Arg: slurm.NeedArg, Unsupported: noFederation},
	{Long: "federation", Arg: slurm.NoArg, Unsupported: noFederation},
	{Long: "sort", Short: 's', Arg: slurm.NeedArg, Unsupported: "reports are sorted by usage"},
	{Long: "immediate", Short: 'i', Arg: slurm.NoArg},
	{Long: "help", Short: 'h', Arg: slurm.NoArg, Unsupported: seeHelp},
	optUsage,
}

// sreportReport is one report's request: which, its window, its format
// and, for user top, its conditions.
type sreportReport struct {
	kind       string // "cluster" or "user"
	start, end time.Time
	format     []string
	topCount   int
	users      []string
	accounts   []string
}

// sreportArgs are the report and the options that shape it.
type sreportArgs struct {
	report    sreportReport
	time      sreportTime
	timeWords string
	tres      []string
	tresGiven bool // -T (or SREPORT_TRES): TRES columns, "TRES" usage
	layout    sacctLayout
}

// sreportEq splits "key=value" (the key case-folded); ok false for a word.
func sreportEq(a string) (string, string, bool) {
	k, v, ok := strings.Cut(a, "=")
	return strings.ToLower(k), v, ok
}

// sreportLead is xstrncasecmp(word, name, n) == 0, as sreport.c picks a
// report: word's first n letters are name's.
func sreportLead(word, name string, n int) bool {
	return len(word) >= n && strings.EqualFold(word[:n], name[:n])
}

// parseSreportCommand reads the report words and their conditions.
func parseSreportCommand(words []string, now time.Time) (sreportReport, error) {
	r := sreportReport{topCount: 10}
	if len(words) < 2 {
		return r, fmt.Errorf("want a report: `cluster Utilization` or `user TopUsage`")
	}
	switch {
	case abbreviates(words[0], "cluster", 2) && sreportLead(words[1], "Utilization", 2):
		r.kind = "cluster"
	case abbreviates(words[0], "user", 1) && sreportLead(words[1], "Top", 1):
		r.kind = "user"
	default:
		return r, fmt.Errorf("report %q: Shoal has `cluster Utilization` and `user TopUsage`", clipArg(words[0]+" "+words[1]))
	}
	for _, a := range words[2:] {
		k, v, eq := sreportEq(a)
		var err error
		switch {
		case !eq && r.kind == "cluster":
			// A bare word names clusters: this one is the only one.
		case !eq && (abbreviates(k, "all_clusters", 1) || abbreviates(k, "group", 1)):
		case !eq:
			r.users = append(r.users, splitList(a)...)
		case r.kind == "user" && abbreviates(k, "users", 1):
			r.users = append(r.users, splitList(v)...)
		case r.kind == "user" && (abbreviates(k, "accounts", 2) || abbreviates(k, "acct", 4)):
			r.accounts = append(r.accounts, splitList(v)...)
		case abbreviates(k, "clusters", 1):
		case abbreviates(k, "end", 1):
			if r.end, err = slurm.ParseDate(v, now); err != nil {
				return r, fmt.Errorf("end=: %w", err)
			}
		case abbreviates(k, "start", 1):
			if r.start, err = slurm.ParseDate(v, now); err != nil {
				return r, fmt.Errorf("start=: %w", err)
			}
		case abbreviates(k, "format", 1):
			r.format = append(r.format, splitList(v)...)
		case r.kind == "user" && abbreviates(k, "topcount", 1):
			n, err := strconv.ParseUint(v, 10, 31)
			if err != nil {
				return r, fmt.Errorf("TopCount=: %q is not a count", clipArg(v))
			}
			r.topCount = int(n)
		default:
			return r, fmt.Errorf("Unknown condition: %s", clipArg(a))
		}
	}
	r.start, r.end = sreportWindow(r.start, r.end, now)
	return r, nil
}

// sreportField is one format= field of a report (_setup_print_fields_list):
// a word matched as a prefix of at least min letters of one of its names,
// its header and width (perWidth with a percentage). A usage field's
// width is then set from the largest value (sreport_set_usage_col_width),
// whatever format= said.
type sreportField struct {
	key      string
	names    []string
	min      []int
	header   string
	width    int
	perWidth int
	usage    bool
}

// sreportClusterFields are cluster Utilization's (cluster_reports.c).
var sreportClusterFields = []sreportField{
	{key: "alloc", names: []string{"allocated"}, min: []int{2}, header: "Allocated", width: 12, perWidth: 20, usage: true},
	{key: "cluster", names: []string{"Cluster"}, min: []int{2}, header: "Cluster", width: 9, perWidth: 9},
	{key: "down", names: []string{"down"}, min: []int{1}, header: "Down", width: 10, perWidth: 18, usage: true},
	{key: "idle", names: []string{"idle"}, min: []int{1}, header: "Idle", width: 12, perWidth: 20, usage: true},
	{key: "over", names: []string{"overcommitted"}, min: []int{1}, header: "Over Comm", width: 9, perWidth: 18, usage: true},
	{key: "pdown", names: []string{"PlannedDown"}, min: []int{2}, header: "PLND Down", width: 10, perWidth: 18, usage: true},
	{key: "reported", names: []string{"reported"}, min: []int{3}, header: "Reported", width: 12, perWidth: 20, usage: true},
	{key: "plan", names: []string{"reserved", "planned"}, min: []int{3, 4}, header: "Planned", width: 9, perWidth: 18, usage: true},
	{key: "count", names: []string{"TresCount", "cpucount", "count"}, min: []int{5, 2, 2}, header: "TRES Count", width: 10, perWidth: 10},
	{key: "tresname", names: []string{"TresName"}, min: []int{5}, header: "TRES Name", width: 14, perWidth: 14},
	{key: "energy", names: []string{"Energy"}, min: []int{1}, header: "Energy", width: 10, perWidth: 18, usage: true},
}

// sreportUserFields are user TopUsage's (user_reports.c).
var sreportUserFields = []sreportField{
	{key: "account", names: []string{"Accounts"}, min: []int{1}, header: "Account", width: 15, perWidth: 15},
	{key: "cluster", names: []string{"Cluster"}, min: []int{1}, header: "Cluster", width: 9, perWidth: 9},
	{key: "energy", names: []string{"Energy"}, min: []int{1}, header: "Energy", width: 10, perWidth: 18, usage: true},
	{key: "login", names: []string{"Login"}, min: []int{1}, header: "Login", width: 9, perWidth: 9},
	{key: "proper", names: []string{"Proper"}, min: []int{1}, header: "Proper Name", width: 15, perWidth: 15},
	{key: "tresname", names: []string{"TresName"}, min: []int{5}, header: "TRES Name", width: 14, perWidth: 14},
	{key: "used", names: []string{"Used"}, min: []int{1}, header: "Used", width: 10, perWidth: 18, usage: true},
}

// The reports' default formats (cluster_utilization, user_top): with -T,
// a TRES Name column.
const (
	sreportClusterFormat     = "Cl,al,d,planned,i,res,rep"
	sreportClusterTRESFormat = "Cl,TresName,al,d,planned,i,res,rep"
	sreportUserFormat        = "Cl,L,P,A,U,Energy"
	sreportUserTRESFormat    = "Cl,L,P,A,TresName,Used"
)

// sreportCol is a resolved field with its width.
type sreportCol = fieldCol[sreportField]

// parseSreportFormat resolves format='s words (Field[%width]); sreport
// keeps the field's own width where the given one is bad.
func parseSreportFormat(fields []sreportField, words []string, t sreportTime) ([]sreportCol, error) {
	return parseFieldList(words, true, "format=", func(name string) (*sreportField, int, error) {
		for i := range fields {
			for k, n := range fields[i].names {
				if abbreviates(name, n, fields[i].min[k]) {
					if t.perCent() {
						return &fields[i], fields[i].perWidth, nil
					}
					return &fields[i], fields[i].width, nil
				}
			}
		}
		return nil, 0, fmt.Errorf("format=: Unknown field '%s'", clipArg(name))
	})
}

// sreportHeader is the block above a report (unless -n): dashes, the
// report's name and window (its last second), the units, dashes.
// after follows the window on its line.
func sreportHeader(title, after string, a sreportArgs) string {
	dashes := strings.Repeat("-", 80)
	units := a.timeWords
	if a.time != sreportPercent {
		usage := "CPU"
		if a.tresGiven {
			usage = "TRES"
		}
		units = usage + " " + units
	}
	const iso = "2006-01-02T15:04:05"
	return fmt.Sprintf("%s\n%s %s - %s%s\nUsage reported in %s\n%s\n", dashes, title,
		a.report.start.Format(iso), a.report.end.Add(-time.Second).Format(iso), after, units, dashes)
}

// sreportInput is what a report is made of.
type sreportInput struct {
	cluster string
	jobs    []api.Job
	nodes   []api.Node
	now     time.Time
	// proper is a login's full name (its GECOS field up to a comma).
	proper func(login string) string
}

// renderSreport prints the report a asks for: the header block, the
// column headers and the rows.
func renderSreport(w io.Writer, a sreportArgs, in sreportInput) error {
	use, users := sreportUsage(in.jobs, in.nodes, a.report.start, a.report.end, in.now)
	if a.report.kind == "cluster" {
		return renderClusterUtilization(w, a, in, use)
	}
	return renderUserTop(w, a, in, use, users)
}

// columns resolves the report's format= against its fields; without
// one, its default format def (tresDef with -T).
func (a sreportArgs) columns(fields []sreportField, def, tresDef string) ([]sreportCol, error) {
	format := a.report.format
	if len(format) == 0 {
		if a.tresGiven {
			def = tresDef
		}
		format = splitList(def)
	}
	return parseSreportFormat(fields, format, a.time)
}

func renderClusterUtilization(w io.Writer, a sreportArgs, in sreportInput, use map[string]tresUse) error {
	cols, err := a.columns(sreportClusterFields, sreportClusterFormat, sreportClusterTRESFormat)
	if err != nil {
		return err
	}
	// The usage columns are as wide as the largest value of the TRES
	// shown needs.
	widest := map[string]int64{}
	for _, t := range a.tres {
		u := use[t]
		for key, of := range tresUsage {
			widest[key] = max(widest[key], of(u))
		}
		widest["reported"] = max(widest["reported"], u.reported())
	}
	widest["energy"] = widest["alloc"]
	for i := range cols {
		if cols[i].field.usage {
			cols[i].width = sreportUsageWidth(widest[cols[i].field.key], a.time)
		}
	}
	var rows [][]string
	for _, t := range a.tres {
		u := use[t]
		total := u.reported()
		row := make([]string, len(cols))
		for i, c := range cols {
			switch c.field.key {
			case "cluster":
				row[i] = in.cluster
			case "tresname":
				row[i] = t
			case "count":
				row[i] = strconv.FormatInt(u.count, 10)
			case "reported":
				row[i] = sreportValue(total, u.capacity, a.time)
			case "energy":
				row[i] = sreportValue(0, 0, a.time)
			default:
				if of, ok := tresUsage[c.field.key]; ok {
					row[i] = sreportValue(of(u), total, a.time)
				}
			}
		}
		rows = append(rows, row)
	}
	if a.layout.header {
		fmt.Fprint(w, sreportHeader("Cluster Utilization", "", a))
	}
	printSreport(w, cols, rows, a.layout)
	return nil
}

func renderUserTop(w io.Writer, a sreportArgs, in sreportInput, use map[string]tresUse, users []sreportUser) error {
	cols, err := a.columns(sreportUserFields, sreportUserFormat, sreportUserTRESFormat)
	if err != nil {
		return err
	}
	var kept []sreportUser
	for _, u := range users {
		if len(a.report.users) > 0 && !slices.Contains(a.report.users, u.user) ||
			len(a.report.accounts) > 0 && !slices.Contains(a.report.accounts, u.account) {
			continue
		}
		kept = append(kept, u)
	}
	// sort_user_dec: most of the first TRES first, then by name.
	first := a.tres[0]
	slices.SortStableFunc(kept, func(x, y sreportUser) int {
		if d := y.used[first] - x.used[first]; d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
		return strings.Compare(x.user, y.user)
	})
	// sreport_set_usage_column_width: the top user's largest usage (its
	// CPU usage where an Energy column is shown).
	var most int64
	hasEnergy := slices.ContainsFunc(cols, func(c sreportCol) bool { return c.field.key == "energy" })
	if len(kept) > 0 {
		if hasEnergy {
			most = kept[0].used["cpu"]
		} else {
			for _, t := range a.tres {
				most = max(most, kept[0].used[t])
			}
		}
	}
	for i := range cols {
		switch cols[i].field.key {
		case "used":
			cols[i].width = sreportUsageWidth(most, a.time)
		case "energy":
			cols[i].width = sreportUsageWidth(0, a.time)
		}
	}
	if len(kept) > a.report.topCount {
		kept = kept[:a.report.topCount]
	}
	var rows [][]string
	for _, u := range kept {
		for _, t := range a.tres {
			row := make([]string, len(cols))
			for i, c := range cols {
				switch c.field.key {
				case "account":
					row[i] = u.account
				case "cluster":
					row[i] = in.cluster
				case "login":
					row[i] = u.user
				case "proper":
					if in.proper != nil {
						row[i] = in.proper(u.user)
					}
				case "tresname":
					row[i] = t
				case "used":
					// Of the cluster's reported time, as
					// slurmdb_add_cluster_accounting_to_tres_list sums it.
					row[i] = sreportValue(u.used[t], use[t].reported(), a.time)
				case "energy":
					row[i] = sreportValue(0, 0, a.time)
				}
			}
			rows = append(rows, row)
		}
	}
	if a.layout.header {
		// user_top's title also gives the window's length.
		secs := fmt.Sprintf(" (%d secs)", int64(a.report.end.Sub(a.report.start)/time.Second))
		fmt.Fprint(w, sreportHeader(fmt.Sprintf("Top %d Users", a.report.topCount), secs, a))
	}
	printSreport(w, cols, rows, a.layout)
	return nil
}

// printSreport prints the columns through print_fields.c's layout. A
// usage value is cut to its width without a "+" (slurmdb_report_print_
// time's "%*.*s").
func printSreport(w io.Writer, cols []sreportCol, rows [][]string, l sacctLayout) {
	pcols := make([]printCol, len(cols))
	for i, c := range cols {
		pcols[i] = printCol{c.field.header, c.width}
		if c.field.usage && !l.parsable {
			wd := max(c.width, -c.width)
			for _, r := range rows {
				if len(r[i]) > wd {
					r[i] = r[i][:wd]
				}
			}
		}
	}
	printFields(w, pcols, rows, l)
}

// sreportOptions turns the options into the report's shape (the report
// itself is set by the caller).
func sreportOptions(vals []slurm.OptValue, envTRES string) (sreportArgs, error) {
	a := sreportArgs{time: sreportMins, timeWords: "Minutes", tres: []string{"cpu"}, layout: sacctLayout{header: true, delimiter: "|"}}
	tres := envTRES
	for _, o := range vals {
		if a.layout.option(o.Opt.Long) {
			continue
		}
		var err error
		switch o.Opt.Long {
		case "time-format":
			if a.time, a.timeWords, err = parseSreportTime(o.Value); err != nil {
				return a, err
			}
		case "tres":
			tres = o.Value
		}
	}
	if tres != "" {
		t, err := parseSreportTRES(tres)
		if err != nil {
			return a, err
		}
		a.tres, a.tresGiven = t, true
	}
	return a, nil
}

// Sreport is sreport: `cluster Utilization` and `user TopUsage`, with
// start=, end=, format=, TopCount=, Users=, Accounts=, -t, -T, -n, -P,
// -p.
func Sreport(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
	vals, rest, err := cliArgs("sreport", sreportOpts, args, stderr)
	if err != nil {
		return err
	}
	a, err := sreportOptions(vals, os.Getenv("SREPORT_TRES"))
	if err != nil {
		return err
	}
	now := time.Now()
	if a.report, err = parseSreportCommand(rest, now); err != nil {
		return err
	}
	_, got, err := readAgent(ctx, connect, readJobs|readNodes|readPolicy)
	if err != nil {
		return err
	}
	in := sreportInput{cluster: clusterName(got.policy.Policy.ClusterName), jobs: got.jobs, nodes: got.nodes, now: now, proper: properName}
	return renderSreport(stdout, a, in)
}

// clusterName is the cluster's name as jobs see it (SLURM_CLUSTER_NAME).
func clusterName(name string) string {
	if name == "" {
		return cluster.DefaultClusterName
	}
	return name
}

// properName is a login's GECOS name up to its first comma ("" unknown).
func properName(login string) string {
	u, err := user.Lookup(login)
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(u.Name, ",")
	return name
}
