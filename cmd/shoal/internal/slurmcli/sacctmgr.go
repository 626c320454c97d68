package slurmcli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Shoal's accounting "database" is the replicated policy: its accounts
// (with their fair-share shares and users), its QoS levels, operators and
// limits. sacctmgr list|show reads it from the cluster (GET /v1/policy)
// and prints it as Slurm 22.05's sacctmgr does. The peer Slurm runs no
// slurmdbd, where sacctmgr prints nothing, so the fields, headers, widths
// and default formats below are taken from Slurm's source:
// src/sacctmgr/common.c (_get_print_field), user_functions.c,
// account_functions.c, association_functions.c and qos_functions.c.

// mgrField is one sacctmgr format field: its full name, the fewest
// letters that name it (Slurm matches any longer prefix, in the order of
// this table), header and width (negative: left-aligned).
type mgrField struct {
	name   string
	min    int
	header string
	width  int
}

// mgrFields are the fields Shoal fills or leaves empty, in
// _get_print_field's order (the first match wins: "MaxS" is MaxSubmitJobs).
var mgrFields = []mgrField{
	{"Account", 3, "Account", 10},
	{"Acct", 4, "Account", 10},
	{"AdminLevel", 2, "Admin", 9},
	{"Clusters", 2, "Cluster", 10},
	{"DefaultAccount", 8, "Def Acct", 10},
	{"DefaultQOS", 8, "Def QOS", 9},
	{"Description", 3, "Descr", 20},
	{"Flags", 2, "Flags", 20},
	{"GraceTime", 3, "GraceTime", 10},
	{"GrpTRES", 7, "GrpTRES", 13},
	{"GrpTRESMins", 7, "GrpTRESMins", 13},
	{"GrpTRESRunMins", 7, "GrpTRESRunMins", 13},
	{"GrpJobs", 4, "GrpJobs", 7},
	{"GrpSubmitJobs", 4, "GrpSubmit", 9},
	{"GrpWall", 4, "GrpWall", 11},
	{"MaxCPUMinsPerJob", 7, "MaxCPUMins", 11},
	{"MaxCPUsPerJob", 7, "MaxCPUs", 8},
	{"MaxTRES", 7, "MaxTRES", 13},
	{"MaxTRESPerJob", 11, "MaxTRES", 13},
	{"MaxTRESPerNode", 11, "MaxTRESPerNode", 14},
	{"MaxTRESMinsPerJob", 8, "MaxTRESMins", 13},
	{"MaxTRESPerAccount", 11, "MaxTRESPA", 13},
	{"MaxTRESPerAcct", 11, "MaxTRESPA", 13},
	{"MaxTRESPA", 9, "MaxTRESPA", 13},
	{"MaxTRESPerUser", 11, "MaxTRESPU", 13},
	{"MaxTRESPU", 9, "MaxTRESPU", 13},
	{"MaxJobs", 4, "MaxJobs", 7},
	{"MaxJobsPerAccount", 11, "MaxJobsPA", 9},
	{"MaxJobsPerAcct", 11, "MaxJobsPA", 9},
	{"MaxJobsPA", 9, "MaxJobsPA", 9},
	{"MaxJobsPerUser", 11, "MaxJobsPU", 9},
	{"MaxJobsPU", 9, "MaxJobsPU", 9},
	{"MaxNodesPerJob", 4, "MaxNodes", 8},
	{"MaxSubmitJobs", 4, "MaxSubmit", 9},
	{"MaxSubmitJobsPerAccount", 17, "MaxSubmitPA", 11},
	{"MaxSubmitJobsPerAcct", 17, "MaxSubmitPA", 11},
	{"MaxSubmitJobsPA", 15, "MaxSubmitPA", 11},
	{"MaxSubmitPA", 11, "MaxSubmitPA", 11},
	{"MaxSubmitJobsPerUser", 10, "MaxSubmitPU", 11},
	{"MaxSubmitJobsPU", 10, "MaxSubmitPU", 11},
	{"MaxSubmitPU", 6, "MaxSubmitPU", 11},
	{"MaxWallDurationPerJob", 4, "MaxWall", 11},
	{"MinTRESPerJob", 7, "MinTRES", 13},
	{"Name", 2, "Name", 10},
	{"Organization", 1, "Org", 20},
	{"ParentName", 7, "ParentName", 10},
	{"Partition", 4, "Partition", 10},
	{"PreemptMode", 8, "PreemptMode", 11},
	{"Preempt", 7, "Preempt", 10},
	{"PreemptExemptTime", 8, "PreemptExemptTime", 19},
	{"Priority", 3, "Priority", 10},
	{"QOSLevel", 3, "QOS", 20},
	{"Share", 1, "Share", 9},
	{"FairShare", 2, "Share", 9},
	{"UsageFactor", 6, "UsageFactor", 11},
	{"UsageThreshold", 6, "UsageThres", 10},
	{"User", 1, "User", 10},
}

