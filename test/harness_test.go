package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/localcluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Which tests run in parallel: a test whose time is mostly waiting (for
// leases, certificates, elections, a job's sleep) and that touches
// nothing global — no cgroups, network namespaces, nftables, fixed ports
// or environment of this process — calls t.Parallel first, so go test
// runs it beside another such test (up to -parallel, GOMAXPROCS by
// default) after the serial ones. Tests that spend CPU (PyTorch, the
// scale harness) stay serial: beside each other they would only slow
// both down.

// shoalBin is the binary under test, built once by TestMain.
var shoalBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shoal-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "make temp dir:", err)
		os.Exit(1)
	}
	shoalBin = filepath.Join(dir, "shoal")
	build := osexec.Command("go", "build", "-tags", buildTags(), "-o", shoalBin, "../cmd/shoal")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build shoal:", err)
		os.Exit(1)
	}
	// The small Slurm client beside it, as make build installs it: the
	// shim links (install-shims, the agent's shim dir) point at it, so
	// every Slurm command a test runs goes through it.
	build = osexec.Command("go", "build", "-o", filepath.Join(dir, slurm.ShimBinary), "../cmd/shoal/shim")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build "+slurm.ShimBinary+":", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildTags are the tags of the shoal under test: pmix, as make build
// builds it, where libpmix's development files are (pkg-config finds
// them); without them the other tests still run, and TestSrunPMIx fails
// saying what is missing.
func buildTags() string {
	if osexec.Command("pkg-config", "--exists", "pmix").Run() == nil {
		return "pmix"
	}
	return ""
}

// testAgentArgs make agents fast on loopback: short raft timeouts, a 3s
// lease, a 2s kill grace and kill-wait and a 5s dead-server grace.
var testAgentArgs = []string{"--dev-timing", "--heartbeat", "300ms", "--lease-ttl", "3s",
	"--kill-grace", "2s", "--kill-wait", "2s", "--dead-server-grace", "5s", "--log-level", "debug"}

// policyFile writes a queue policy (JSON) to a file of its own, for an
// agent's --policy or shoal policy set, and returns its path.
func policyFile(t *testing.T, policy string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sharedTempDir makes a directory of mode under os.TempDir, named from
// prefix, removed when the test ends: unlike t.TempDir's, whose parent
// is root's alone, other users can reach it.
func sharedTempDir(t *testing.T, prefix string, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// setPolicy puts a queue policy (JSON) in force with shoal policy set
// through a.
func setPolicy(t *testing.T, a *localcluster.Agent, policy string) {
	t.Helper()
	mustShoal(t, a, "policy", "set", policyFile(t, policy))
}

// waitPolicy waits until `shoal policy show` through a mentions text:
// the policy an agent was started with (--policy) is in force.
func waitPolicy(t *testing.T, a *localcluster.Agent, text string) {
	t.Helper()
	eventually(t, 20*time.Second, "the policy in force", func() error {
		if out := mustShoal(t, a, "policy", "show"); !strings.Contains(out, text) {
			return fmt.Errorf("policy: %s", out)
		}
		return nil
	})
}

// waitPolicyFile waits until the policy of the --policy file that a's
// cluster was started with is in force: `shoal policy show` through a
// says a policy is set, and in says it is the file's.
func waitPolicyFile(t *testing.T, a *localcluster.Agent, in func(p api.PolicyResponse) bool) {
	t.Helper()
	eventually(t, 20*time.Second, "the --policy file's policy in force", func() error {
		var p api.PolicyResponse
		jsonOf(t, a, &p, "policy", "show")
		if !p.Set || !in(p) {
			return fmt.Errorf("policy %+v", p)
		}
		return nil
	})
}

// userToken creates a user token for user (an hour long) through a, once
// the cluster can.
func userToken(t *testing.T, a *localcluster.Agent, user string) api.UserTokenResponse {
	t.Helper()
	var tok api.UserTokenResponse
	eventually(t, 20*time.Second, "a user token", func() error {
		r := shoal(t, a, "token", "create", "--user", user, "--ttl", "1h", "--json")
		if r.code != 0 {
			return fmt.Errorf("%s", r.stderr)
		}
		return jsonUnmarshal(r.stdout, &tok)
	})
	return tok
}

// startCluster starts a local cluster that is stopped when the test ends;
// a failing test gets the tail of every agent's log.
func startCluster(t *testing.T, opts localcluster.Options) *localcluster.Cluster {
	t.Helper()
	opts.Binary = shoalBin
	opts.Dir = t.TempDir()
	if opts.LeafSize == 0 {
		opts.LeafSize = 2
	}
	opts.ExtraArgs = append(append([]string{}, testAgentArgs...), opts.ExtraArgs...)
	c, err := localcluster.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		c.Stop(10 * time.Second)
		if t.Failed() {
			dumpLogs(t, c)
		}
	})
	want := opts.Nodes
	if opts.Initial > 0 {
		want = opts.Initial
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx, want); err != nil {
		t.Fatalf("wait for cluster: %v", err)
	}
	return c
}

