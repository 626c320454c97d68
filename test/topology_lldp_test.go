package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLLDPTopology: agents started with no --switch find their leaf
// switch by themselves from lldpd (issue 17), and a node re-cabled to
// another leaf is seen there within a bound.
//
// The network is network namespaces: three "switches", leafA, leafB and
// spine, each a namespace with a Linux bridge (which, like a real switch,
// does not forward LLDP) and lldpd on its ports under its chassis name,
// announcing the Bridge capability as switches do; an uplink from the
// spine to each leaf joins the bridges into one segment. Each node is a
// namespace whose eth0 is a veth to a port of one leaf, with lldpd and a
// Shoal agent of its own. n1 and n2 start on leafA, n3 on leafB; the
// spine reports its own neighbours (`shoal topology report`, as root
// through an agent's socket), and `shoal topology` shows it above both
// leaves with no --switch-parent anywhere; then n2's cable (its
// switch-side port) moves to leafB.
func TestLLDPTopology(t *testing.T) {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for tool, pkg := range map[string]string{"ip": "iproute2", "lldpd": "lldpd", "lldpcli": "lldpd"} {
		if _, err := osexec.LookPath(tool); err != nil {
			missing = append(missing, fmt.Sprintf("%s (apt-get install -y %s)", tool, pkg))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("TestLLDPTopology needs %s", strings.Join(missing, ", "))
	}
	n := newLLDPNet(t)
	for _, sw := range []string{"leafA", "leafB", "spine"} {
		n.addSwitch(sw)
	}
	n.link("spine", "leafA")
	n.link("spine", "leafB")
	nodes := []struct{ name, leaf string }{{"n1", "leafA"}, {"n2", "leafA"}, {"n3", "leafB"}}
	for i, nd := range nodes {
		n.addNode(nd.name, i+1, nd.leaf)
	}
	for i, nd := range nodes {
		n.startAgent(nd.name, i+1, len(nodes))
	}

	// The first agent's Unix socket answers for the cluster.
	first := n.dataDir("n1")
	want := map[string]string{"n1": "leafA", "n2": "leafA", "n3": "leafB"}
	n.waitSwitches(first, "nodes", want, 90*time.Second)
	n.waitSwitches(first, "members", want, 30*time.Second)

	// No node can see the spine (a bridge does not forward LLDP), and no
	// --switch-parent is given anywhere: the spine's own lldpd reports
	// its neighbours, root running `shoal topology report` in the
	// spine's namespace through n1's socket (no node certificate).
	n.report("spine", first, "leafA", "leafB")
	n.waitTopology(first, "spine\n  leafA: n[1-2]\n  leafB: n3\n", 30*time.Second)

	// Re-cable n2 to leafB: its port leaves leafA's bridge for leafB's.
	n.movePort("n2", "leafA", "leafB")
	want["n2"] = "leafB"
	n.waitSwitches(first, "nodes", want, 60*time.Second)
	n.waitSwitches(first, "members", want, 30*time.Second)
	n.waitTopology(first, "spine\n  leafA: n1\n  leafB: n[2-3]\n", 30*time.Second)
}

// lldpNet is the namespaces, lldpds and agents of TestLLDPTopology; all
// of it goes when the test ends, passed or failed.
type lldpNet struct {
	t      *testing.T
	prefix string // of every namespace, so a crashed run's are recognisable
	dir    string
	procs  []*osexec.Cmd // lldpds and agents, stopped in reverse order
}

func newLLDPNet(t *testing.T) *lldpNet {
	// Not t.TempDir: lldpd drops to its own user, which must reach its
	// control socket, and t.TempDir's directories are root's alone.
	dir, err := os.MkdirTemp("", "shoal-lldp-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := &lldpNet{
		t:      t,
		prefix: "shl" + strconv.FormatInt(int64(os.Getpid()), 36) + "-",
		dir:    dir,
	}
	t.Cleanup(func() {
		n.teardown()
		os.RemoveAll(dir)
	})
	return n
}

func (n *lldpNet) ns(name string) string      { return n.prefix + name }
func (n *lldpNet) dataDir(name string) string { return filepath.Join(n.dir, name) }

// ip runs ip(8), bounded, and fails the test on error.
func (n *lldpNet) ip(args ...string) {
	n.t.Helper()
	if out, err := lldpTestCmd(15*time.Second, "ip", args...); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func lldpTestCmd(d time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	out, err := osexec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// addSwitch makes a switch namespace: bridge br0 and lldpd naming the
// chassis name and, as a switch's does, announcing the Bridge
// capability.
func (n *lldpNet) addSwitch(name string) {
	ns := n.ns(name)
	n.ip("netns", "add", ns)
	n.ip("-n", ns, "link", "add", "br0", "type", "bridge")
	n.ip("-n", ns, "link", "set", "br0", "up")
	n.startLLDPD(name)
	if out, err := lldpTestCmd(5*time.Second, "lldpcli", "-u", n.lldpSocket(name), "configure", "system", "capabilities", "enabled", "bridge"); err != nil {
		n.t.Fatalf("lldpd in %s: capabilities: %v: %s", name, err, out)
	}
}

// report runs `shoal topology report` for switch sw in its namespace,
// through the agent socket of dataDir, until the report names the
// switches want among its neighbours (lldpd needs a moment to hear
// them), or fails after a bound.
func (n *lldpNet) report(sw, dataDir string, want ...string) {
	n.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := lldpTestCmd(30*time.Second, "ip", "netns", "exec", n.ns(sw), shoalBin, "--data-dir", dataDir,
			"topology", "report", "--switch", sw, "--lldp-socket", n.lldpSocket(sw))
		all := err == nil
		for _, w := range want {
			all = all && strings.Contains(out, w)
		}
		if all {
			n.t.Logf("topology report: %s", out)
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("shoal topology report --switch %s: want %v among its switches; last: %v: %s", sw, want, err, out)
		}
		time.Sleep(time.Second)
	}
}

// waitTopology polls `shoal topology` until it prints want, or fails
// after timeout.
func (n *lldpNet) waitTopology(dataDir, want string, timeout time.Duration) {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := lldpTestCmd(30*time.Second, shoalBin, "--data-dir", dataDir, "topology")
		if err == nil && out == strings.TrimSpace(want) {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("shoal topology: want\n%s\nlast (%v):\n%s", want, err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// link joins two switches' bridges (an uplink, so nodes on both reach
// each other).
func (n *lldpNet) link(a, b string) {
	n.ip("link", "add", "up-"+b, "netns", n.ns(a), "type", "veth", "peer", "name", "up-"+a, "netns", n.ns(b))
	n.ip("-n", n.ns(a), "link", "set", "up-"+b, "master", "br0", "up")
	n.ip("-n", n.ns(b), "link", "set", "up-"+a, "master", "br0", "up")
}

// addNode makes node name's namespace, at 10.88.0.<i>, cabled to leaf's
// port "p-<name>", with lldpd.
func (n *lldpNet) addNode(name string, i int, leaf string) {
	ns, port := n.ns(name), "p-"+name
	n.ip("netns", "add", ns)
	n.ip("link", "add", port, "netns", n.ns(leaf), "type", "veth", "peer", "name", "eth0", "netns", ns)
	n.ip("-n", n.ns(leaf), "link", "set", port, "master", "br0", "up")
	n.ip("-n", ns, "addr", "add", fmt.Sprintf("10.88.0.%d/24", i), "dev", "eth0")
	n.ip("-n", ns, "link", "set", "eth0", "up")
	n.ip("-n", ns, "link", "set", "lo", "up")
	n.startLLDPD(name)
}

// movePort re-cables node's port from one switch to the other.
func (n *lldpNet) movePort(node, from, to string) {
	port := "p-" + node
	n.ip("-n", n.ns(from), "link", "set", port, "netns", n.ns(to))
	n.ip("-n", n.ns(to), "link", "set", port, "master", "br0", "up")
}

func (n *lldpNet) lldpSocket(name string) string { return filepath.Join(n.dir, "lldpd-"+name+".sock") }

// startLLDPD runs lldpd in name's namespace, in the foreground (-d) so
// the test owns it, on a control socket of its own (/run is shared by
// the namespaces), announcing name every second.
func (n *lldpNet) startLLDPD(name string) {
	n.t.Helper()
	sock := n.lldpSocket(name)
	logf, err := os.Create(filepath.Join(n.dir, "lldpd-"+name+".log"))
	if err != nil {
		n.t.Fatal(err)
	}
	cmd := osexec.Command("ip", "netns", "exec", n.ns(name), "lldpd", "-d", "-u", sock)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		n.t.Fatalf("start lldpd in %s: %v", name, err)
	}
	n.procs = append(n.procs, cmd)
	go func() { _ = cmd.Wait(); logf.Close() }() // reaps it; ends with it
	// lldpd takes a moment to open its socket.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := lldpTestCmd(5*time.Second, "lldpcli", "-u", sock, "configure", "system", "hostname", name)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("lldpd in %s: control socket %s not answering: %v", name, sock, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := lldpTestCmd(5*time.Second, "lldpcli", "-u", sock, "configure", "lldp", "tx-interval", "1"); err != nil {
		n.t.Fatalf("lldpd in %s: tx-interval: %v: %s", name, err, out)
	}
}

// startAgent starts node name's agent, with no --switch: it must find
// its leaf.
func (n *lldpNet) startAgent(name string, i, expect int) {
	n.t.Helper()
	dir := n.dataDir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		n.t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		n.t.Fatal(err)
	}
	args := append([]string{"netns", "exec", n.ns(name), shoalBin, "agent",
		"--name", name, "--data-dir", dir, "--bind", fmt.Sprintf("10.88.0.%d", i),
		"--insecure", "--gpus", "1", "--cpus", "4", "--bootstrap-expect", strconv.Itoa(expect),
		"--join", "10.88.0.1", "--lldp-socket", n.lldpSocket(name), "--topology-interval", "1s",
	}, testAgentArgs...)
	cmd := osexec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		n.t.Fatalf("start agent %s: %v", name, err)
	}
	n.procs = append(n.procs, cmd)
	go func() { _ = cmd.Wait(); logf.Close() }()
}

// waitSwitches polls `shoal nodes --json` (the nodes' records, which
// their heartbeats update) or `shoal members --json` (what gossip says of
// them) until every node in want is under its switch, or fails after
// timeout.
func (n *lldpNet) waitSwitches(dataDir, what string, want map[string]string, timeout time.Duration) {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		out, err := lldpTestCmd(30*time.Second, shoalBin, "--data-dir", dataDir, what, "--json")
		last = out
		if err == nil {
			var nodes []struct{ Name, Switch string }
			if err := json.Unmarshal([]byte(out), &nodes); err != nil {
				n.t.Fatalf("shoal %s --json: %v\n%s", what, err, out)
			}
			got := map[string]string{}
			for _, nd := range nodes {
				got[nd.Name] = nd.Switch
			}
			if lldpSameSwitches(got, want) {
				n.t.Logf("%s: switches %v after %s", what, got, time.Since(deadline.Add(-timeout)).Round(100*time.Millisecond))
				return
			}
			last = fmt.Sprintf("switches %v", got)
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("shoal %s: nodes under switches %v: not within %s; last: %s", what, want, timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func lldpSameSwitches(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// teardown stops the agents and lldpds (SIGTERM, then SIGKILL), kills
// whatever is left in the namespaces, removes them, and on failure logs
// the agents' and lldpds' log tails.
func (n *lldpNet) teardown() {
	for i := len(n.procs) - 1; i >= 0; i-- {
		lldpStopProc(n.procs[i], 10*time.Second)
	}
	out, _ := lldpTestCmd(15*time.Second, "ip", "netns", "list")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], n.prefix) {
			continue
		}
		if pids, err := lldpTestCmd(15*time.Second, "ip", "netns", "pids", f[0]); err == nil {
			for _, p := range strings.Fields(pids) {
				if pid, err := strconv.Atoi(p); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if out, err := lldpTestCmd(15*time.Second, "ip", "netns", "del", f[0]); err != nil {
			n.t.Errorf("remove namespace %s: %v: %s", f[0], err, out)
		}
	}
	if !n.t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(n.dir, "*", "agent.log"))
	more, _ := filepath.Glob(filepath.Join(n.dir, "lldpd-*.log"))
	for _, l := range append(logs, more...) {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(string(data), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		n.t.Logf("---- %s (tail) ----\n%s", l, strings.Join(lines, "\n"))
	}
}

// stopProc sends SIGTERM, waits up to grace for the process to be gone,
// then SIGKILLs it.
func lldpStopProc(cmd *osexec.Cmd, grace time.Duration) {
	if cmd.Process == nil {
		return
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if processAlive(pid) {
		_ = cmd.Process.Kill()
	}
}