// Default formats of sacctmgr list ENTITY; mgrUserAssocFormat is list
// user's with -s or WithAssoc (user_functions.c adds the association's
// columns to the user's).
const (
	mgrUserFormat      = "U,DefaultA,Ad"
	mgrUserAssocFormat = mgrUserFormat + ",Cl,Acc,Part,Share,Priority,MaxJ,MaxN,MaxCPUs,MaxS,MaxW,MaxCPUMins,QOS,DefaultQOS"
	mgrAcctFormat      = "Acc,Des,O"
	mgrAssocFormat     = "Cluster,Account,User,Part,Share,Priority,GrpJ,GrpTRES,GrpS,GrpWall,GrpTRESMins,MaxJ,MaxTRES,MaxTRESPerN,MaxS,MaxW,MaxTRESMins,QOS,DefaultQOS,GrpTRESRunMins"
	mgrQoSFormat       = "Name,Prio,GraceT,Preempt,PreemptE,PreemptM,Flags%40,UsageThres,UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJ,GrpS,GrpW,MaxTRES,MaxTRESPerN,MaxTRESMins,MaxW,MaxTRESPerUser,MaxJobsPerUser,MaxSubmitJobsPerUser,MaxTRESPerAcct,MaxJobsPerAcct,MaxSubmitJobsPerAcct,MinTRES"
)

// mgrCol is a resolved format item: the field (whose header is also the
// key of a row's values) and its width.
type mgrCol = fieldCol[mgrField]

// parseMgrFormat resolves a sacctmgr format list ("U,DefaultA%20,Ad").
func parseMgrFormat(format string) ([]mgrCol, error) {
	return parseFieldList(splitList(format), false, "format", func(name string) (*mgrField, int, error) {
		for i := range mgrFields {
			c := &mgrFields[i]
			if abbreviates(name, c.name, c.min) {
				return c, c.width, nil
			}
		}
		return nil, 0, slurmErrorf("Unknown field '%s'", name)
	})
}

// mgrRow is one listed record: its values by header, and what where
// conditions match against.
type mgrRow struct {
	values map[string]string
	keys   map[string]string // "name", "user", "account", "cluster"
}

// mgrPolicy is the policy as sacctmgr lists it.
type mgrPolicy struct {
	cluster   string
	accounts  []cluster.AccountShare // by name
	qos       []cluster.QoSLevel     // by name
	preempt   map[string][]string
	grace     time.Duration
	operators []string
	maxSubmit int
}

func newMgrPolicy(pf cluster.PolicyFile) (mgrPolicy, error) {
	// The canonical policy (sorted accounts, levels and rules) is the
	// file's parse, as the agent made it.
	b, err := json.Marshal(pf)
	if err != nil {
		return mgrPolicy{}, fmt.Errorf("the cluster's policy: %w", err)
	}
	p, err := cluster.ParsePolicyJSON(b)
	if err != nil {
		return mgrPolicy{}, fmt.Errorf("the cluster's policy: %w", err)
	}
	m := mgrPolicy{cluster: p.Name(), accounts: p.Accounts, qos: p.QoS, grace: p.PreemptGrace,
		operators: p.Operators, preempt: map[string][]string{}}
	for _, r := range p.Preempt {
		m.preempt[r.QoS] = r.Preempts
	}
	m.maxSubmit, _ = p.JobLimits()
	return m, nil
}

