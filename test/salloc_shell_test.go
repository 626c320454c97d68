package test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestSallocShell: salloc with no command starts the user's shell ($SHELL)
// on this host, on salloc's terminal, with the allocation's environment,
// driven here through tmux as a user types: the shell sees SLURM_JOB_ID,
// srun inside runs on the allocated nodes, Ctrl-C stops the shell's
// foreground job and not salloc, and `exit 4` ends the shell, releases the
// allocation (the job COMPLETES) and makes salloc exit 4.
func TestSallocShell(t *testing.T) {
	tmuxPath, err := osexec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is needed to drive salloc's shell on a terminal (.ci/run installs it):", err)
	}
	bash, err := osexec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed as the user's shell:", err)
	}
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[1]
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	home := t.TempDir()

	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := osexec.CommandContext(ctx, tmuxPath, append([]string{"-S", sock}, args...)...)
		cmd.Env = append(os.Environ(), "TMUX=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = osexec.CommandContext(ctx, tmuxPath, "-S", sock, "kill-server").Run()
	})
	// The pane stays after salloc, showing its exit code.
	line := fmt.Sprintf(`env SHOAL_DATA_DIR=%s PATH=%s:/usr/bin:/bin SHELL=%s HOME=%s %s -N2 -J shell; echo "salloc exited $?"; sleep 600`,
		a.DataDir, shims, bash, home, filepath.Join(shims, "salloc"))
	tmux("new-session", "-d", "-s", "salloc", "-x", "120", "-y", "30", line)
	screen := func() string { return tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "salloc") }
	waitFor := func(what string, re *regexp.Regexp) []string {
		t.Helper()
		var m []string
		eventually(t, 60*time.Second, what, func() error {
			s := screen()
			if m = re.FindStringSubmatch(s); m == nil {
				return fmt.Errorf("screen:\n%s", s)
			}
			return nil
		})
		return m
	}
	typeLine := func(s string) { tmux("send-keys", "-t", "salloc", "-l", s); tmux("send-keys", "-t", "salloc", "Enter") }

	m := waitFor("salloc's grant", regexp.MustCompile(`salloc: Granted job allocation (\d+)`))
	id, _ := strconv.ParseUint(m[1], 10, 64)
	typeLine(`echo "job=[$SLURM_JOB_ID] nodes=[$SLURM_NNODES]"`)
	waitFor("the shell's SLURM_JOB_ID", regexp.MustCompile(fmt.Sprintf(`job=\[%d\] nodes=\[2\]`, id)))

	typeLine(`srun hostname | sed 's/^/on:/' | sort | tr '\n' ' '; echo`)
	var j api.Job
	jsonOf(t, a, &j, "job", m[1])
	waitFor("srun's tasks on the allocation", regexp.MustCompile(regexp.QuoteMeta("on:"+strings.Join(slices.Sorted(slices.Values(j.Nodes)), " on:")+" ")))

	// Ctrl-C reaches the shell's foreground job, not salloc.
	typeLine(`sleep 301`)
	eventually(t, 30*time.Second, "the shell's sleep", func() error {
		return osexec.Command("pgrep", "-x", "-f", "sleep 301").Run()
	})
	tmux("send-keys", "-t", "salloc", "C-c")
	typeLine(`echo "still [$SLURM_JOB_ID] after $?"`)
	waitFor("the shell after Ctrl-C", regexp.MustCompile(fmt.Sprintf(`(?m)^still \[%d\] after 130`, id)))
	if s := screen(); strings.Contains(s, "salloc exited") {
		t.Fatalf("Ctrl-C ended salloc:\n%s", s)
	}

	typeLine("exit 4")
	waitFor("salloc's exit code", regexp.MustCompile(`(?m)^salloc exited 4$`))
	if s := screen(); !strings.Contains(s, fmt.Sprintf("salloc: Relinquishing job allocation %d", id)) {
		t.Errorf("salloc did not say it released the allocation:\n%s", s)
	}
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" || len(j.Steps) != 1 || j.Steps[0].State != "COMPLETED" {
		t.Errorf("salloc's job %s, steps %+v; want COMPLETED with srun's step COMPLETED", j.State, j.Steps)
	}
}
