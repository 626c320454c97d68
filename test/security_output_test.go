package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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

// Issue 12, holes 5 and 6, attacked by a real unprivileged user through
// the real CLI and the agent's Unix socket: job output is written and
// read back as the job's user and only from the file the task wrote, and
// no root process of the agent → supervisor → task namespace helper
// chain runs with the job's environment.

// secUser is a local user created for these tests.
type secUser struct {
	name     string
	uid, gid int
}

// mustRoot fails a test that needs root (to run agents that switch users,
// and to create a user); only -short skips it.
func mustRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root (-short)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root to create a user and run agents that switch to it: run as root, or with -short")
	}
}

// newSecUser creates a local user without a home directory (once per
// name; one left by an earlier run is reused) and removes it at the end
// if it created it.
func newSecUser(t *testing.T, name string) secUser {
	t.Helper()
	if _, err := osexec.Command("id", "-u", name).Output(); err != nil {
		out, err := osexec.Command("useradd", "--no-create-home", "--home-dir", "/nonexistent",
			"--shell", "/usr/sbin/nologin", "--user-group", name).CombinedOutput()
		if err != nil {
			t.Fatalf("useradd %s: %v: %s", name, err, out)
		}
		t.Cleanup(func() {
			if out, err := osexec.Command("userdel", name).CombinedOutput(); err != nil {
				t.Logf("userdel %s: %v: %s", name, err, out)
			}
		})
	}
	id := func(flag string) int {
		out, err := osexec.Command("id", flag, name).Output()
		if err != nil {
			t.Fatalf("id %s %s: %v", flag, name, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("id %s %s: %q", flag, name, out)
		}
		return n
	}
	return secUser{name: name, uid: id("-u"), gid: id("-g")}
}

// run runs the shoal CLI as u against agent a, with a clean environment
// (env added) in dir, bounded to a minute: the agent learns who u is from
// the socket's peer credentials.
func (u secUser) run(t *testing.T, a *localcluster.Agent, dir string, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append([]string{"--reuid=" + strconv.Itoa(u.uid), "--regid=" + strconv.Itoa(u.gid), "--init-groups", "--",
		shoalBin, "--data-dir", a.DataDir}, args...)
	cmd := osexec.CommandContext(ctx, "setpriv", argv...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "USER=" + u.name, "LOGNAME=" + u.name}, env...)
	cmd.Dir = dir
	return runCmd(t, cmd)
}

// batch submits a batch job as u and returns its id.
func (u secUser) batch(t *testing.T, a *localcluster.Agent, dir string, args ...string) uint64 {
	t.Helper()
	r := u.run(t, a, dir, nil, append([]string{"batch", "--parsable"}, args...)...)
	if r.code != 0 {
		t.Fatalf("shoal batch %q as %s: exit %d\nstdout: %s\nstderr: %s", args, u.name, r.code, r.stdout, r.stderr)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(r.stdout), 10, 64)
	if err != nil {
		t.Fatalf("shoal batch --parsable printed %q: want a job id", r.stdout)
	}
	return id
}

