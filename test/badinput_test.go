package test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/localcluster"
	"github.com/shoal-sched/shoal/pki"
)

// TestBadInput: every entry point answers bad input with a clear error
// naming the field, and a non-zero exit.
func TestBadInput(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	c := startCluster(t, localcluster.Options{Nodes: 4, GPUsPerNode: 8})
	a := c.Agents[1] // a follower or the leader: both must answer the same
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"zero nodes", []string{"submit", "--nodes", "0", "--", "true"}, []string{"--nodes 0: want at least 1"}},
		{"negative nodes", []string{"submit", "--nodes", "-2", "--", "true"}, []string{"--nodes -2: want at least 1"}},
		{"zero gpus", []string{"submit", "--gpus-per-node", "0", "--", "true"}, []string{"--gpus-per-node 0: want at least 1"}},
		{"negative gpus", []string{"submit", "--gpus-per-node", "-1", "--", "true"}, []string{"--gpus-per-node -1"}},
		{"more nodes than the cluster", []string{"submit", "--nodes", "5", "--", "true"}, []string{"nodes 5", "4 nodes"}},
		{"more gpus than any node", []string{"submit", "--gpus-per-node", "16", "--", "true"}, []string{"gpus_per_node 16", "8 GPUs"}},
		{"empty command", []string{"submit", "--"}, []string{"command: empty"}},
		{"bad time", []string{"submit", "--time", "90x", "--", "true"}, []string{`--time "90x"`, "HH:MM:SS"}},
		{"unknown job", []string{"job", "999"}, []string{"job 999: no such job"}},
		{"cancel unknown job", []string{"cancel", "999"}, []string{"job 999"}},
		{"job id not a number", []string{"job", "abc"}, []string{`job id "abc": want a positive integer`}},
		{"logs of unknown job", []string{"logs", "12345"}, []string{"job 12345: no such job"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := shoal(t, a, tc.args...)
			if r.code == 0 {
				t.Fatalf("shoal %v: exit 0, stdout %q; want an error", tc.args, r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("shoal %v: stderr %q; want it to contain %q", tc.args, r.stderr, w)
				}
			}
		})
	}

	t.Run("malformed JSON", func(t *testing.T) {
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.Socket())
		}}}
		resp, err := hc.Post("http://unix/v1/jobs", "application/json", bytes.NewReader([]byte(`{"nodes": 2, "command": [`)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "malformed JSON") {
			t.Fatalf("POST /v1/jobs with bad JSON = %d %s; want 400 naming malformed JSON", resp.StatusCode, body)
		}
	})

	// A request only a down node could satisfy is accepted and pends with
	// ReqNodeNotAvail; it runs once the node is back.
	t.Run("down node pends with ReqNodeNotAvail", func(t *testing.T) {
		if err := c.Kill(3); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "n4 declared down", func() error {
			if s := nodesByName(t, c.Agents[0])["n4"].State; s != "DOWN" {
				return fmt.Errorf("n4 is %s", s)
			}
			return nil
		})
		id := submit(t, a, "--nodes", "4", "--gpus-per-node", "8", "--", "true")
		waitState(t, a, id, "PENDING", "ReqNodeNotAvail")
		if err := c.Restart(3); err != nil {
			t.Fatal(err)
		}
		if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" {
			t.Errorf("job %d = %s; want COMPLETED once n4 is back", id, j.State)
		}
	})
}

