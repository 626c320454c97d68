package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestUserTokens (issue 12): a token root made with `shoal token create
// --user nobody` lets a client that reaches an agent over the network act
// as nobody, and only as nobody: its job runs with nobody's uid, it cannot
// cancel root's job or drain a node; a tampered, an expired and a revoked
// token get 401.
func TestUserTokens(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 1})
	a := c.Agents[0]
	tok := userToken(t, a, "nobody")
	ca := filepath.Join(c.CAPaths().CA)
	remote := func(token string, args ...string) cliResult {
		t.Helper()
		env := []string{"SHOAL_CA_CERT=" + ca, "SHOAL_TOKEN=" + token, "SHOAL_DATA_DIR=/nonexistent"}
		return runEnv(t, env, shoalBin, append([]string{"--addr", "https://" + c.Agents[1].HTTPAddr()}, args...)...)
	}
	// n2's replica learns the token key a moment after n1 made the token.
	eventually(t, 20*time.Second, "n2 accepting the token", func() error {
		if r := remote(tok.Token, "status"); r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		if r := remote(tok.Token, "queue"); r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		return nil
	})
	r := remote(tok.Token, "submit", "--parsable", "--chdir", "/tmp", "--", "id", "-u")
	if r.code != 0 {
		t.Fatalf("submit with a token: exit %d %s", r.code, r.stderr)
	}
	var id uint64
	fmt.Sscan(r.stdout, &id)
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" || j.User != "nobody" {
		t.Fatalf("job %d = %s as %s; want COMPLETED as nobody", id, j.State, j.User)
	}
	if r := remote(tok.Token, "logs", fmt.Sprint(id)); r.code != 0 || strings.TrimSpace(r.stdout) != "65534" {
		t.Errorf("logs with the token: exit %d %q %q; want 65534", r.code, r.stdout, r.stderr)
	}
	roots := submit(t, a, "--", "sleep", "30")
	if r := remote(tok.Token, "cancel", fmt.Sprint(roots)); r.code == 0 || !strings.Contains(r.stderr, "only its owner, root or an operator") {
		t.Errorf("cancel root's job with nobody's token: exit %d %q; want refused", r.code, r.stderr)
	}
	if r := remote(tok.Token, "logs", fmt.Sprint(roots)); r.code == 0 {
		t.Errorf("logs of root's job with nobody's token: exit 0; want refused")
	}
	if r := remote(tok.Token, "drain", "n2", "--reason", "x"); r.code == 0 || !strings.Contains(r.stderr, "only root") {
		t.Errorf("drain with nobody's token: exit %d %q; want refused", r.code, r.stderr)
	}
	mustShoal(t, a, "cancel", fmt.Sprint(roots))

	parts := strings.Split(tok.Token, ".")
	tampered := parts[0] + "." + strings.Replace(parts[1], parts[1][:4], "AAAA", 1) + "." + parts[2]
	if r := remote(tampered, "queue"); r.code == 0 || !strings.Contains(r.stderr, "user token is not valid") {
		t.Errorf("tampered token: exit %d %q; want 401", r.code, r.stderr)
	}
	var short api.UserTokenResponse
	jsonOf(t, a, &short, "token", "create", "--user", "nobody", "--ttl", "1s")
	time.Sleep(1500 * time.Millisecond)
	if r := remote(short.Token, "queue"); r.code == 0 || !strings.Contains(r.stderr, "expired") {
		t.Errorf("expired token: exit %d %q; want 401", r.code, r.stderr)
	}
	mustShoal(t, a, "token", "revoke", tok.Token)
	eventually(t, 10*time.Second, "the revoked token refused", func() error {
		if r := remote(tok.Token, "queue"); r.code == 0 || !strings.Contains(r.stderr, "revoked") {
			return fmt.Errorf("exit %d %q", r.code, r.stderr)
		}
		return nil
	})
	// Only root makes tokens, and not through a token of its own making
	// for another user.
	if r := remote(short.Token, "token", "create", "--user", "root"); r.code == 0 {
		t.Errorf("token create through a user's token: exit 0; want refused")
	}
}
