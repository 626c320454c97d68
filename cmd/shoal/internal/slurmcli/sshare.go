package slurmcli

import (
	"context"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

// sshare prints the fair-share tree the leader's priority computation
// uses (GET /v1/fairshare). Its fields and widths are Slurm 22.05's
// src/sshare/process.c; the peer (no slurmdbd) prints the headers only,
// which testdata/sshare holds (golden.sh) and a test compares. Shoal's
// fair-share is Slurm's classic one, F = 2^(-U/S), not Fair Tree: every
// row has its FairShare (Fair Tree leaves the accounts' blank), and
// LevelFS, which Shoal does not use, is shown as Fair Tree defines it.
// Usage is in GPU-seconds, decayed with the policy's half_life.

// sshareField is one sshare -o field (process.c's fields[]: any prefix
// of its name, in this order, picks it).
type sshareField struct {
	name  string
	width int
	value func(r sshareRow) string
}

// sshareFloat is print_fields_double's "%f" ("inf" for an infinity).
func sshareFloat(x float64) string {
	if math.IsInf(x, 1) {
		return "inf"
	}
	return strconv.FormatFloat(x, 'f', 6, 64)
}

var sshareFields = []sshareField{
	{"Account", -20, func(r sshareRow) string { return strings.Repeat(" ", r.depth) + r.assoc.Account }},
	{"Cluster", 10, func(sshareRow) string { return "" }},
	{"EffectvUsage", 13, func(r sshareRow) string { return sshareFloat(r.assoc.EffectvUsage) }},
	{"FairShare", 10, func(r sshareRow) string {
		if r.root {
			return ""
		}
		return sshareFloat(r.assoc.FairShare)
	}},
	{"GrpTRESMins", 30, func(sshareRow) string { return "" }},
	{"GrpTRESRaw", 30, func(sshareRow) string { return "" }},
	{"ID", 6, func(sshareRow) string { return "" }},
	{"LevelFS", 10, func(r sshareRow) string {
		if r.root {
			return ""
		}
		return sshareFloat(r.levelFS)
	}},
	{"NormShares", 11, func(r sshareRow) string { return sshareFloat(r.assoc.NormShares) }},
	{"NormUsage", 11, func(r sshareRow) string { return sshareFloat(r.assoc.EffectvUsage) }},
	{"Partition", 12, func(sshareRow) string { return "" }},
	{"RawShares", 10, func(r sshareRow) string {
		if r.root {
			return ""
		}
		return strconv.FormatInt(r.assoc.RawShares, 10)
	}},
	{"RawUsage", 11, func(r sshareRow) string {
		return strconv.FormatUint(uint64(max(0, math.Floor(r.assoc.RawUsage))), 10)
	}},
	{"TRESRunMins", 30, func(sshareRow) string { return "" }},
	{"User", 10, func(r sshareRow) string { return r.assoc.User }},
}

// sshare's default formats, as Slurm 22.05 prints them under its default
// PriorityFlags (Fair Tree: -l has LevelFS), so tools find the columns
// where they look for them (testdata/sshare, from the peer).
const (
	sshareFormat     = "A,User,RawShares,NormShares,RawUsage,Eff,Fairshare"
	sshareLongFormat = "A,User,RawShares,NormShares,RawUsage,NormUsage,Eff,Fairshare,LevelFS,GrpTRESMins,TRESRunMins"
)

type sshareCol = fieldCol[sshareField]

// parseSshareFormat resolves -o's comma list (Field[%width]).
func parseSshareFormat(format string) ([]sshareCol, error) {
	return parseFieldList(splitList(format), false, "-o", func(name string) (*sshareField, int, error) {
		for i := range sshareFields {
			f := &sshareFields[i]
			if abbreviates(name, f.name, 1) {
				return f, f.width, nil
			}
		}
		return nil, 0, slurmErrorf("Invalid field requested: \"%s\"", name)
	})
}

// sshareQuery is which associations sshare shows.
type sshareQuery struct {
	users     []string // nil with all
	all       bool
	accounts  []string
	usersOnly bool // -U
}

// sshareRow is one printed association: root's (the cluster's totals)
// or one of the tree's, with its depth below root and its LevelFS: its
// share of its parent's shares over its share of its parent's usage
// (Fair Tree's level fair-share; +Inf without usage).
type sshareRow struct {
	assoc   api.ShareAssoc
	root    bool
	depth   int
	levelFS float64
}

// levelFS is share/usage, +Inf where usage is 0.
func levelFS(share, usage float64) float64 {
	if usage <= 0 {
		return math.Inf(1)
	}
	return share / usage
}

// sshareRows lays the tree out as sshare: root (all usage, all shares)
// first, then each account one level down and its users below it. The
// account rows are always there (unless -A leaves them out); the user
// rows are the asked-for users' (everyone's with -a).
func sshareRows(tree []api.ShareAssoc, q sshareQuery) []sshareRow {
	var rows []sshareRow
	if !q.usersOnly && (len(q.accounts) == 0 || slices.Contains(q.accounts, "root")) {
		total := 0.0
		for _, a := range tree {
			if a.User == "" {
				total += a.RawUsage
			}
		}
		eff := 0.0
		if total > 0 {
			eff = 1
		}
		rows = append(rows, sshareRow{assoc: api.ShareAssoc{Account: "root", NormShares: 1, RawUsage: total, EffectvUsage: eff}, root: true})
	}
	accounts := map[string]api.ShareAssoc{}
	for _, a := range tree {
		if a.User == "" {
			accounts[a.Account] = a
		}
	}
	for _, a := range tree {
		if len(q.accounts) > 0 && !slices.Contains(q.accounts, a.Account) {
			continue
		}
		if a.User == "" {
			if !q.usersOnly {
				rows = append(rows, sshareRow{assoc: a, depth: 1, levelFS: levelFS(a.NormShares, a.EffectvUsage)})
			}
			continue
		}
		if !q.all && !slices.Contains(q.users, a.User) {
			continue
		}
		r := sshareRow{assoc: a, depth: 2, levelFS: math.Inf(1)}
		if p := accounts[a.Account]; p.NormShares > 0 && p.RawUsage > 0 {
			r.levelFS = levelFS(a.NormShares/p.NormShares, a.RawUsage/p.RawUsage)
		}
		rows = append(rows, r)
	}
	return rows
}

func printSshare(w io.Writer, cols []sshareCol, rows []sshareRow, l sacctLayout) {
	printFieldCols(w, cols, rows, l, func(f *sshareField) string { return f.name },
		func(r sshareRow, f *sshareField) string { return f.value(r) })
}

var sshareOpts = []slurm.Option{
	{Long: "all", Short: 'a', Arg: slurm.NoArg},
	{Long: "accounts", Short: 'A', Arg: slurm.NeedArg},
	optLong,
	optNoheader,
	optFormat,
	optParsable,
	optParsable2,
	{Long: "users", Short: 'u', Arg: slurm.NeedArg},
	{Long: "Users", Short: 'U', Arg: slurm.NoArg},
	optVerbose,
	{Long: "partition", Short: 'm', Arg: slurm.NoArg, Unsupported: "Shoal's fair-share has no per-partition associations"},
	optClusters,
	{Long: "helpformat", Short: 'e', Arg: slurm.NoArg, Unsupported: "the fields are Slurm's: Account, User, RawShares, NormShares, RawUsage, NormUsage, EffectvUsage, FairShare"},
	optHelp,
	optUsage,
}

// sshareOptions turns sshare's options into the format, the layout and
// the query (users empty without -a or -u: the caller's, for Sshare to
// fill in).
func sshareOptions(vals []slurm.OptValue) (string, sacctLayout, sshareQuery) {
	format := sshareFormat
	long := false
	var formats []string
	layout := sacctLayout{header: true, delimiter: "|"}
	var q sshareQuery
	for _, o := range vals {
		if layout.option(o.Opt.Long) {
			continue
		}
		switch o.Opt.Long {
		case "all":
			q.all = true
		case "accounts":
			q.accounts = append(q.accounts, splitList(o.Value)...)
		case "long":
			long = true
		case "format":
			formats = append(formats, o.Value)
		case "users":
			if o.Value == "-1" {
				q.all = true
				continue
			}
			q.users = append(q.users, resolveUsers(o.Value)...)
		case "Users":
			q.usersOnly = true
		}
	}
	switch {
	case len(formats) > 0:
		format = strings.Join(formats, ",")
	case long:
		format = sshareLongFormat
	}
	if q.all {
		q.users = nil
	}
	return format, layout, q
}

// Sshare is sshare: the fair-share tree, -a, -A, -u, -U, -l, -o, -n, -P,
// -p.
func Sshare(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
	vals, err := cliOptions("sshare", sshareOpts, args, stderr)
	if err != nil {
		return err
	}
	format, layout, q := sshareOptions(vals)
	if !q.all && len(q.users) == 0 {
		// As sshare: the caller's own associations.
		q.users = []string{currentIdentity().User}
	}
	cols, err := parseSshareFormat(format)
	if err != nil {
		return err
	}
	c, err := connect()
	if err != nil {
		return err
	}
	tree, err := c.FairShare(ctx)
	if err != nil {
		return err
	}
	printSshare(stdout, cols, sshareRows(tree, q), layout)
	return nil
}
