package test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
	"github.com/shoal-sched/shoal/pki"
)

// nodeCertOf reads the certificate agent a has on disk now.
func nodeCertOf(t *testing.T, a *localcluster.Agent) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(a.DataDir, "tls", "node.pem"))
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pki.ParseCerts(data)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0].SerialNumber.String()
}

// agentStartFails runs an agent that must refuse to start, and returns its
// error output.
func agentStartFails(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, shoalBin, args...).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("shoal %s: %v; want it to refuse to start\n%s", strings.Join(args, " "), err, lastLines(string(out), 10))
	}
	return string(out)
}

// TestJoinWithToken (issue 12): a node with no certificate joins with a
// token from `shoal join-token create` and runs a job; a used-up, an
// expired and a forged token are refused; `shoal node revoke` cuts a node
// off at once: its certificate no longer completes a handshake, and it
// leaves raft.
func TestJoinWithToken(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 4, Initial: 3, GPUsPerNode: 2})
	a := c.Agents[0]
	var tok api.JoinTokenResponse
	eventually(t, 20*time.Second, "a join token", func() error {
		r := shoal(t, a, "join-token", "create", "--ttl", "5m", "--json")
		if r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		return jsonUnmarshal(r.stdout, &tok)
	})
	if tok.Uses != 1 || !strings.Contains(tok.Token, "@") {
		t.Fatalf("join-token create = %+v", tok)
	}

	// n4 has no certificate: it joins with the token.
	n4 := c.Agents[3]
	if err := os.RemoveAll(filepath.Join(n4.DataDir, "tls")); err != nil {
		t.Fatal(err)
	}
	base := n4.Args
	n4.Args = append(append([]string{}, base...), "--token", tok.Token)
	if err := c.StartAgent(3); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "n4 up in the cluster", func() error {
		n, ok := nodesByName(t, a)["n4"]
		if !ok || n.State != "IDLE" {
			return fmt.Errorf("n4: %+v", n)
		}
		return nil
	})
	if out := mustShoal(t, n4, "status"); !strings.Contains(out, "Security=tls") {
		t.Errorf("n4 status:\n%s\nwant Security=tls", out)
	}
	id := submit(t, a, "--nodes", "1", "-w", "n4", "--", "hostname")
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" {
		t.Errorf("job on n4 = %s; want COMPLETED", j.State)
	}

	// The token had one use.
	other := t.TempDir()
	port := func() []string {
		ps, err := localcluster.FreePorts("127.0.0.1", 3)
		if err != nil {
			t.Fatal(err)
		}
		return []string{"--bind", "127.0.0.1", "--http-port", fmt.Sprint(ps[0]), "--raft-port", fmt.Sprint(ps[1]), "--gossip-port", fmt.Sprint(ps[2])}
	}
	join := func(dir, name, token string) []string {
		return append(append([]string{"agent", "--name", name, "--data-dir", dir}, port()...), "--join", a.GossipAddr(), "--token", token, "--gpus", "1")
	}
	if out := agentStartFails(t, join(other, "n5", tok.Token)...); !strings.Contains(out, "join token is not valid") {
		t.Errorf("second use of a one-use token: %s; want refused", lastLines(out, 3))
	}
	// An expired token.
	var short api.JoinTokenResponse
	jsonOf(t, a, &short, "join-token", "create", "--ttl", "1s")
	time.Sleep(1500 * time.Millisecond)
	if out := agentStartFails(t, join(t.TempDir(), "n5", short.Token)...); !strings.Contains(out, "join token is not valid") {
		t.Errorf("expired token: %s; want refused", lastLines(out, 3))
	}
	// A token naming another CA: the joiner trusts no server.
	fresh, _ := pki.ParseJoinToken(tok.Token)
	fresh.CAFingerprint = strings.Repeat("0", 64)
	if out := agentStartFails(t, join(t.TempDir(), "n5", fresh.String())...); !strings.Contains(out, "fingerprint") {
		t.Errorf("token with another CA's fingerprint: %s; want the server refused", lastLines(out, 3))
	}
	// A valid token cannot certify a name that is up: it would let the
	// holder act as that node.
	var again api.JoinTokenResponse
	jsonOf(t, a, &again, "join-token", "create")
	if out := agentStartFails(t, join(t.TempDir(), "n2", again.Token)...); !strings.Contains(out, "a node of that name is up") {
		t.Errorf("join as an existing node's name: %s; want refused", lastLines(out, 3))
	}
	// Only root creates tokens.
	ctx := context.Background()
	if _, err := a.Client().WithIdentity(api.Identity{User: "ada", UID: 1000, GID: 1000}).Do(ctx, "POST", "/v1/join-tokens", api.JoinTokenRequest{}, nil); !strings.Contains(fmt.Sprint(err), "only root") {
		t.Errorf("join-token create as uid 1000 = %v; want refused", err)
	}

	// Revoke n4: its certificate no longer opens a connection to anyone.
	mustShoal(t, a, "node", "revoke", "n4")
	tlsDir := filepath.Join(n4.DataDir, "tls")
	for _, peer := range c.Agents[:3] {
		url := fmt.Sprintf("https://%s/v1/internal/logs/1", peer.HTTPAddr())
		// Each replica refuses it once it has applied the revocation.
		eventually(t, 10*time.Second, "revoked n4 refused at "+peer.Name, func() error {
			out, err := osexec.Command("curl", "-sS", "--max-time", "10", "-k", "--cert", filepath.Join(tlsDir, "node.pem"),
				"--key", filepath.Join(tlsDir, "node-key.pem"), "-o", "/dev/null", "-w", "%{http_code}", url).CombinedOutput()
			if err == nil && strings.HasPrefix(string(out), "2") {
				return fmt.Errorf("revoked n4's certificate at %s: %s", url, out)
			}
			return nil
		})
	}
	eventually(t, 30*time.Second, "n4 out of raft and down", func() error {
		n := nodesByName(t, a)["n4"]
		if n.Raft != "none" || n.State != "DOWN" {
			return fmt.Errorf("n4: raft %s, state %s", n.Raft, n.State)
		}
		return nil
	})
}

