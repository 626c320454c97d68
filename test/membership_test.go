package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestDeadVoterReplaced: a voter killed for longer than
// --dead-server-grace is removed from raft and a healthy nonvoter is
// promoted, so the cluster keeps three voters.
func TestDeadVoterReplaced(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 4, GPUsPerNode: 2})
	var victim int
	eventually(t, 20*time.Second, "3 voters and a nonvoter", func() error {
		ns := nodesByName(t, c.Agents[0])
		if ns["n4"].Raft != "nonvoter" {
			return fmt.Errorf("n4 is %s", ns["n4"].Raft)
		}
		return nil
	})
	leader := leaderIndex(t, c, 0)
	for i := range 3 {
		if i != leader {
			victim = i
			break
		}
	}
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	dead := c.Agents[victim].Name
	eventually(t, 45*time.Second, "n4 promoted in place of "+dead, func() error {
		ns := nodesByName(t, c.Agents[leader])
		if r := ns["n4"].Raft; r != "voter" {
			return fmt.Errorf("n4 is %s", r)
		}
		if r := ns[dead].Raft; r != "none" {
			return fmt.Errorf("dead %s is still %s", dead, r)
		}
		return nil
	})
	// The cluster still takes writes and runs jobs.
	id := submit(t, c.Agents[leader], "--", "true")
	if j := waitJob(t, c.Agents[leader], id, 30*time.Second); j.State != "COMPLETED" {
		t.Fatalf("job %d = %s; want COMPLETED", id, j.State)
	}
}

// TestLoneAgent: `shoal agent` without --join or --bootstrap-expect is a
// working one-node cluster.
func TestLoneAgent(t *testing.T) {
	ports, err := localcluster.FreePorts("127.0.0.1", 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := osCommand(ctx, "agent", "--data-dir", dir, "--http-port", strconv.Itoa(ports[0]),
		"--raft-port", strconv.Itoa(ports[1]), "--gossip-port", strconv.Itoa(ports[2]), "--gpus", "2", "--dev-timing")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("agent stderr:\n%s", lastLines(stderr.String(), 40))
		}
	}()
	a := &localcluster.Agent{DataDir: dir}
	eventually(t, 20*time.Second, "lone agent leads", func() error {
		r := shoal(t, a, "leader")
		if r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		return nil
	})
	id := submit(t, a, "--gpus-per-node", "2", "--", "/bin/sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" {
		t.Fatalf("job %d = %s; want COMPLETED", id, j.State)
	}
	if out := mustShoal(t, a, "logs", fmt.Sprint(id)); strings.TrimSpace(out) != "0,1" {
		t.Errorf("logs = %q; want 0,1", out)
	}
	// The lone agent made its own CA, and its API on TCP is TLS: a client
	// that trusts that CA may ask its status, but, with no identity the
	// agent can check, not read the queue (issue 12).
	env := []string{"SHOAL_CA_CERT=" + filepath.Join(dir, "tls", "ca.pem")}
	https := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	if r := runEnv(t, env, shoalBin, "--addr", https, "status"); r.code != 0 || !strings.Contains(r.stdout, "Security=tls") {
		t.Errorf("status over HTTPS: exit %d, %q %q; want Security=tls", r.code, r.stdout, r.stderr)
	}
	if r := runEnv(t, env, shoalBin, "--addr", https, "queue", "--all"); r.code == 0 || !strings.Contains(r.stderr, "authentication required") {
		t.Errorf("queue over HTTPS without identity: exit %d, %q %q; want authentication required", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "--addr", "http://127.0.0.1:"+strconv.Itoa(ports[0]), "queue"); r.code == 0 {
		t.Errorf("queue over plain HTTP: exit 0, %q; want refused", r.stdout)
	}
}

// TestDevDetach: `shoal dev --detach` forms a cluster, runs the demo job,
// prints its ranks' output, and `shoal dev stop` removes everything.
func TestDevDetach(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	r := run(t, "--data-dir", dir, "dev", "--detach", "--nodes", "3", "--gpus-per-node", "4", "--leaf-size", "2")
	stopped := false
	defer func() {
		if !stopped {
			run(t, "--data-dir", dir, "dev", "stop")
		}
	}()
	if r.code != 0 {
		t.Fatalf("shoal dev --detach: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"rank 0 of 2", "rank 1 of 2", "MASTER_PORT=295", "CUDA_VISIBLE_DEVICES=0,1,2,3", "JobState=COMPLETED", "shoal dev stop --data-dir " + dir} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("shoal dev output lacks %q:\n%s", want, r.stdout)
		}
	}
	pids, err := os.ReadFile(filepath.Join(dir, "agents.pid"))
	if err != nil {
		t.Fatal(err)
	}
	// The cluster outlives the dev command.
	a := &localcluster.Agent{DataDir: filepath.Join(dir, "n3")}
	mustShoal(t, a, "nodes")

	r = run(t, "--data-dir", dir, "dev", "stop")
	stopped = true
	if r.code != 0 {
		t.Fatalf("shoal dev stop: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after dev stop", dir)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(pids)), "\n") {
		f := strings.Fields(line)
		pid, _ := strconv.Atoi(f[len(f)-1])
		if pid > 0 && processAlive(pid) {
			t.Errorf("agent %s (pid %d) still runs after dev stop", f[0], pid)
		}
	}
}