// qosNames are the levels' names joined (Slurm's QOS column), "normal"
// (Slurm's default level) when the policy names none.
func (m mgrPolicy) qosNames() string {
	if len(m.qos) == 0 {
		return "normal"
	}
	names := make([]string, len(m.qos))
	for i, q := range m.qos {
		names[i] = q.Name
	}
	return strings.Join(names, ",")
}

// mgrUsers lists the users: root (Slurm's administrator) and every user
// an account names, with their first account as default (Shoal has no
// default accounts: a job without -A is charged to the empty account).
func mgrUsers(m mgrPolicy) []mgrRow {
	def := map[string]string{"root": "root"}
	for _, a := range m.accounts {
		for _, u := range a.Users {
			if _, ok := def[u.Name]; !ok {
				def[u.Name] = a.Name
			}
		}
	}
	var names []string
	for n := range def {
		names = append(names, n)
	}
	slices.Sort(names)
	var rows []mgrRow
	for _, n := range names {
		admin := "None"
		switch {
		case n == "root":
			admin = "Administrator"
		case slices.Contains(m.operators, n):
			admin = "Operator"
		}
		rows = append(rows, mgrRow{
			values: map[string]string{"User": n, "Def Acct": def[n], "Admin": admin, "Cluster": m.cluster},
			keys:   map[string]string{"name": n, "user": n, "account": def[n], "cluster": m.cluster},
		})
	}
	return rows
}

// mgrUserAssocs lists the users with their associations, as sacctmgr -s
// list user does: one row per association of each user (by name; a
// user's in the tree's order), the user's columns beside the
// association's, and where account= matches the association's account.
func mgrUserAssocs(m mgrPolicy) []mgrRow {
	assocs := mgrAssocs(m)
	var rows []mgrRow
	for _, u := range mgrUsers(m) {
		for _, a := range assocs {
			if a.values["User"] != u.values["User"] {
				continue
			}
			v := maps.Clone(a.values)
			maps.Copy(v, u.values)
			rows = append(rows, mgrRow{values: v,
				keys: map[string]string{"name": u.keys["name"], "user": u.keys["user"], "account": a.keys["account"], "cluster": m.cluster}})
		}
	}
	return rows
}

// mgrAccounts lists root (Slurm's top account) and the policy's
// accounts; Shoal keeps no description or organization, so both are the
// account's name, as sacctmgr add account sets them by default.
func mgrAccounts(m mgrPolicy) []mgrRow {
	rows := []mgrRow{{
		values: map[string]string{"Account": "root", "Descr": "default root account", "Org": "root"},
		keys:   map[string]string{"name": "root", "account": "root", "cluster": m.cluster},
	}}
	for _, a := range m.accounts {
		rows = append(rows, mgrRow{
			values: map[string]string{"Account": a.Name, "Descr": a.Name, "Org": a.Name},
			keys:   map[string]string{"name": a.Name, "account": a.Name, "cluster": m.cluster},
		})
	}
	return rows
}

// mgrAssocs lists the association tree as sacctmgr does, parents first:
// root, root's user root, then each account and its users. Every user
// may run jobs of every QoS level; MaxSubmit is the per-user limit on
// live jobs the cluster enforces.
func mgrAssocs(m mgrPolicy) []mgrRow {
	qos := m.qosNames()
	row := func(account, user string, shares int64, parent string) mgrRow {
		v := map[string]string{"Cluster": m.cluster, "Account": account, "User": user,
			"Share": strconv.FormatInt(shares, 10), "QOS": qos, "ParentName": parent}
		if user != "" {
			v["MaxSubmit"] = strconv.Itoa(m.maxSubmit)
		}
		return mgrRow{values: v, keys: map[string]string{"name": user, "user": user, "account": account, "cluster": m.cluster}}
	}
	rows := []mgrRow{row("root", "", 1, ""), row("root", "root", 1, "")}
	for _, a := range m.accounts {
		rows = append(rows, row(a.Name, "", a.Shares, "root"))
		for _, u := range a.Users {
			rows = append(rows, row(a.Name, u.Name, u.Shares, ""))
		}
	}
	return rows
}

