package chaos_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/chaos"
)

// clusterSnapshot is what an attack must not change: the jobs, and each
// node's record as the leader keeps it.
type clusterSnapshot struct {
	jobs  int
	nodes map[string]string // name -> state, address and drain reason
}

func snapshotCluster(t *testing.T, ctx context.Context, c *api.Client) clusterSnapshot {
	t.Helper()
	jobs, err := c.Jobs(ctx, true)
	if err != nil {
		t.Fatalf("list jobs: %v", err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	s := clusterSnapshot{jobs: len(jobs), nodes: map[string]string{}}
	for _, n := range nodes {
		s.nodes[n.Name] = fmt.Sprintf("%s %s drain=%q gpus=%d", n.State, n.Address, n.Reason, n.GPUs)
	}
	return s
}

// curlIn runs curl inside namespace ns and returns the HTTP status it got
// ("000" when no HTTP answer came: a refused handshake) and its body.
func curlIn(t *testing.T, ns string, args ...string) (code, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	full := append([]string{"netns", "exec", ns, "curl", "-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}"}, args...)
	out, _ := osexec.CommandContext(ctx, "ip", full...).CombinedOutput()
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndex(s, "\n")
	if i < 0 {
		return s, ""
	}
	return s[i+1:], s[:i]
}

// TestOutsiderCannotAct (issue 12, threat a): a host on the cluster's
// network that is not a node — a real curl and a real rogue agent in a
// namespace of their own — cannot submit, cancel, drain, stop an agent,
// read logs or the queue, send heartbeats, task reports or leaves, talk
// raft, or join gossip; and a certified node cannot change another node's
// records (threat d). Every attempt is refused, and the cluster's jobs and
// node records are unchanged.
func TestOutsiderCannotAct(t *testing.T) {
	requireNetNS(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dir := shortDir(t)
	h := startHarness(t, chaos.Options{Binary: shoalBin, Nodes: 3, Dir: dir, Net: chaos.NetNamespaces, Outsiders: 1, Log: log})
	outNS, outAddr := h.Outsider(0)
	cl := h.Agents[0].Client()
	// Every node registered and up before the attacks, so the comparison
	// after them sees only what the attacks changed.
	var before clusterSnapshot
	deadline := time.Now().Add(30 * time.Second)
	for {
		before = snapshotCluster(t, ctx, cl)
		up := 0
		for _, s := range before.nodes {
			if strings.HasPrefix(s, "IDLE ") {
				up++
			}
		}
		if up == len(h.Agents) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every node up and idle within 30s: %v", before.nodes)
		}
		time.Sleep(200 * time.Millisecond)
	}

	forged := map[string]string{
		"X-Shoal-Forwarded-By": "n2", "X-Shoal-User": "root", "X-Shoal-Uid": "0", "X-Shoal-Gid": "0",
	}
	type attack struct {
		method, path, body string
		headers            map[string]string
	}
	heartbeat := fmt.Sprintf(`{"node":{"name":"n1","api_addr":"%s:7070","gpus":[{"index":0},{"index":1}]}}`, outAddr)
	attacks := []attack{
		{"POST", "/v1/jobs", `{"command":["touch","/tmp/pwned"],"nodes":1}`, forged},
		{"POST", "/v1/jobs", `{"command":["touch","/tmp/pwned"],"nodes":1}`, map[string]string{"X-Shoal-Uid": "0"}},
		{"GET", "/v1/jobs?all=1", "", forged},
		{"DELETE", "/v1/jobs/1", "", forged},
		{"POST", "/v1/nodes/n1/drain", `{"reason":"attack"}`, forged},
		{"POST", "/v1/agent/leave", `{}`, forged},
		{"POST", "/v1/policy", `{}`, forged},
		{"GET", "/v1/jobs/1/logs", "", forged},
		{"GET", "/metrics", "", forged},
		// The web view's files are public; the API it reads is not.
		{"GET", "/v1/nodes", "", forged},
		{"GET", "/v1/members", "", nil},
		{"GET", "/v1/internal/logs/1", "", map[string]string{"X-Shoal-Forwarded-By": "n2"}},
	}
	// What a node may send only about itself (tried below by another
	// certified node, too).
	aboutN1 := []attack{
		{"POST", "/v1/internal/heartbeat", heartbeat, map[string]string{"X-Shoal-Forwarded-By": "n1"}},
		{"POST", "/v1/internal/task", `{"kind":"exited","job":1,"incarnation":1,"node":"n1","exit_code":0}`, nil},
		{"POST", "/v1/internal/leave", `{"node":{"name":"n1"}}`, nil},
	}
	attacks = append(attacks, aboutN1...)
	for _, a := range h.Agents {
		for _, at := range attacks {
			args := []string{"-k", "-X", at.method}
			for k, v := range at.headers {
				args = append(args, "-H", k+": "+v)
			}
			if at.body != "" {
				args = append(args, "-H", "Content-Type: application/json", "-d", at.body)
			}
			url := fmt.Sprintf("https://%s:%d%s", a.Addr, a.HTTPPort, at.path)
			if code, body := curlIn(t, outNS, append(args, url)...); code != "401" {
				t.Errorf("%s %s from an outsider: HTTP %s %q; want 401", at.method, url, code, body)
			}
		}
		// Plain HTTP to the TLS port gets no API answer.
		plain := fmt.Sprintf("http://%s:%d/v1/jobs", a.Addr, a.HTTPPort)
		if code, body := curlIn(t, outNS, "-X", "POST", "-H", "X-Shoal-Uid: 0", "-d", `{"command":["true"]}`, plain); code == "200" {
			t.Errorf("plain HTTP POST %s: %s %q; want refused", plain, code, body)
		}
		// Raft's port completes no handshake without a node certificate.
		raftURL := fmt.Sprintf("https://%s:%d/", a.Addr, a.RaftPort)
		if code, _ := curlIn(t, outNS, "-k", raftURL); code != "000" {
			t.Errorf("TLS to raft port %s without a certificate: HTTP %s; want the handshake refused", raftURL, code)
		}
	}

	// A certified node may change only its own records: n3 cannot renew
	// n1's lease with its own address, report n1's tasks, or take n1 out.
	n3 := filepath.Join(h.Agents[2].DataDir, "tls")
	asN3 := []string{"-k", "--cert", filepath.Join(n3, "node.pem"), "--key", filepath.Join(n3, "node-key.pem"),
		"-H", "Content-Type: application/json", "-H", "X-Shoal-Forwarded-By: n3"}
	for _, at := range aboutN1 {
		for _, a := range h.Agents {
			url := fmt.Sprintf("https://%s:%d%s", a.Addr, a.HTTPPort, at.path)
			code, body := curlIn(t, outNS, append(asN3, "-X", at.method, "-d", at.body, url)...)
			if code != "403" && !(code == "503" && strings.Contains(body, "not the leader")) {
				t.Errorf("n3 sending %s %s for n1: HTTP %s %q; want 403", at.method, url, code, body)
			}
		}
	}

	// A rogue agent with a CA and gossip key of its own, and one with
	// none at all, try to join through every member.
	var join []string
	for _, a := range h.Agents {
		join = append(join, fmt.Sprintf("%s:%d", a.Addr, a.GossipPort))
	}
	for i, mode := range []string{"own-ca", "insecure"} {
		rdir := filepath.Join(dir, "rogue"+fmt.Sprint(i))
		name := "rogue-" + mode
		args := []string{"agent", "--name", name, "--data-dir", rdir, "--bind", outAddr, "--gpus", "64",
			"--http-port", fmt.Sprint(7170 + 10*i), "--raft-port", fmt.Sprint(7171 + 10*i), "--gossip-port", fmt.Sprint(7172 + 10*i),
			"--join", strings.Join(join, ","), "--dev-timing"}
		if mode == "insecure" {
			args = append(args, "--insecure")
		} else if out, err := osexec.Command(shoalBin, "tls", "init", "--data-dir", rdir, "--name", name).CombinedOutput(); err != nil {
			t.Fatalf("rogue tls init: %v\n%s", err, out)
		}
		rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
		out, _ := osexec.CommandContext(rctx, "ip", append([]string{"netns", "exec", outNS, shoalBin}, args...)...).CombinedOutput()
		cancel()
		members, err := cl.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			if strings.HasPrefix(m.Name, "rogue") {
				t.Errorf("rogue agent (%s) is a gossip member: %+v\nits log:\n%s", mode, m, out)
			}
		}
	}

	after := snapshotCluster(t, ctx, cl)
	if after.jobs != before.jobs {
		t.Errorf("jobs: %d before the attacks, %d after", before.jobs, after.jobs)
	}
	names := func(m map[string]string) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(names(before.nodes), names(after.nodes)) {
		t.Errorf("nodes: %v before, %v after", names(before.nodes), names(after.nodes))
	}
	for name, was := range before.nodes {
		if now := after.nodes[name]; now != was {
			t.Errorf("node %s: %q before the attacks, %q after", name, was, now)
		}
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Errorf("/tmp/pwned exists: an outsider's command ran")
	}
}