// TestCertificateRenewal (issue 12): with one-minute certificates, every
// node renews its own before it expires, through the leader, while a job
// runs; the job completes in its first run and the cluster goes on taking
// work with the new certificates.
func TestCertificateRenewal(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	start := time.Now()
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1, CertLifetime: time.Minute})
	a := c.Agents[0]
	var before []string
	for _, ag := range c.Agents {
		before = append(before, nodeCertOf(t, ag))
	}
	id := submit(t, a, "--nodes", "3", "--gpus-per-node", "1", "--", "sleep", "50")
	eventually(t, 90*time.Second, "every node renewed its certificate", func() error {
		for i, ag := range c.Agents {
			if nodeCertOf(t, ag) == before[i] {
				return fmt.Errorf("%s still has its first certificate", ag.Name)
			}
		}
		return nil
	})
	j := waitJob(t, a, id, 90*time.Second)
	if j.State != "COMPLETED" || j.RestartCount != 0 {
		t.Errorf("job across renewals = %s after %d restarts; want COMPLETED in its first run", j.State, j.RestartCount)
	}
	// Past the first certificates' expiry, the cluster still works.
	time.Sleep(time.Until(start.Add(70 * time.Second)))
	id2 := submit(t, c.Agents[2], "--nodes", "3", "--", "true")
	if j := waitJob(t, a, id2, 30*time.Second); j.State != "COMPLETED" {
		t.Errorf("job after renewal = %s; want COMPLETED", j.State)
	}
}

// TestGossipKeyRotation (issue 12): root rotates the gossip key in three
// steps under a running job; every node follows, no member is lost, the
// job finishes in its first run, every node's key file ends with only the
// new key, and a node that joins afterwards with a token gets it.
func TestGossipKeyRotation(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 4, Initial: 3, GPUsPerNode: 1})
	a := c.Agents[0]
	var ring api.Keyring
	eventually(t, 20*time.Second, "the replicated keyring", func() error {
		jsonOf(t, a, &ring, "keyring", "list")
		if len(ring.Cluster) != 1 {
			return fmt.Errorf("keyring %+v", ring)
		}
		return nil
	})
	old := ring.Cluster[0]
	id := submit(t, a, "--nodes", "3", "--gpus-per-node", "1", "--", "sleep", "8")
	newKey := strings.TrimSpace(mustShoal(t, a, "keyring", "generate"))
	// Each step reaches every node before the next: what an operator
	// checks with `shoal keyring list` on the nodes.
	allHave := func(want []string) {
		t.Helper()
		eventually(t, 20*time.Second, fmt.Sprintf("every node's keyring = %d keys", len(want)), func() error {
			for _, ag := range c.Agents[:3] {
				var r api.Keyring
				jsonOf(t, ag, &r, "keyring", "list")
				if strings.Join(r.Local, ",") != strings.Join(want, ",") {
					return fmt.Errorf("%s: %v", ag.Name, r.Local)
				}
			}
			return nil
		})
	}
	mustShoal(t, a, "keyring", "install", newKey)
	allHave([]string{old, newKey})
	mustShoal(t, c.Agents[1], "keyring", "use", newKey)
	allHave([]string{newKey, old})
	if r := shoal(t, a, "keyring", "remove", newKey); r.code == 0 || !strings.Contains(r.stderr, "primary") {
		t.Errorf("remove the primary: exit %d %q; want refused", r.code, r.stderr)
	}
	mustShoal(t, a, "keyring", "remove", old)
	allHave([]string{newKey})
	// The key file is written after the keyring in memory changes (the
	// keyring follower's act): wait for it rather than read it once.
	eventually(t, 20*time.Second, "every key file with only the new key", func() error {
		for _, ag := range c.Agents[:3] {
			data, err := os.ReadFile(filepath.Join(ag.DataDir, "tls", "gossip.key"))
			if err != nil || strings.TrimSpace(string(data)) != newKey {
				return fmt.Errorf("%s gossip.key = %q, %v; want only the new key", ag.Name, data, err)
			}
		}
		return nil
	})
	members := func() string {
		ms, err := a.Client().Members(t.Context())
		if err != nil {
			return err.Error()
		}
		var alive []string
		for _, m := range ms {
			if m.Status == "alive" {
				alive = append(alive, m.Name)
			}
		}
		return strings.Join(alive, ",")
	}
	if got := members(); got != "n1,n2,n3" {
		t.Errorf("alive members after the rotation: %s; want n1,n2,n3", got)
	}
	if j := waitJob(t, a, id, 60*time.Second); j.State != "COMPLETED" || j.RestartCount != 0 {
		t.Errorf("job across the rotation = %s after %d restarts; want COMPLETED in its first run", j.State, j.RestartCount)
	}
	// A node joining now gets the new keyring with its certificate.
	var tok api.JoinTokenResponse
	jsonOf(t, a, &tok, "join-token", "create")
	n4 := c.Agents[3]
	if err := os.RemoveAll(filepath.Join(n4.DataDir, "tls")); err != nil {
		t.Fatal(err)
	}
	n4.Args = append(append([]string{}, n4.Args...), "--token", tok.Token)
	if err := c.StartAgent(3); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "n4 a gossip member", func() error {
		if got := members(); got != "n1,n2,n3,n4" {
			return fmt.Errorf("alive: %s", got)
		}
		return nil
	})
}