// secDirs makes what a user needs to reach: the shoal binary and the
// agents' sockets (the directories above them, the tests' own 0700 ones,
// become traversable) and a work directory of u's own under a new directory,
// which it returns with that directory.
func secDirs(t *testing.T, c *localcluster.Cluster, u secUser) (base, work string) {
	t.Helper()
	// The binary, which the job's srun and the user's CLI run as u.
	if err := os.Chmod(filepath.Dir(shoalBin), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Agents {
		for d := filepath.Dir(a.DataDir); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	base = sharedTempDir(t, "shoal-sec-", 0o755)
	work = filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	return base, work
}

// rootSecret writes a file only root can read, with a unique content.
func rootSecret(t *testing.T, dir string) (path, content string) {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	content = "TOP-SECRET-" + hex.EncodeToString(b) + "\n"
	path = filepath.Join(dir, "secret")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// TestSecurityJobOutput (issue 12, hole 5): a job cannot make the root
// agent write or reveal a file its user could not. --output /etc/shadow
// fails the job, with the reason in `shoal logs` and nothing of the file;
// an output file swapped for a link to, or a link of, a root file after
// the task wrote it is not read back.
func TestSecurityJobOutput(t *testing.T) {
	mustRoot(t)
	u := newSecUser(t, "shoal-sec-out")
	c := startCluster(t, localcluster.Options{Nodes: 1})
	a := c.Agents[0]
	base, work := secDirs(t, c, u)

	t.Run("shadow", func(t *testing.T) {
		shadowBefore, err := os.ReadFile("/etc/shadow")
		if err != nil {
			t.Fatalf("read /etc/shadow: %v", err)
		}
		id := u.batch(t, a, work, "--output", "/etc/shadow", "--wrap", "echo pwned")
		j := waitJob(t, a, id, 90*time.Second)
		if j.State != "FAILED" {
			t.Errorf("job %d with --output /etc/shadow: %s (exit %d); want FAILED", id, j.State, j.ExitCode)
		}
		if after, err := os.ReadFile("/etc/shadow"); err != nil || !bytes.Equal(after, shadowBefore) {
			t.Fatalf("/etc/shadow changed (err %v)", err)
		}
		for _, who := range []string{u.name, "root"} {
			var r cliResult
			if who == "root" {
				r = shoal(t, a, "logs", strconv.FormatUint(id, 10), "--stderr")
			} else {
				r = u.run(t, a, work, nil, "logs", strconv.FormatUint(id, 10), "--stderr")
			}
			all := r.stdout + r.stderr
			assertNoShadow(t, all, shadowBefore)
			if !strings.Contains(all, "/etc/shadow") || !strings.Contains(all, "permission denied") {
				t.Errorf("shoal logs %d as %s says no why: exit %d\nstdout: %s\nstderr: %s", id, who, r.code, r.stdout, r.stderr)
			}
		}
	})

	t.Run("swapped", func(t *testing.T) {
		secret, content := rootSecret(t, base)
		out := filepath.Join(work, "job.out")
		id := u.batch(t, a, work, "--output", out, "--wrap", "echo written by the task")
		if j := waitJob(t, a, id, 90*time.Second); j.State != "COMPLETED" {
			t.Fatalf("job %d: %s (exit %d); want COMPLETED", id, j.State, j.ExitCode)
		}
		logs := func(stage string) string {
			t.Helper()
			r := u.run(t, a, work, nil, "logs", strconv.FormatUint(id, 10), "--stderr")
			if r.code != 0 {
				t.Fatalf("%s: shoal logs %d: exit %d: %s", stage, id, r.code, r.stderr)
			}
			all := r.stdout + r.stderr
			if strings.Contains(all, strings.TrimSpace(content)) {
				t.Fatalf("%s: shoal logs returned the root file's content:\n%s", stage, all)
			}
			return all
		}
		if got := logs("before the swap"); !strings.Contains(got, "written by the task") {
			t.Fatalf("shoal logs %d before the swap = %q; want the task's output", id, got)
		}
		swaps := []struct {
			name string
			mk   func(tmp string) error
			want string // in the logs' error
		}{
			{"symlink to a root file", func(tmp string) error { return os.Symlink(secret, tmp) }, "symbolic link"},
			// A hard link is the root file itself (the user could not make
			// one, root can): it is read, if at all, as the user.
			{"hard link of a root file", func(tmp string) error { return os.Link(secret, tmp) }, "unavailable"},
			{"another file", func(tmp string) error { return os.WriteFile(tmp, []byte(content), 0o644) }, "replaced"},
		}
		for _, s := range swaps {
			tmp := out + ".new"
			if err := s.mk(tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, out); err != nil {
				t.Fatal(err)
			}
			got := logs(s.name)
			if !strings.Contains(got, s.want) {
				t.Errorf("after the output became a %s, shoal logs says %q; want %q", s.name, got, s.want)
			}
		}
	})
}

// assertNoShadow fails if text holds any entry of the shadow file (and
// names only the entry's user: the failure must not leak it further).
func assertNoShadow(t *testing.T, text string, shadow []byte) {
	t.Helper()
	for line := range strings.SplitSeq(string(shadow), "\n") {
		if line != "" && strings.Contains(text, line) {
			name, _, _ := strings.Cut(line, ":")
			t.Fatalf("shoal logs returned /etc/shadow's entry of %s (%d bytes of output)", name, len(text))
		}
	}
}

// preloadC is a library that leaves a marker file named after the
// process's effective uid each time a process loads it; MARKDIR is set
// at build time.
const preloadC = `#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void) {
	char path[4096], exe[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	snprintf(path, sizeof path, "%s/euid-%d-pid-%d", MARKDIR, (int)geteuid(), (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		write(fd, exe, strlen(exe));
		close(fd);
	}
}
`

// TestSecurityLDPreload (issue 12, hole 6): LD_PRELOAD in a job's
// environment runs in the job's own processes, as its user, and in no
// root process on the way (the supervisor, the task namespace helper:
// the shoal binary, linked dynamically in a cgo build).
func TestSecurityLDPreload(t *testing.T) {
	mustRoot(t)
	if _, err := osexec.LookPath("gcc"); err != nil {
		t.Fatalf("the preload library needs gcc: %v", err)
	}
	u := newSecUser(t, "shoal-sec-env")
	c := startCluster(t, localcluster.Options{Nodes: 1})
	a := c.Agents[0]
	base, work := secDirs(t, c, u)
	if !agentSays(t, a, "tasks run with the node's name as hostname") {
		t.Fatal("task namespaces are off: the root helper this test attacks does not run")
	}

	marks := filepath.Join(base, "marks")
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(marks, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(base, "preload.c")
	if err := os.WriteFile(src, []byte(preloadC), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(base, "preload.so")
	if out, err := osexec.Command("gcc", "-shared", "-fPIC", "-o", lib, fmt.Sprintf("-DMARKDIR=%q", marks), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	if err := os.Chmod(lib, 0o755); err != nil {
		t.Fatal(err)
	}

	// The batch script and a step of it: each goes through the chain.
	env := "ALL,LD_PRELOAD=" + lib + ",LD_LIBRARY_PATH=" + base + ",GODEBUG=inittrace=1"
	id := u.batch(t, a, work, "--export", env, "--output", filepath.Join(work, "env.out"),
		"--wrap", `echo "script uid $(id -u)"; srun sh -c 'echo "step uid $(id -u)"'`)
	j := waitJob(t, a, id, 90*time.Second)
	out, _ := os.ReadFile(filepath.Join(work, "env.out"))
	if j.State != "COMPLETED" {
		t.Fatalf("job %d: %s (exit %d); want COMPLETED\noutput:\n%s", id, j.State, j.ExitCode, out)
	}
	for _, want := range []string{fmt.Sprintf("script uid %d", u.uid), fmt.Sprintf("step uid %d", u.uid)} {
		if !strings.Contains(string(out), want) {
			t.Errorf("job output lacks %q:\n%s", want, out)
		}
	}

	entries, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	asUser := 0
	for _, e := range entries {
		exe, _ := os.ReadFile(filepath.Join(marks, e.Name()))
		switch {
		case strings.HasPrefix(e.Name(), "euid-0-"):
			t.Errorf("the job's LD_PRELOAD ran as root in %s (%s)", exe, e.Name())
		case strings.HasPrefix(e.Name(), fmt.Sprintf("euid-%d-", u.uid)):
			asUser++
		default:
			t.Errorf("the job's LD_PRELOAD ran as another user in %s (%s)", exe, e.Name())
		}
	}
	// The job's own processes load it: the test would prove nothing if
	// the library never loaded at all.
	if asUser == 0 {
		t.Errorf("no process of the job loaded its LD_PRELOAD (marks %v): the test proves nothing", entries)
	}
}

// agentSays reports whether agent a's log has text.
func agentSays(t *testing.T, a *localcluster.Agent, text string) bool {
	t.Helper()
	data, err := os.ReadFile(a.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(data), text)
}