// mgrQoS lists the QoS levels ("normal", priority 0, when the policy has
// none): the preemption grace is the cluster's, the same for every level.
func mgrQoS(m mgrPolicy) []mgrRow {
	levels := m.qos
	if len(levels) == 0 {
		levels = []cluster.QoSLevel{{Name: "normal"}}
	}
	var rows []mgrRow
	for _, q := range levels {
		v := map[string]string{"Name": q.Name, "Priority": strconv.FormatInt(q.Priority, 10),
			"GraceTime": sacctElapsed(m.grace), "Preempt": strings.Join(m.preempt[q.Name], ","),
			"PreemptMode": "cluster", "UsageFactor": "1.000000"}
		if q.MaxGPUsPerUser > 0 {
			v["MaxTRESPU"] = fmt.Sprintf("gres/gpu=%d", q.MaxGPUsPerUser)
		}
		rows = append(rows, mgrRow{values: v, keys: map[string]string{"name": q.Name}})
	}
	return rows
}

// mgrEntity is what sacctmgr lists: its rows and default format.
type mgrEntity struct {
	rows   func(mgrPolicy) []mgrRow
	format string
	keys   []string // the where conditions it takes
}

var mgrEntities = map[string]mgrEntity{
	"user":        {mgrUsers, mgrUserFormat, []string{"name", "user", "account", "cluster"}},
	"account":     {mgrAccounts, mgrAcctFormat, []string{"name", "account", "cluster"}},
	"association": {mgrAssocs, mgrAssocFormat, []string{"user", "account", "cluster"}},
	"qos":         {mgrQoS, mgrQoSFormat, []string{"name"}},
}

// mgrEntityName resolves an entity as sacctmgr: "user", "users",
// "account", "acct", "association", "assoc", "qos" (any case).
func mgrEntityName(s string) (string, bool) {
	s = strings.ToLower(s)
	switch {
	case strings.HasPrefix(s, "use") && strings.HasPrefix("users", s):
		return "user", true
	case strings.HasPrefix(s, "acc") && (strings.HasPrefix("accounts", s) || s == "acct" || s == "accts"):
		return "account", true
	case strings.HasPrefix(s, "ass") && strings.HasPrefix("associations", s):
		return "association", true
	case s == "qos":
		return "qos", true
	}
	return "", false
}

// mgrCondKey resolves a where condition's key: names, users, accounts,
// clusters (singular or plural, any case).
func mgrCondKey(k string) string {
	k = strings.TrimSuffix(strings.ToLower(k), "s")
	switch k {
	case "name", "user", "account", "cluster":
		return k
	case "acct":
		return "account"
	}
	return ""
}

// mgrQuery is a parsed "sacctmgr list ENTITY [where] [COND=V...]
// [format=...]".
type mgrQuery struct {
	entity    string
	format    string
	conds     map[string][]string
	withAssoc bool // users with their associations (-s, WithAssoc)
}

// rows are the records the query lists, before its conditions.
func (q mgrQuery) rows(m mgrPolicy) []mgrRow {
	if q.withAssoc {
		return mgrUserAssocs(m)
	}
	return mgrEntities[q.entity].rows(m)
}

