package slurmcli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// testMgrPolicy: two accounts (physics with two users), two QoS levels,
// high preempting low, an operator.
func testMgrPolicy() mgrPolicy {
	return mgrPolicy{
		cluster: "shoal",
		accounts: []cluster.AccountShare{
			{Name: "bio", Shares: 40},
			{Name: "physics", Shares: 60, Users: []cluster.UserShare{{Name: "alice", Shares: 2}, {Name: "bob", Shares: 1}}},
		},
		qos:       []cluster.QoSLevel{{Name: "high", Priority: 100, MaxGPUsPerUser: 8}, {Name: "low"}},
		preempt:   map[string][]string{"high": {"low"}},
		grace:     time.Minute,
		operators: []string{"bob"},
		maxSubmit: 10000,
	}
}

// TestSacctmgrList: the default formats, headers and widths of
// sacctmgr list user|account|association|qos (from Slurm 22.05's
// src/sacctmgr: the peer has no slurmdbd to make goldens), where
// conditions, format= with widths and the parsable layouts.
func TestSacctmgrList(t *testing.T) {
	m := testMgrPolicy()
	for _, tc := range []struct {
		name      string
		args      []string
		withAssoc bool // sacctmgr -s
		layout    sacctLayout
		want      string
	}{
		{"users", []string{"list", "user"}, false, sacctLayout{header: true}, "" +
			"      User   Def Acct     Admin \n" +
			"---------- ---------- --------- \n" +
			"     alice    physics      None \n" +
			"       bob    physics  Operator \n" +
			"      root       root Administ+ \n"},
		{"accounts -P", []string{"show", "accounts"}, false, sacctLayout{header: true, parsable: true, delimiter: "|"}, "" +
			"Account|Descr|Org\n" +
			"root|default root account|root\n" +
			"bio|bio|bio\n" +
			"physics|physics|physics\n"},
		{"associations", []string{"list", "assoc", "format=Cluster,Account,User%-8,Share,QOS%12,MaxS"}, false, sacctLayout{header: true}, "" +
			"   Cluster    Account User         Share          QOS MaxSubmit \n" +
			"---------- ---------- -------- --------- ------------ --------- \n" +
			"     shoal       root                  1     high,low           \n" +
			"     shoal       root root             1     high,low     10000 \n" +
			"     shoal        bio                 40     high,low           \n" +
			"     shoal    physics                 60     high,low           \n" +
			"     shoal    physics alice            2     high,low     10000 \n" +
			"     shoal    physics bob              1     high,low     10000 \n"},
		{"associations where user", []string{"list", "associations", "where", "user=alice", "format=account,user,share"}, false, sacctLayout{parsable: true, delimiter: "|", trailing: true}, "" +
			"physics|alice|2|\n"},
		{"qos", []string{"show", "qos", "format=Name,Prio,GraceT,Preempt,PreemptM,UsageFactor,MaxTRESPU"}, false, sacctLayout{header: true, parsable: true, delimiter: "|"}, "" +
			"Name|Priority|GraceTime|Preempt|PreemptMode|UsageFactor|MaxTRESPU\n" +
			"high|100|00:01:00|low|cluster|1.000000|gres/gpu=8\n" +
			"low|0|00:01:00||cluster|1.000000|\n"},
		{"qos name", []string{"list", "qos", "name=low", "format=name"}, false, sacctLayout{}, "" +
			"       low \n"},
		{"-s qos (ignored)", []string{"list", "qos", "name=low", "format=name"}, true, sacctLayout{}, "" +
			"       low \n"},
		{"user by bare name", []string{"show", "user", "bob", "format=user,defaultaccount"}, false, sacctLayout{parsable: true, delimiter: "|"}, "" +
			"bob|physics\n"},
		// What Snakemake's Slurm executor runs to check an account
		// (sacctmgr -n -s list user "$USER" format=account%20): one
		// row per association of the user.
		{"-s user account", []string{"list", "user", "alice", "format=account%20"}, true, sacctLayout{}, "" +
			"             physics \n"},
		{"users withassoc", []string{"list", "user", "WithAssoc", "format=user,defaulta,account,share,qos,maxs"}, false, sacctLayout{parsable: true, delimiter: "|"}, "" +
			"alice|physics|physics|2|high,low|10000\n" +
			"bob|physics|physics|1|high,low|10000\n" +
			"root|root|root|1|high,low|10000\n"},
		{"-s users where account", []string{"list", "user", "where", "account=physics", "format=user,account"}, true, sacctLayout{parsable: true, delimiter: "|"}, "" +
			"alice|physics\n" +
			"bob|physics\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := parseMgrQuery(tc.args, tc.withAssoc)
			if err != nil {
				t.Fatal(err)
			}
			cols, err := parseMgrFormat(q.format)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			printMgr(&b, cols, mgrSelect(q.rows(m), q.conds), tc.layout)
			if b.String() != tc.want {
				t.Errorf("sacctmgr %s:\n%s\nwant:\n%s", strings.Join(tc.args, " "), b.String(), tc.want)
			}
		})
	}
}