func dumpLogs(t *testing.T, c *localcluster.Cluster) {
	for _, a := range c.Agents {
		data, err := os.ReadFile(a.LogPath())
		if err != nil {
			continue
		}
		lines := strings.Split(string(data), "\n")
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		t.Logf("---- %s agent.log (tail) ----\n%s", a.Name, strings.Join(lines, "\n"))
	}
}

// cliResult is one run of the shoal CLI.
type cliResult struct {
	stdout, stderr string
	code           int
}

// shoal runs the CLI against agent a (through its Unix socket).
func shoal(t *testing.T, a *localcluster.Agent, args ...string) cliResult {
	t.Helper()
	return run(t, append([]string{"--data-dir", a.DataDir}, args...)...)
}

// run runs the shoal binary with args, bounded to a minute.
func run(t *testing.T, args ...string) cliResult {
	t.Helper()
	return runEnv(t, nil, shoalBin, args...)
}

// runEnv runs a program (the shoal binary, or a shim linked to it) with
// extra environment, bounded to a minute.
func runEnv(t *testing.T, env []string, program string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, program, args...)
	cmd.Env = append(os.Environ(), env...)
	// Killed at the bound, the program may leave children holding its
	// output (salloc's command): stop waiting for them.
	cmd.WaitDelay = 10 * time.Second
	return runCmd(t, cmd)
}

// runCmd runs cmd and returns its output and exit code; a command that
// could not run at all fails the test.
func runCmd(t *testing.T, cmd *osexec.Cmd) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *osexec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	return res
}