// TestAgentStartErrors: an agent refuses a bad data dir, a data dir in use,
// a data dir of another node, and a name already in the cluster; a join
// address that does not answer is retried, saying so.
func TestAgentStartErrors(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 2})
	ports, err := localcluster.FreePorts("127.0.0.1", 3)
	if err != nil {
		t.Fatal(err)
	}
	portArgs := []string{"--bind", "127.0.0.1", "--http-port", strconv.Itoa(ports[0]),
		"--raft-port", strconv.Itoa(ports[1]), "--gossip-port", strconv.Itoa(ports[2]), "--gpus", "1"}
	agent := func(args ...string) []string { return append(append([]string{"agent"}, portArgs...), args...) }

	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"data dir not writable", agent("--name", "x", "--data-dir", filepath.Join(file, "sub")), "--data-dir " + filepath.Join(file, "sub")},
		{"data dir locked", agent("--name", "n1", "--data-dir", c.Agents[0].DataDir), "locked by another agent"},
		{"name conflict", agent("--name", "n2", "--data-dir", certifiedDir(t, c, "n2"), "--join", c.Agents[0].GossipAddr()), "n2"},
		{"join without a certificate", agent("--name", "n9", "--data-dir", t.TempDir(), "--join", c.Agents[0].GossipAddr()), "no node certificate"},
		{"certificate of another node", agent("--name", "n9", "--data-dir", certifiedDir(t, c, "n8"), "--join", c.Agents[0].GossipAddr()), "names node n8, but this node is --name n9"},
		{"bad name", agent("--name", "bad name!", "--data-dir", t.TempDir()), `--name "bad name!"`},
		{"bad gpus", agent("--name", "x", "--data-dir", t.TempDir(), "--gpus", "many"), "--gpus"},
		{"cpus not the layout's", agent("--name", "x", "--data-dir", t.TempDir(), "--cpus", "12", "--sockets", "2", "--cores-per-socket", "4", "--threads-per-core", "2"),
			"--cpus 12: want --sockets × --cores-per-socket × --threads-per-core = 2×4×2 = 16"},
		{"bad cgroups", agent("--name", "x", "--data-dir", t.TempDir(), "--cgroups", "yes"), `--cgroups "yes": want auto, required or off`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("shoal %v: exit %d, stderr %q; want an error containing %q", tc.args, r.code, lastLines(r.stderr, 5), tc.want)
			}
		})
	}

	t.Run("restarted with another name", func(t *testing.T) {
		if err := c.StopAgent(1, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		r := run(t, agent("--name", "renamed", "--data-dir", c.Agents[1].DataDir)...)
		if r.code == 0 || !strings.Contains(r.stderr, `belongs to node "n2"`) {
			t.Fatalf("agent with another name on n2's data dir: exit %d, stderr %q; want it refused", r.code, lastLines(r.stderr, 5))
		}
	})

	t.Run("join address that does not answer", func(t *testing.T) {
		dead, err := localcluster.FreePorts("127.0.0.1", 1)
		if err != nil {
			t.Fatal(err)
		}
		deadAddr := fmt.Sprintf("127.0.0.1:%d", dead[0])
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dataDir := t.TempDir()
		cmd := osexec.CommandContext(ctx, shoalBin, agent("--name", "lonely", "--data-dir", dataDir, "--join", deadAddr, "--insecure")...)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = cgroup.RemoveIdle(cgroup.AgentKey("lonely", dataDir)) // the killed agent's cgroup tree
		}()
		eventually(t, 15*time.Second, "join retry logged", func() error {
			s := stderr.String()
			if strings.Contains(s, deadAddr) && strings.Count(s, "join") >= 2 {
				return nil
			}
			return fmt.Errorf("stderr so far: %q", lastLines(s, 5))
		})
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// certifiedDir returns a fresh data dir holding a certificate for node
// name from c's CA, and the cluster's gossip key.
func certifiedDir(t *testing.T, c *localcluster.Cluster, name string) string {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.LoadCA(c.CAPaths())
	if err != nil {
		t.Fatal(err)
	}
	p := pki.DefaultPaths(dir)
	p.CAKey = ""
	if _, err := pki.IssueNodeFiles(ca, p, name, nil, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	key, err := pki.LoadGossipKey(c.CAPaths().GossipKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteGossipKey(p.GossipKey, key); err != nil {
		t.Fatal(err)
	}
	return dir
}