// parseMgrQuery parses the words after sacctmgr's options; withAssoc is
// its -s (--associations), which lists users with their associations as
// the WithAssoc word does.
func parseMgrQuery(args []string, withAssoc bool) (mgrQuery, error) {
	if len(args) == 0 {
		return mgrQuery{}, slurmErrorf("No command given")
	}
	switch strings.ToLower(args[0]) {
	case "list", "lis", "li", "show", "sho", "sh":
	default:
		return mgrQuery{}, fmt.Errorf("sacctmgr %s: Shoal's sacctmgr only lists (list, show): the accounts, users and QoS levels are the policy's (shoal policy set)", args[0])
	}
	if len(args) < 2 {
		return mgrQuery{}, slurmErrorf("Your command didn't give an entity to list")
	}
	ent, ok := mgrEntityName(args[1])
	if !ok {
		return mgrQuery{}, fmt.Errorf("sacctmgr list %s: Shoal lists user, account, association and qos", args[1])
	}
	// -s changes only what list user and list account print; the
	// association and QoS lists ignore it, as sacctmgr's do.
	q := mgrQuery{entity: ent, conds: map[string][]string{}, withAssoc: withAssoc && (ent == "user" || ent == "account")}
	for _, a := range args[2:] {
		switch strings.ToLower(a) {
		case "where", "with", "set":
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		switch {
		case !ok && len(a) >= 5 && strings.HasPrefix("withassoc", strings.ToLower(a)):
			// Slurm's WithAssoc, matched from its first five letters.
			q.withAssoc = true
			continue
		case !ok && ent != "association":
			// A bare word is a name, as "sacctmgr show user alice".
			q.conds["name"] = append(q.conds["name"], splitList(a)...)
			continue
		case !ok:
			return mgrQuery{}, slurmErrorf("Unknown condition: %s", a)
		}
		if strings.EqualFold(k, "format") || strings.EqualFold(k, "formats") {
			q.format = v
			continue
		}
		key := mgrCondKey(k)
		if key == "" || !slices.Contains(mgrEntities[ent].keys, key) {
			return mgrQuery{}, slurmErrorf("Unknown condition: %s\nUse keyword 'set' to modify value", a)
		}
		q.conds[key] = append(q.conds[key], splitList(v)...)
	}
	if q.withAssoc && ent != "user" {
		return mgrQuery{}, fmt.Errorf("sacctmgr list %s with associations: not supported by Shoal yet: use sacctmgr show association", ent)
	}
	if q.format == "" {
		q.format = mgrEntities[ent].format
		if q.withAssoc {
			q.format = mgrUserAssocFormat
		}
	}
	return q, nil
}

// mgrSelect keeps the rows every condition matches (any of its values).
func mgrSelect(rows []mgrRow, conds map[string][]string) []mgrRow {
	var out []mgrRow
	for _, r := range rows {
		ok := true
		for k, vals := range conds {
			if !slices.Contains(vals, r.keys[k]) {
				ok = false
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// sacctmgrOpts are sacctmgr's options (before or after the command).
var sacctmgrOpts = []slurm.Option{
	optNoheader,
	optParsable,
	optParsable2,
	{Long: "immediate", Short: 'i', Arg: slurm.NoArg},
	optQuiet,
	{Long: "readonly", Short: 'r', Arg: slurm.NoArg},
	optVerbose,
	{Long: "oneliner", Short: 'o', Arg: slurm.NoArg, Unsupported: "Shoal prints tables"},
	{Long: "associations", Short: 's', Arg: slurm.NoArg},
	{Long: "help", Short: 'h', Arg: slurm.NoArg, Unsupported: seeHelp},
	optUsage,
}

// Sacctmgr is sacctmgr list|show user|account|association|qos over the
// cluster's policy.
func Sacctmgr(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
	vals, rest, err := cliArgs("sacctmgr", sacctmgrOpts, args, stderr)
	if err != nil {
		return err
	}
	layout := sacctLayout{header: true, delimiter: "|"}
	withAssoc := false
	for _, o := range vals {
		if layout.option(o.Opt.Long) {
			continue
		}
		switch o.Opt.Long {
		case "associations":
			withAssoc = true
		}
	}
	q, err := parseMgrQuery(rest, withAssoc)
	if err != nil {
		return err
	}
	cols, err := parseMgrFormat(q.format)
	if err != nil {
		return err
	}
	_, in, err := readAgent(ctx, connect, readPolicy)
	if err != nil {
		return err
	}
	m, err := newMgrPolicy(in.policy.Policy)
	if err != nil {
		return err
	}
	printMgr(stdout, cols, mgrSelect(q.rows(m), q.conds), layout)
	return nil
}

func printMgr(w io.Writer, cols []mgrCol, rows []mgrRow, l sacctLayout) {
	printFieldCols(w, cols, rows, l, func(f *mgrField) string { return f.header },
		func(r mgrRow, f *mgrField) string { return r.values[f.header] })
}
