package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/localcluster"
)

// srunIn runs the srun shim with stdin and env, bounded by a minute.
func (s *slurmShims) srunIn(stdin io.Reader, env []string, args ...string) cliResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, filepath.Join(s.dir, "srun"), args...)
	cmd.Env = append(append(os.Environ(), s.env...), env...)
	cmd.Stdin = stdin
	return runCmd(s.t, cmd)
}

// TestSrunStdin: srun relays its own stdin, as Slurm's (--input=all, the
// default): to every task of a step on two nodes, to one task with -i N
// (the others read /dev/null), intact for several MB, with its end as
// the tasks' EOF; srun whose stdin never ends returns once its tasks do;
// and srun outside an allocation relays it to its job's tasks.
func TestSrunStdin(t *testing.T) {
	_, sh := startWithShims(t, localcluster.Options{Nodes: 2})
	work := t.TempDir()
	id := sh.allocation("-N2", "--chdir", work)
	inJob := []string{"SLURM_JOB_ID=" + fmt.Sprint(id)}

	// Every task reads it, to its end.
	r := sh.srunIn(strings.NewReader("hello\n"), inJob, "-N2", "-n2", "--chdir", work, "cat")
	if r.code != 0 || r.stdout != "hello\nhello\n" {
		t.Errorf("echo hello | srun -N2 -n2 cat: exit %d, stdout %q, stderr %s; want hello twice", r.code, r.stdout, r.stderr)
	}

	// -i 1: task 1 alone.
	r = sh.srunIn(strings.NewReader("a\nb\n"), inJob, "-N2", "-n2", "-i", "1", "--chdir", work, "-l",
		"sh", "-c", `echo "read=[$(tr '\n' ,)]"`)
	if r.code != 0 || !strings.Contains(r.stdout, "1: read=[a,b,]") || !strings.Contains(r.stdout, "0: read=[]") {
		t.Errorf("srun -i 1: exit %d, stdout %q, stderr %s; want task 1 to read a and b, task 0 nothing", r.code, r.stdout, r.stderr)
	}

	// Several MB, intact on each node.
	big := make([]byte, 6<<20)
	rand.Read(big)
	sum := sha256.Sum256(big)
	want := hex.EncodeToString(sum[:])
	r = sh.srunIn(bytes.NewReader(big), inJob, "-N2", "-n2", "--chdir", work, "sh", "-c", "sha256sum | cut -d' ' -f1")
	if r.code != 0 || r.stdout != want+"\n"+want+"\n" {
		t.Errorf("srun of %d bytes: exit %d, stdout %q, stderr %s; want %s twice", len(big), r.code, r.stdout, r.stderr, want)
	}

	// From a file (srun ... < file): the same bytes.
	file := filepath.Join(work, "big.bin")
	if err := os.WriteFile(file, big, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	r = sh.srunIn(f, inJob, "-N2", "-n2", "--chdir", work, "sh", "-c", "sha256sum | cut -d' ' -f1")
	f.Close()
	if r.code != 0 || r.stdout != want+"\n"+want+"\n" {
		t.Errorf("srun < file: exit %d, stdout %q, stderr %s; want %s twice", r.code, r.stdout, r.stderr, want)
	}

	// A stdin that never ends: srun returns once its tasks, which do not
	// read it, have.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	r = sh.srunIn(pr, inJob, "-N2", "-n2", "--chdir", work, "echo", "done")
	pr.Close()
	if r.code != 0 || r.stdout != "done\ndone\n" {
		t.Errorf("srun with an open stdin: exit %d, stdout %q, stderr %s; want done twice", r.code, r.stdout, r.stderr)
	}

	// At its end at once, and /dev/null: the tasks read nothing.
	for name, in := range map[string]io.Reader{"empty": strings.NewReader(""), "null": nil} {
		r = sh.srunIn(in, inJob, "-N2", "-n2", "--chdir", work, "sh", "-c", `echo "read=[$(cat)]"`)
		if r.code != 0 || r.stdout != "read=[]\nread=[]\n" {
			t.Errorf("srun with %s stdin: exit %d, stdout %q, stderr %s; want read=[] twice", name, r.code, r.stdout, r.stderr)
		}
	}

	// Outside an allocation: a job of its own.
	sh.must("scancel", fmt.Sprint(id))
	r = sh.srunIn(strings.NewReader("hello\n"), []string{"SLURM_JOB_ID=", "SHOAL_JOB_ID="}, "-N2", "--chdir", work, "cat")
	if r.code != 0 || r.stdout != "hello\nhello\n" {
		t.Errorf("echo hello | srun -N2 cat (own job): exit %d, stdout %q, stderr %s; want hello twice", r.code, r.stdout, r.stderr)
	}
}

// TestSrunStdinOlderCluster: while a server of the cluster speaks a
// protocol older than the stdin relay's (a rolling upgrade), srun starts
// its step without relaying, as before (the tasks read /dev/null), and
// says so.
func TestSrunStdinOlderCluster(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3})
	a := c.Agents[0]
	restartOlder(t, c, "3")
	sh := newSlurmShims(t, a)
	work := t.TempDir()
	id := sh.allocation("-N1", "-w", a.Name, "--chdir", work)
	eventually(t, 60*time.Second, "srun without the relay", func() error {
		r := sh.srunIn(strings.NewReader("hello\n"), []string{"SLURM_JOB_ID=" + fmt.Sprint(id)}, "--chdir", work, "sh", "-c", `echo "read=[$(cat)]"`)
		if r.code != 0 || r.stdout != "read=[]\n" || !strings.Contains(r.stderr, "cannot relay srun's stdin") {
			return fmt.Errorf("exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
		}
		return nil
	})
}

