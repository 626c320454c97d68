package test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestNonRootAgent (issue 12, holes 7 and 8): an agent running as an
// ordinary user keeps its socket to that user and runs its work; root is
// told the agent takes work only from its own user; another user cannot
// reach it, and the CLI of another user refuses a socket served by neither
// root nor itself. A root agent refuses a data dir another user owns.
func TestNonRootAgent(t *testing.T) {
	mustRoot(t)
	owner := newSecUser(t, "shoalagent")
	other := newSecUser(t, "shoalother")
	base, err := os.MkdirTemp("", "shoal-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	for _, d := range []string{base, filepath.Dir(shoalBin)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, owner.uid, owner.gid); err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts("127.0.0.1", 3)
	if err != nil {
		t.Fatal(err)
	}
	agentArgs := []string{"agent", "--name", "solo", "--data-dir", dir, "--bind", "127.0.0.1",
		"--http-port", strconv.Itoa(ports[0]), "--raft-port", strconv.Itoa(ports[1]), "--gossip-port", strconv.Itoa(ports[2]),
		"--gpus", "1", "--dev-timing", "--task-hostname", "off"}

	// A root agent will not use a data dir its user does not own.
	if r := run(t, agentArgs...); r.code == 0 || !strings.Contains(r.stderr, fmt.Sprintf("owned by uid %d", owner.uid)) {
		t.Errorf("root agent on %s's data dir: exit %d %q; want refused", owner.name, r.code, lastLines(r.stderr, 3))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := osexec.CommandContext(ctx, "setpriv", append([]string{"--reuid=" + strconv.Itoa(owner.uid), "--regid=" + strconv.Itoa(owner.gid),
		"--init-groups", "--", shoalBin}, agentArgs...)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + base}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("agent stderr:\n%s", lastLines(stderr.String(), 30))
		}
	}()
	a := &localcluster.Agent{DataDir: dir}
	eventually(t, 30*time.Second, "the agent leads", func() error {
		if r := owner.run(t, a, base, nil, "leader"); r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		return nil
	})
	sock := filepath.Join(dir, "shoal.sock")
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: %v, %v; want mode 0600", sock, st.Mode().Perm(), err)
	}
	r := owner.run(t, a, base, nil, "submit", "--parsable", "--chdir", base, "--", "id", "-u")
	if r.code != 0 {
		t.Fatalf("submit as the agent's user: exit %d %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	eventually(t, 30*time.Second, "the job's output", func() error {
		r := owner.run(t, a, base, nil, "logs", id)
		if strings.TrimSpace(r.stdout) != strconv.Itoa(owner.uid) {
			return fmt.Errorf("logs: %q %q", r.stdout, r.stderr)
		}
		return nil
	})
	// Root's CLI will not talk to an agent another user serves; a raw
	// client that does is told the agent takes work only from its user.
	if r := shoal(t, a, "queue"); r.code == 0 || !strings.Contains(r.stderr, "neither root nor you") {
		t.Errorf("root's CLI on a non-root agent's socket: exit %d %q; want refused", r.code, r.stderr)
	}
	out, _ := osexec.Command("curl", "-sS", "--max-time", "10", "--unix-socket", sock, "http://unix/v1/jobs").CombinedOutput()
	if !strings.Contains(string(out), "accepts work only from its own user") {
		t.Errorf("root's request through a non-root agent's socket: %q; want refused, saying why", out)
	}
	if r := other.run(t, a, base, nil, "queue"); r.code == 0 || !strings.Contains(r.stderr, "permission denied") {
		t.Errorf("another user through the 0600 socket: exit %d %q; want permission denied", r.code, r.stderr)
	}
	// Were the socket open to all, another user's CLI would still refuse
	// to talk to an agent served by neither root nor itself.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	if r := other.run(t, a, base, nil, "queue"); r.code == 0 || !strings.Contains(r.stderr, "neither root nor you") {
		t.Errorf("another user's CLI on a socket served by %s: exit %d %q; want refused", owner.name, r.code, r.stderr)
	}
}