// TestSacctmgrDefaultFormats: every default format resolves to Slurm's
// headers (prefix matching in _get_print_field's order).
func TestSacctmgrDefaultFormats(t *testing.T) {
	for _, tc := range []struct{ format, headers string }{
		{mgrUserFormat, "User,Def Acct,Admin"},
		{mgrUserAssocFormat, "User,Def Acct,Admin,Cluster,Account,Partition,Share,Priority,MaxJobs,MaxNodes,MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,Def QOS"},
		{mgrAcctFormat, "Account,Descr,Org"},
		{mgrAssocFormat, "Cluster,Account,User,Partition,Share,Priority,GrpJobs,GrpTRES,GrpSubmit,GrpWall,GrpTRESMins,MaxJobs,MaxTRES,MaxTRESPerNode,MaxSubmit,MaxWall,MaxTRESMins,QOS,Def QOS,GrpTRESRunMins"},
		{mgrQoSFormat, "Name,Priority,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags,UsageThres,UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpSubmit,GrpWall,MaxTRES,MaxTRESPerNode,MaxTRESMins,MaxWall,MaxTRESPU,MaxJobsPU,MaxSubmitPU,MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES"},
	} {
		cols, err := parseMgrFormat(tc.format)
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		var got []string
		for _, c := range cols {
			got = append(got, c.field.header)
		}
		if strings.Join(got, ",") != tc.headers {
			t.Errorf("format %s: headers %s; want %s", tc.format, strings.Join(got, ","), tc.headers)
		}
	}
	for _, bad := range [][]string{{"add", "user", "x"}, {"list"}, {"list", "cluster"}, {"list", "user", "bogus=1"}, {"list", "qos", "user=x"}, {"list", "assoc", "alice"}, {"show", "account", "withassoc"}} {
		if _, err := parseMgrQuery(bad, false); err == nil {
			t.Errorf("sacctmgr %s: no error", strings.Join(bad, " "))
		}
	}
	if _, err := parseMgrFormat("User,Nonsense"); err == nil {
		t.Error("format=User,Nonsense: no error")
	}
}

// FuzzAccountingFormats: the format and query parsers of sacctmgr,
// sshare and sprio take any input without panicking, and what they
// accept prints.
func FuzzAccountingFormats(f *testing.F) {
	for _, s := range []string{mgrAssocFormat, "U%-8,DefaultA%20", "acc,u%-6,fairs", "%.15i %9r %.10Y", "%i|%u|%F|%.3q", "User%0", "where user=a,b"} {
		f.Add(s)
	}
	m := testMgrPolicy()
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		if cols, err := parseMgrFormat(s); err == nil {
			for _, c := range cols {
				if c.width > 1<<12 || c.width < -(1<<12) {
					return // a huge width prints, slowly
				}
			}
			printMgr(&b, cols, mgrUsers(m), sacctLayout{header: true})
		}
		if cols, err := parseSshareFormat(s); err == nil {
			for _, c := range cols {
				if c.width > 1<<12 || c.width < -(1<<12) {
					return
				}
			}
			printSshare(&b, cols, sshareRows(nil, sshareQuery{all: true}), sacctLayout{header: true})
		}
		if cols, err := parseSprioFormat(s); err == nil {
			printSprio(&b, cols, nil, cluster.Weights{}, true, true)
		}
		_, _ = parseMgrQuery(append([]string{"list", "assoc"}, strings.Fields(s)...), false)
		_, _ = parseMgrQuery(append([]string{"list", "user"}, strings.Fields(s)...), true)
	})
}
