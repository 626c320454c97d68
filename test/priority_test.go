package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestFairShareOrdersTheQueue: with a fair-share policy (given by
// --policy), a light user's job submitted after a heavy user's starts
// first when only one fits; `shoal priority` shows why; the policy is the
// file's; only root may change it or lower a nice below zero.
func TestFairShareOrdersTheQueue(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	policy := policyFile(t, `{
		"weights": {"age": 10, "fair_share": 100000},
		"max_age": "1h", "half_life": "1h",
		"qos": {"normal": 0, "high": 10}
	}`)
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 2, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]

	// The leader proposed its file's policy.
	waitPolicyFile(t, a, func(p api.PolicyResponse) bool {
		return p.Policy.Weights.FairShare == 100000 && p.Policy.QoS["high"] == 10
	})

	// Root, on the agent's socket, may act as any user.
	cl := a.Client()
	var err error
	as := func(user string) *api.Client {
		return cl.WithIdentity(api.Identity{User: user, UID: os.Getuid(), GID: os.Getgid()})
	}
	sub := func(user string, secs int, extra func(*api.SubmitRequest)) api.SubmitResponse {
		t.Helper()
		req := api.SubmitRequest{RequestID: fmt.Sprintf("%s-%d-%d", user, secs, time.Now().UnixNano()),
			Command: []string{"sleep", fmt.Sprint(secs)}, WorkDir: "/tmp",
			Nodes: 1, GPUsPerNode: 2, TasksPerNode: 1, CPUsPerTask: 1}
		if extra != nil {
			extra(&req)
		}
		res, err := as(user).Submit(t.Context(), req, 10*time.Second)
		if err != nil {
			t.Fatalf("submit as %s: %v", user, err)
		}
		return res
	}

	// heavy runs first and so has used GPUs while its next job waits.
	// It runs 15 s: the two jobs below must both be pending when the
	// priorities are read, however loaded the machine is.
	first := sub("heavy", 15, nil).ID
	eventually(t, 20*time.Second, "heavy's first job running", func() error {
		j, err := cl.Job(t.Context(), first)
		if err != nil || j.State != "RUNNING" {
			return fmt.Errorf("job %d: %s %v", first, j.State, err)
		}
		return nil
	})
	heavy := sub("heavy", 2, nil).ID
	light := sub("light", 2, nil).ID

	// While both wait, shoal priority ranks light's later job first, for
	// its fair-share.
	var ps []api.Priority
	jsonOf(t, a, &ps, "priority")
	if len(ps) != 2 || ps[0].Job != light || ps[1].Job != heavy {
		t.Fatalf("shoal priority = %+v; want light's job %d, then heavy's %d", ps, light, heavy)
	}
	if ps[0].Factors.FairShare != 1 || ps[1].Factors.FairShare >= 1 || ps[0].Priority <= ps[1].Priority {
		t.Errorf("fair-share factors light %v heavy %v, priorities %d %d; want light 1 and higher",
			ps[0].Factors.FairShare, ps[1].Factors.FairShare, ps[0].Priority, ps[1].Priority)
	}
	out := mustShoal(t, a, "priority", "-u", "heavy")
	if !strings.Contains(out, "FAIRSHARE") || !strings.Contains(out, fmt.Sprintf("%8d heavy", heavy)) || strings.Contains(out, "light") {
		t.Errorf("shoal priority -u heavy:\n%s\nwant the header and heavy's job only", out)
	}
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	r := runEnv(t, []string{"SHOAL_DATA_DIR=" + a.DataDir}, filepath.Join(shims, "sprio"), "-h", "-n", "-j", fmt.Sprint(light))
	// Slurm's -n columns: JOBID PARTITION PRIORITY AGE FAIRSHARE (the
	// factors whose weight is not zero).
	if f := strings.Fields(r.stdout); r.code != 0 || len(f) != 5 || f[0] != fmt.Sprint(light) || f[1] != "shoal" || f[4] != "1.0000000" {
		t.Errorf("sprio -h -n -j %d: exit %d %q %q; want one row: light's job, fair-share 1.0000000", light, r.code, r.stdout, r.stderr)
	}
	r = runEnv(t, []string{"SHOAL_DATA_DIR=" + a.DataDir}, filepath.Join(shims, "sprio"), "-w")
	if want := "" +
		"          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE\n" +
		"        Weights                               1         10     100000\n"; r.code != 0 || r.stdout != want {
		t.Errorf("sprio -w: exit %d %q %q; want\n%s", r.code, r.stdout, r.stderr, want)
	}
	r = runEnv(t, []string{"SHOAL_DATA_DIR=" + a.DataDir}, filepath.Join(shims, "sprio"), "-u", "heavy", "-o", "%i|%u|%F")
	// heavy's fair-share falls while its first job runs: the row's shape
	// is checked, not the value.
	if want := regexp.MustCompile(fmt.Sprintf(`^JOBID\|USER\|FAIRSHARE\n%d\|heavy\|[0-9]+\n$`, heavy)); r.code != 0 || !want.MatchString(r.stdout) {
		t.Errorf("sprio -u heavy -o: exit %d %q %q; want %s", r.code, r.stdout, r.stderr, want)
	}

	jl, jh := waitJob(t, a, light, time.Minute), waitJob(t, a, heavy, time.Minute)
	if jl.State != "COMPLETED" || jh.State != "COMPLETED" {
		t.Fatalf("light %s, heavy %s; want both COMPLETED", jl.State, jh.State)
	}
	ls, _ := time.Parse(time.RFC3339, jl.StartTime)
	hs, _ := time.Parse(time.RFC3339, jh.StartTime)
	if !ls.Before(hs) {
		t.Errorf("light's job %d started %s, heavy's %d %s; want light's first", light, jl.StartTime, heavy, jh.StartTime)
	}

	// A negative nice is root's; an unknown QoS is accepted with a
	// warning; only root sets the policy.
	nonRoot := cl.WithIdentity(api.Identity{User: "ada", UID: 1000, GID: 1000})
	_, err = nonRoot.Submit(t.Context(), api.SubmitRequest{RequestID: "nice-ada", Command: []string{"true"}, WorkDir: "/tmp",
		Nodes: 1, TasksPerNode: 1, CPUsPerTask: 1, Nice: -5}, 0)
	if !strings.Contains(fmt.Sprint(err), "negative nice") {
		t.Errorf("submit --nice=-5 as uid 1000 = %v; want it refused", err)
	}
	res := sub("light", 0, func(r *api.SubmitRequest) { r.GPUsPerNode, r.QoS, r.Nice = 0, "gold", 7 })
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "gold") {
		t.Errorf("submit --qos gold warnings = %q; want one naming gold", res.Warnings)
	}
	if j, err := cl.Job(t.Context(), res.ID); err != nil || j.QoS != "gold" || j.Nice != 7 {
		t.Errorf("job %d = qos %q nice %d (%v); want gold, 7", res.ID, j.QoS, j.Nice, err)
	}
	if out := mustShoal(t, a, "job", fmt.Sprint(res.ID)); !strings.Contains(out, "Nice=7 Account=(null) QOS=gold") {
		t.Errorf("shoal job %d:\n%s\nwant Nice=7 Account=(null) QOS=gold", res.ID, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	p, err := cl.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := nonRoot.SetPolicy(ctx, p.Policy); !strings.Contains(fmt.Sprint(err), "only root") {
		t.Errorf("policy set as uid 1000 = %v; want it refused", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"weights": {"fair_share": -1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := shoal(t, a, "policy", "set", bad); r.code == 0 || !strings.Contains(r.stderr, "weights.fair_share -1") {
		t.Errorf("policy set of a bad file: exit %d %q; want it refused naming weights.fair_share", r.code, r.stderr)
	}
}