// TestSrunStdinAgentRestart: srun's stdin survives the agent of its
// tasks' node restarting while srun sends (stopped with
// --keep-tasks-on-stop, or killed: the supervisor and the rank run on),
// and srun's own agent being killed and restarted: srun connects again
// and resumes where the supervisor's delivery stopped, and the task
// reads every byte once, in order.
func TestSrunStdinAgentRestart(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, ExtraArgs: []string{"--lease-ttl", "10s", "--keep-tasks-on-stop"}})
	victim := nonLeader(t, c)
	own := (victim + 1) % len(c.Agents) // srun's agent
	sh := newSlurmShims(t, c.Agents[own])
	work := t.TempDir()
	id := sh.sbatch("-N1", "-w", c.Agents[victim].Name, "--chdir", work, "--wrap", "sleep 600")
	t.Cleanup(func() { sh.run("scancel", fmt.Sprint(id)) })
	waitState(t, c.Agents[own], id, "RUNNING", "")
	for _, tc := range []struct {
		name    string
		stopped int
		stop    func() error
	}{
		{"keep-tasks-on-stop", victim, func() error { return c.StopAgent(victim, 10*time.Second) }},
		{"kill -9", victim, func() error { return c.Kill(victim) }},
		{"srun's agent killed", own, func() error { return c.Kill(own) }},
	} {
		t.Run(tc.name, func(t *testing.T) { testSrunStdinRestart(t, c, victim, tc.stopped, sh, id, tc.stop) })
	}
}

// testSrunStdinRestart sends 12 MiB through srun to a step of job id on
// c's agent victim's node, stopping agent stopped with stop mid-stream
// and restarting it.
func testSrunStdinRestart(t *testing.T, c *localcluster.Cluster, victim, stopped int, sh *slurmShims, id uint64, stop func() error) {
	work := t.TempDir()
	logPattern := filepath.Join(c.Agents[victim].DataDir, "exec", "jobs", "*", task.StepdLog)
	earlier, _ := filepath.Glob(logPattern) // earlier steps' supervisors
	big := make([]byte, 12<<20)
	rand.Read(big)
	sum := sha256.Sum256(big)
	want := hex.EncodeToString(sum[:])
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The task keeps what it read so far in part.bin: the test sees the
	// stream under way on the node before it stops the agent.
	part := filepath.Join(work, "part.bin")
	cmd := osexec.CommandContext(ctx, filepath.Join(sh.dir, "srun"), "--chdir", work,
		"sh", "-c", "tee part.bin | sha256sum | cut -d' ' -f1")
	cmd.Env = append(append(os.Environ(), sh.env...), "SLURM_JOB_ID="+fmt.Sprint(id))
	cmd.Stdin = pr
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	half := len(big) / 2
	if _, err := pw.Write(big[:half]); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the first MiB on the node", func() error {
		if fi, err := os.Stat(part); err != nil || fi.Size() < 1<<20 {
			return fmt.Errorf("part.bin: %v", err)
		}
		return nil
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// The rest goes while the agent is away: srun holds what it can
	// (its window), the pipe the rest.
	wrote := make(chan error, 1)
	go func() {
		_, err := pw.Write(big[half:])
		pw.Close()
		wrote <- err
	}()
	if err := c.Restart(stopped); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *osexec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatalf("srun did not end; stderr %s", stderr.String())
	}
	if err := <-wrote; err != nil {
		t.Errorf("write the second half: %v", err)
	}
	if cmd.ProcessState.ExitCode() != 0 || strings.TrimSpace(stdout.String()) != want {
		fi, _ := os.Stat(part)
		t.Errorf("srun across the restart: exit %d, stdout %q, stderr %s, part.bin %v bytes; want %s (%d bytes)",
			cmd.ProcessState.ExitCode(), stdout.String(), stderr.String(), fi.Size(), want, len(big))
	}
	// The step's supervisor saw a second connection take up the stream.
	logs, _ := filepath.Glob(logPattern)
	resumed := false
	for _, l := range logs {
		if slices.Contains(earlier, l) {
			continue
		}
		b, _ := os.ReadFile(l)
		if regexp.MustCompile(`stdin relayed.* from=[1-9]`).Match(b) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("no supervisor log (of %d) shows the stream taken up again after a break: %v", len(logs), logs)
	}
}
