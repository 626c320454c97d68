package test

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestSrunPty: `srun --pty bash` in a terminal (a detached tmux session of
// a fixed size) gives a bash on a terminal of the remote node: the job's
// environment, a tty, the window's size and its changes, Ctrl-C
// interrupting the foreground command and not bash, and bash's exit code
// as srun's — for a job of srun's own on the other node (the agents relay
// the terminal), and for a step inside salloc, ended with Ctrl-D.
func TestSrunPty(t *testing.T) {
	if _, err := osexec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed (installed by .ci/run): %v", err)
	}
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[1]
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	other := c.Agents[0].Name

	t.Run("own job on the other node", func(t *testing.T) {
		s := newTmux(t, shims, a.DataDir, fmt.Sprintf("srun --pty -w %s bash --norc --noprofile", other))
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
		s.typeLine("exit 3")
		code := s.waitExit()
		t.Logf("screen:\n%s", s.capture())
		if code != "3" {
			t.Errorf("srun exit %s, want bash's 3\n%s", code, s.capture())
		}
	})

	t.Run("step in salloc, Ctrl-D", func(t *testing.T) {
		s := newTmux(t, shims, a.DataDir, "salloc -N2 srun --pty bash --norc --noprofile")
		s.typeLine(`echo "step=$SLURM_JOB_ID.$SLURM_STEP_ID tasks=$SLURM_NTASKS"`)
		s.waitMatch(`step=\d+\.\d+ tasks=1`)
		s.typeLine(`echo "size=$(stty size)"`)
		s.waitMatch(`size=30 100`)
		s.tmux("send-keys", "-t", s.name, "C-d")
		if code := s.waitExit(); code != "0" {
			t.Errorf("salloc exit %s after Ctrl-D, want 0\n%s", code, s.capture())
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

// newTmux starts command (a shell line, with the shims first in PATH and
// the agent's socket) in a new session; its exit code goes to a file.
func newTmux(t *testing.T, shims, dataDir, command string) *tmuxSession {
	t.Helper()
	dir := t.TempDir()
	s := &tmuxSession{t: t, sock: filepath.Join(dir, "tmux.sock"), name: "pty", exitFile: filepath.Join(dir, "exit")}
	script := filepath.Join(dir, "run.sh")
	body := fmt.Sprintf("#!/bin/sh\nexport SHOAL_DATA_DIR=%q PATH=%q TERM=xterm PS1='$ '\n%s\necho $? > %q.tmp && mv %q.tmp %q\n",
		dataDir, shims+":/usr/bin:/bin", command, s.exitFile, s.exitFile, s.exitFile)
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
