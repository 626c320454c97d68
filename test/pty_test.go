package test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
	"github.com/shoal-sched/shoal/pki"
)

// TestSrunPty: `srun --pty bash` in a terminal (a detached tmux session of
// a fixed size) gives a bash on a terminal of the remote node: the job's
// environment, a tty, the window's size and its changes, Ctrl-C
// interrupting the foreground command and not bash, and bash's exit code
// as srun's — for a job of srun's own on the other node (the agents relay
// the terminal), for a step inside salloc, ended with Ctrl-D, and over
// TLS with a user token; another user may not attach.
func TestSrunPty(t *testing.T) {
	if _, err := osexec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed (installed by .ci/run): %v", err)
	}
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[1]
	other := c.Agents[0].Name
	shims, local := shimsOnPath(t, a)

	// A user token for nobody, and a client of n2's HTTPS API with it.
	tok := userToken(t, a, "nobody")
	caPEM, err := os.ReadFile(c.CAPaths().CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	nobody, err := api.NewTLSClient("https://"+a.HTTPAddr(), pki.UserClientConfig(roots))
	if err != nil {
		t.Fatal(err)
	}
	nobody = nobody.WithToken(tok.Token)

	t.Run("own job on the other node", func(t *testing.T) {
		s := newTmux(t, local, fmt.Sprintf("srun --pty -w %s bash --norc --noprofile", other))
		s.typeLine(`echo "id=$SLURM_JOB_ID on=$SLURMD_NODENAME"`)
		m := s.waitMatch(`id=(\d+) on=(\S+)`)
		if m[2] != other {
			t.Errorf("bash runs on %s, want %s (srun -w)", m[2], other)
		}
		s.typeLine("tty")
		s.waitMatch(`(?m)^/dev/pts/\d+`)
		s.typeLine(`echo "size=$(stty size)"`)
		s.waitMatch(`size=30 100`)
		s.tmux("resize-window", "-t", s.name, "-x", "120", "-y", "40")
		s.typeLine(`echo "size2=$(stty size)"`)
		s.waitMatch(`size2=40 120`)
		// Ctrl-C reaches the foreground job, not bash.
		s.typeLine(`sh -c 'trap "echo trapped; exit 9" INT; echo ready; sleep 100'`)
		s.waitMatch(`^ready`)
		s.tmux("send-keys", "-t", s.name, "C-c")
		s.waitMatch(`trapped$`)
		s.typeLine(`echo "after=$((40+2))"`)
		s.waitMatch(`after=42`)
		// Root's terminal is not nobody's.
		var id uint64
		fmt.Sscan(m[1], &id)
		eventually(t, 20*time.Second, "nobody refused root's terminal", func() error {
			conn, err := nobody.AttachPty(context.Background(), id, -1)
			var se *api.StatusError
			if err == nil {
				conn.Close()
				return errors.New("nobody attached to root's terminal")
			}
			if !errors.As(err, &se) || se.Code != http.StatusForbidden {
				return fmt.Errorf("attach as nobody: %v, want 403", err)
			}
			return nil
		})
		s.typeLine("exit 3")
		if code := s.waitExit(); code != "3" {
			t.Errorf("srun exit %s, want bash's 3\n%s", code, s.capture())
		}
	})

	t.Run("step in salloc, Ctrl-D", func(t *testing.T) {
		s := newTmux(t, local, "salloc -N2 srun --pty bash --norc --noprofile")
		s.typeLine(`echo "step=$SLURM_JOB_ID.$SLURM_STEP_ID tasks=$SLURM_NTASKS"`)
		s.waitMatch(`step=\d+\.\d+ tasks=1`)
		s.typeLine(`echo "size=$(stty size)"`)
		s.waitMatch(`size=30 100`)
		s.tmux("send-keys", "-t", s.name, "C-d")
		if code := s.waitExit(); code != "0" {
			t.Errorf("salloc exit %s after Ctrl-D, want 0\n%s", code, s.capture())
		}
	})

	t.Run("a quick command", func(t *testing.T) {
		s := newTmux(t, local, "srun --pty sh -c 'echo quick-$((6*7)); exit 7'")
		if code := s.waitExit(); code != "7" {
			t.Errorf("srun exit %s, want 7\n%s", code, s.capture())
		}
		s.waitMatch(`^quick-42`)
	})

	t.Run("a quick step", func(t *testing.T) {
		s := newTmux(t, local, `salloc -N1 srun --pty sh -c 'echo quick-step-$((2+3)); exit 5'`)
		if code := s.waitExit(); code != "5" {
			t.Errorf("salloc exit %s, want srun's 5\n%s", code, s.capture())
		}
		s.waitMatch(`^quick-step-5`)
	})

	t.Run("input from a pipe", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := osexec.CommandContext(ctx, filepath.Join(shims, "srun"), "--pty", "sh", "-c", `cat; echo "done-$((1+1))"; exit 6`)
		cmd.Env = append(os.Environ(), local...)
		cmd.Stdin = strings.NewReader("piped-line\n")
		r := runCmd(t, cmd)
		if r.code != 6 || !strings.Contains(r.stdout, "piped-line") || !strings.Contains(r.stdout, "done-2") {
			t.Errorf("srun --pty < pipe: exit %d, stdout %q, stderr %q; want 6 with the input echoed and done-2", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("over TLS with a user token", func(t *testing.T) {
		env := []string{"SHOAL_CA_CERT=" + c.CAPaths().CA, "SHOAL_TOKEN=" + tok.Token, "SHOAL_DATA_DIR=/nonexistent", "PATH=/usr/bin:/bin"}
		s := newTmux(t, env, fmt.Sprintf("%s --addr https://%s run --pty -w %s --chdir /tmp bash --norc --noprofile", shoalBin, a.HTTPAddr(), other))
		s.typeLine(`echo "uid=$(id -u)"`)
		s.waitMatch(`uid=65534`)
		s.typeLine("exit 5")
		if code := s.waitExit(); code != "5" {
			t.Errorf("shoal run --pty exit %s, want 5\n%s", code, s.capture())
		}
	})
}

// tmuxSession is a command running in a detached tmux session of its own
// server, 100 columns by 30 rows.
type tmuxSession struct {
	t          *testing.T
	sock, name string
	exitFile   string
}

// newTmux starts command (a shell line, with env) in a new session; its
// exit code goes to a file.
func newTmux(t *testing.T, env []string, command string) *tmuxSession {
	t.Helper()
	dir := t.TempDir()
	s := &tmuxSession{t: t, sock: filepath.Join(dir, "tmux.sock"), name: "pty", exitFile: filepath.Join(dir, "exit")}
	script := filepath.Join(dir, "run.sh")
	var exports strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&exports, "export %s=%q\n", k, v)
	}
	body := fmt.Sprintf("#!/bin/sh\n%sexport TERM=xterm PS1='$ '\n%s\necho $? > %q.tmp && mv %q.tmp %q\n",
		exports.String(), command, s.exitFile, s.exitFile, s.exitFile)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = osexec.Command("tmux", "-S", s.sock, "kill-server").Run()
	})
	s.tmux("-f", "/dev/null", "new-session", "-d", "-s", s.name, "-x", "100", "-y", "30", script)
	// The session outlives the command, so the screen can be read at the end.
	s.tmux("set-option", "-t", s.name, "remain-on-exit", "on")
	return s
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := osexec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// typeLine types line and Enter.
func (s *tmuxSession) typeLine(line string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", s.name, "-l", line)
	s.tmux("send-keys", "-t", s.name, "Enter")
}

