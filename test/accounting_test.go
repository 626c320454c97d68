package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestAccountingCommands: sacctmgr, sshare and sacct's accounting
// options through the install-shims links, against a cluster whose
// policy has accounts, users, QoS levels and an operator, as tools query
// them (-n -P, format=, where).
func TestAccountingCommands(t *testing.T) {
	policy := policyFile(t, `{
		"weights": {"age": 10, "fair_share": 1000, "qos": 100},
		"max_age": "1h", "half_life": "0s",
		"accounts": {
			"physics": {"shares": 60, "users": {"alice": 2, "bob": 1}},
			"bio": {"shares": 40}
		},
		"qos": {"normal": 0, "high": 10},
		"preempt": {"high": ["normal"]}, "preempt_grace": "30s",
		"operators": ["bob"]
	}`)
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 2, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]
	waitPolicyFile(t, a, func(p api.PolicyResponse) bool { return p.Policy.Accounts["physics"].Shares == 60 })
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	env := []string{"SHOAL_DATA_DIR=" + a.DataDir}
	must := func(name string, args ...string) string {
		t.Helper()
		r := runEnv(t, env, filepath.Join(shims, name), args...)
		if r.code != 0 {
			t.Fatalf("%s %s: exit %d\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	check := func(name string, args []string, want string) {
		t.Helper()
		if got := must(name, args...); got != want {
			t.Errorf("%s %s:\n%s\nwant:\n%s", name, strings.Join(args, " "), got, want)
		}
	}

	// sacctmgr: the policy's users, accounts, associations and QoS.
	check("sacctmgr", []string{"-nP", "list", "user", "format=User,DefaultAccount,AdminLevel"},
		"alice|physics|None\nbob|physics|Operator\nroot|root|Administrator\n")
	check("sacctmgr", []string{"show", "account", "-P"},
		"Account|Descr|Org\nroot|default root account|root\nbio|bio|bio\nphysics|physics|physics\n")
	check("sacctmgr", []string{"-n", "-P", "show", "assoc", "where", "user=alice", "format=cluster,account,user,share,qos"},
		"shoal|physics|alice|2|high,normal\n")
	check("sacctmgr", []string{"-P", "-n", "list", "qos", "format=Name,Priority,GraceTime,Preempt"},
		"high|10|00:00:30|normal\nnormal|0|00:00:30|\n")
	if out := must("sacctmgr", "list", "user"); !strings.Contains(out, "      User   Def Acct     Admin \n---------- ---------- --------- \n") {
		t.Errorf("sacctmgr list user: header\n%s\nwant Slurm's", out)
	}

	// Jobs charged to accounts: alice's in physics, carol's (unlisted)
	// in bio.
	cl := a.Client()
	as := func(user string) *api.Client {
		return cl.WithIdentity(api.Identity{User: user, UID: os.Getuid(), GID: os.Getgid()})
	}
	sub := func(user, account, name string) uint64 {
		t.Helper()
		req := api.SubmitRequest{RequestID: fmt.Sprintf("%s-%d", user, time.Now().UnixNano()), Name: name,
			Command: []string{"sleep", "1"}, WorkDir: "/tmp", Account: account,
			Nodes: 1, GPUsPerNode: 2, TasksPerNode: 1, CPUsPerTask: 1}
		res, err := as(user).Submit(t.Context(), req, 10*time.Second)
		if err != nil {
			t.Fatalf("submit as %s: %v", user, err)
		}
		return res.ID
	}
	alice := sub("alice", "physics", "ajob")
	carol := sub("carol", "bio", "cjob")
	// squeue -A shows an account's queue while its jobs live.
	check("squeue", []string{"-h", "-t", "all", "-A", "physics", "-o", "%i %a"}, fmt.Sprintf("%d physics\n", alice))
	for _, id := range []uint64{alice, carol} {
		if j := waitJob(t, a, id, time.Minute); j.State != "COMPLETED" {
			t.Fatalf("job %d: %s; want COMPLETED", id, j.State)
		}
	}

	// sacct: -A, --name, -s, -S/-E windows, --units.
	check("sacct", []string{"-X", "-n", "-P", "-a", "-A", "physics", "-o", "JobID,Account,User,State"},
		fmt.Sprintf("%d|physics|alice|COMPLETED\n", alice))
	check("sacct", []string{"-X", "-n", "-P", "-a", "--name", "cjob", "-o", "JobID,JobName"},
		fmt.Sprintf("%d|cjob\n", carol))
	check("sacct", []string{"-X", "-n", "-P", "-a", "-s", "CD", "-S", "now-1hours", "-E", "now", "-o", "JobID"},
		fmt.Sprintf("%d\n%d\n", alice, carol))
	check("sacct", []string{"-X", "-n", "-P", "-a", "-s", "R", "-o", "JobID"}, "")
	check("sacct", []string{"-X", "-n", "-P", "-a", "-S", "now+1days", "-E", "now+2days", "-o", "JobID"}, "")
	check("sacct", []string{"-X", "-n", "-P", "-a", "-A", "bio", "--units=M", "-o", "JobID,ReqMem"},
		fmt.Sprintf("%d|0\n", carol))
	if r := runEnv(t, env, filepath.Join(shims, "sacct"), "-S", "today", "-E", "2001-01-01"); r.code == 0 || !strings.Contains(r.stderr, "after end time") {
		t.Errorf("sacct -S today -E 2001-01-01: exit %d %q; want the start-after-end error", r.code, r.stderr)
	}
	if r := runEnv(t, env, filepath.Join(shims, "sacct"), "-S", "yesterday"); r.code == 0 || !strings.Contains(r.stderr, "-S") {
		t.Errorf("sacct -S yesterday: exit %d %q; want an error naming -S", r.code, r.stderr)
	}

	// sshare: the tree the priorities use. Usage does not decay
	// (half_life 0) and both jobs held the same GPUs, so the usage splits
	// by how long each ran.
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(must("sshare", "-a", "-n", "-P")), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 7 {
			t.Fatalf("sshare -a -n -P: line %q; want 7 fields", line)
		}
		rows[strings.TrimSpace(f[0])+"/"+f[1]] = f
	}
	for key, want := range map[string][2]string{ // RawShares, NormShares
		"root/": {"", "1.000000"}, "physics/": {"60", "0.600000"}, "bio/": {"40", "0.400000"},
		"physics/alice": {"2", "0.400000"}, "physics/bob": {"1", "0.200000"}, "bio/carol": {"1", "0.400000"},
	} {
		f, ok := rows[key]
		if !ok || f[2] != want[0] || f[3] != want[1] {
			t.Errorf("sshare row %s = %q; want RawShares %q NormShares %q (rows %q)", key, f, want[0], want[1], rows)
		}
	}
	if f := rows["physics/bob"]; len(f) == 7 && (f[4] != "0" || f[6] != "1.000000") {
		t.Errorf("bob ran nothing: %q; want RawUsage 0, FairShare 1.000000", f)
	}
	usage := func(key string) float64 {
		f := rows[key]
		if len(f) != 7 {
			return -1
		}
		v, _ := strconv.ParseFloat(f[5], 64)
		return v
	}
	if ua, uc := usage("physics/alice"), usage("bio/carol"); ua <= 0 || uc <= 0 || ua+uc < 0.999 || ua+uc > 1.001 {
		t.Errorf("EffectvUsage alice %v carol %v; want both above 0, summing to 1", ua, uc)
	}
	// Without -a: the accounts and only the caller's (root's) users.
	if out := must("sshare", "-n", "-P"); strings.Contains(out, "alice") || !strings.Contains(out, " physics|") {
		t.Errorf("sshare -n -P as root:\n%s\nwant the accounts and no user rows", out)
	}
	check("sshare", []string{"-n", "-P", "-u", "alice", "-A", "physics", "-o", "Account,User,RawShares"},
		" physics||60\n  physics|alice|2\n")
}