// mustShoal runs the CLI and fails the test on a non-zero exit.
func mustShoal(t *testing.T, a *localcluster.Agent, args ...string) string {
	t.Helper()
	r := shoal(t, a, args...)
	if r.code != 0 {
		t.Fatalf("shoal %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// jsonOf runs the CLI with --json and decodes its output into out.
func jsonOf(t *testing.T, a *localcluster.Agent, out any, args ...string) {
	t.Helper()
	stdout := mustShoal(t, a, append(args, "--json")...)
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		t.Fatalf("shoal %s --json: %v\n%s", strings.Join(args, " "), err, stdout)
	}
}

// eventually retries cond until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// submit submits through agent a and returns the job id.
func submit(t *testing.T, a *localcluster.Agent, args ...string) uint64 {
	t.Helper()
	out := mustShoal(t, a, append([]string{"submit", "--parsable"}, args...)...)
	var id uint64
	if _, err := fmt.Sscan(out, &id); err != nil {
		t.Fatalf("submit printed %q: want a job id", out)
	}
	return id
}

// batch submits a batch job with `shoal batch args...` through agent a
// and returns the job id it printed ("Submitted batch job N").
func batch(t *testing.T, a *localcluster.Agent, args ...string) uint64 {
	t.Helper()
	out := mustShoal(t, a, append([]string{"batch"}, args...)...)
	var id uint64
	if _, err := fmt.Sscanf(out, "Submitted batch job %d", &id); err != nil {
		t.Fatalf("shoal batch printed %q; want Submitted batch job N", out)
	}
	return id
}

// waitJob waits until job id reaches a terminal state and returns it.
func waitJob(t *testing.T, a *localcluster.Agent, id uint64, timeout time.Duration) api.Job {
	t.Helper()
	return waitJobWhere(t, a, id, timeout, fmt.Sprintf("job %d to finish", id), func(j api.Job) bool {
		return cluster.JobState(j.State).Terminal()
	})
}

// waitJobWhere waits until job id, read through a, satisfies ok, and
// returns it; a read that fails (an agent busy with an election) is
// tried again, as eventually tries, until timeout.
func waitJobWhere(t *testing.T, a *localcluster.Agent, id uint64, timeout time.Duration, what string, ok func(api.Job) bool) api.Job {
	t.Helper()
	var j api.Job
	eventually(t, timeout, what, func() error {
		r := shoal(t, a, "job", fmt.Sprint(id), "--json")
		if r.code != 0 {
			return fmt.Errorf("shoal job: exit %d: %s", r.code, r.stderr)
		}
		j = api.Job{}
		if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
			return err
		}
		if ok(j) {
			return nil
		}
		return fmt.Errorf("state %s (%s) on %v, elastic %v", j.State, j.Reason, j.Nodes, j.Elastic)
	})
	return j
}

// waitState waits until job id is in state (and, if given, pends with
// reason) and returns it.
func waitState(t *testing.T, a *localcluster.Agent, id uint64, state, reason string) api.Job {
	t.Helper()
	var j api.Job
	eventually(t, 60*time.Second, fmt.Sprintf("job %d %s %s", id, state, reason), func() error {
		jsonOf(t, a, &j, "job", fmt.Sprint(id))
		if j.State != state || (reason != "" && j.Reason != reason) {
			return fmt.Errorf("job %d: %s (%s)", id, j.State, j.Reason)
		}
		return nil
	})
	return j
}

// leaderIndex returns the index of the agent that leads, asking agent from.
func leaderIndex(t *testing.T, c *localcluster.Cluster, from int) int {
	t.Helper()
	var l api.Leader
	jsonOf(t, c.Agents[from], &l, "leader")
	for i, a := range c.Agents {
		if a.Name == l.Name {
			return i
		}
	}
	t.Fatalf("leader %q is not an agent of the cluster", l.Name)
	return -1
}

// restartOlder restarts agent 1 of c, or agent 2 where agent 1 leads
// (asking agent 0), as a server of an older protocol version (its
// --protocol-version): a cluster in the middle of a rolling upgrade.
func restartOlder(t *testing.T, c *localcluster.Cluster, version string) {
	t.Helper()
	old := 1
	if leaderIndex(t, c, 0) == old {
		old = 2
	}
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	c.Agents[old].Args = append(slices.Clone(c.Agents[old].Args), "--protocol-version", version)
	if err := c.Restart(old); err != nil {
		t.Fatal(err)
	}
}

// nodesByName returns `shoal nodes --json` keyed by name.
func nodesByName(t *testing.T, a *localcluster.Agent) map[string]api.Node {
	t.Helper()
	var ns []api.Node
	jsonOf(t, a, &ns, "nodes")
	m := map[string]api.Node{}
	for _, n := range ns {
		m[n.Name] = n
	}
	return m
}

// slurmShims runs the Slurm commands through install-shims links to the
// shoal binary, against one agent (SHOAL_DATA_DIR), as users' scripts run
// them.
type slurmShims struct {
	t   *testing.T
	a   *localcluster.Agent
	dir string
	env []string
}

// newSlurmShims links the shims for agent a into a new directory; env is
// added to the commands' environment.
func newSlurmShims(t *testing.T, a *localcluster.Agent, env ...string) *slurmShims {
	t.Helper()
	dir := t.TempDir()
	mustShoal(t, a, "install-shims", dir)
	return &slurmShims{t: t, a: a, dir: dir, env: append([]string{"SHOAL_DATA_DIR=" + a.DataDir}, env...)}
}

// startWithShims starts a cluster and links the shims of its first
// agent, which it returns: the setup the shim tests begin with.
func startWithShims(t *testing.T, opts localcluster.Options) (*localcluster.Agent, *slurmShims) {
	t.Helper()
	a := startCluster(t, opts).Agents[0]
	return a, newSlurmShims(t, a)
}

// shimsOnPath links the shims for agent a into a new directory and
// returns it, with an environment in which they run by name, as users
// type them: SHOAL_DATA_DIR, PATH with the shims before /usr/bin:/bin,
// then env.
func shimsOnPath(t *testing.T, a *localcluster.Agent, env ...string) (shims string, withShims []string) {
	t.Helper()
	shims = t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	return shims, append([]string{"SHOAL_DATA_DIR=" + a.DataDir, "PATH=" + shims + ":/usr/bin:/bin"}, env...)
}

// run runs Slurm command name with args.
func (s *slurmShims) run(name string, args ...string) cliResult {
	s.t.Helper()
	return runEnv(s.t, s.env, filepath.Join(s.dir, name), args...)
}

// must runs it, fails the test on a non-zero exit, and returns its
// stdout without surrounding space.
func (s *slurmShims) must(name string, args ...string) string {
	s.t.Helper()
	r := s.run(name, args...)
	if r.code != 0 {
		s.t.Fatalf("%s %s: exit %d\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// sbatch runs `sbatch --parsable args...` and returns the job id.
func (s *slurmShims) sbatch(args ...string) uint64 {
	s.t.Helper()
	out := s.must("sbatch", append([]string{"--parsable"}, args...)...)
	var id uint64
	if _, err := fmt.Sscan(out, &id); err != nil {
		s.t.Fatalf("sbatch --parsable printed %q: want a job id", out)
	}
	return id
}

// allocation runs `sbatch --parsable args... --wrap "sleep 300"`, a job
// that holds its nodes for steps, cancelled when the test ends, and
// returns its id once it runs.
func (s *slurmShims) allocation(args ...string) uint64 {
	s.t.Helper()
	id := s.sbatch(slices.Concat(args, []string{"--wrap", "sleep 300"})...)
	s.t.Cleanup(func() { s.run("scancel", fmt.Sprint(id)) })
	waitState(s.t, s.a, id, "RUNNING", "")
	return id
}