func (s *tmuxSession) capture() string {
	s.t.Helper()
	return s.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", s.name)
}

// waitMatch waits, bounded, for the screen to show an output line
// matching re (not the line typed) and returns the submatches.
func (s *tmuxSession) waitMatch(re string) []string {
	s.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(60 * time.Second)
	for {
		screen := s.capture()
		for _, line := range strings.Split(screen, "\n") {
			if strings.Contains(line, "echo ") {
				continue // the command typed, not its output
			}
			if m := rx.FindStringSubmatch(line); m != nil {
				return m
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen never showed %q:\n%s", re, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExit waits, bounded, for the command to end and returns its exit
// code.
func (s *tmuxSession) waitExit() string {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(s.exitFile); err == nil {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the command did not end:\n%s", s.capture())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSrunPtyReattach: `srun --pty bash` on another node keeps its
// session while that node's agent restarts, stopped with
// --keep-tasks-on-stop or killed (the supervisor holds the terminal and
// bash runs on): srun's agent answers 502 or 503 while the node's agent
// is away, and srun asks again; what runs meanwhile, and what is typed,
// comes through once srun has attached again, and bash's exit code is
// srun's.
func TestSrunPtyReattach(t *testing.T) {
	if _, err := osexec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed (installed by .ci/run): %v", err)
	}
	c := startCluster(t, localcluster.Options{Nodes: 3, ExtraArgs: []string{"--lease-ttl", "10s", "--keep-tasks-on-stop"}})
	victim := nonLeader(t, c)
	a := c.Agents[(victim+1)%len(c.Agents)] // srun's agent, not restarted
	_, local := shimsOnPath(t, a)
	name := c.Agents[victim].Name
	for _, tc := range []struct {
		name string
		stop func() error
	}{
		{"keep-tasks-on-stop", func() error { return c.StopAgent(victim, 10*time.Second) }},
		{"kill -9", func() error { return c.Kill(victim) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTmux(t, local, fmt.Sprintf("srun --pty -w %s bash --norc --noprofile", name))
			s.typeLine(`echo "before=$((20+1)) on=$SLURMD_NODENAME"`)
			if m := s.waitMatch(`before=21 on=(\S+)`); m[1] != name {
				t.Fatalf("bash runs on %s, want %s (srun -w)", m[1], name)
			}
			// Output the rank writes while its agent is away waits in
			// the terminal. The agent goes once the command runs:
			// bytes on their way through it when it goes are lost, as on
			// any terminal connection that breaks.
			s.typeLine(`echo "started=$((10+1))"; sleep 2; echo "while=$((30+3))"`)
			s.waitMatch(`^started=11`)
			if err := tc.stop(); err != nil {
				t.Fatal(err)
			}
			// Typed while no relay is there.
			s.typeLine(`echo "typed=$((50+5))"`)
			// The agent stays away for several of srun's tries (an agent
			// on a busy machine takes that long to come back): srun's
			// agent answers them 502 (no answer from the node) or 503.
			time.Sleep(2 * time.Second)
			if err := c.Restart(victim); err != nil {
				t.Fatal(err)
			}
			s.waitMatch(`^while=33`)
			s.waitMatch(`^typed=55`)
			s.typeLine(`echo "after=$((40+2))"`)
			s.waitMatch(`^after=42`)
			s.typeLine("exit 3")
			if code := s.waitExit(); code != "3" {
				t.Errorf("srun exit %s, want bash's 3\n%s", code, s.capture())
			}
		})
	}
}
