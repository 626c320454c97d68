package test

import (
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// containerMarker is a file only the test bundle's root file system has.
const containerMarker = "inside-the-bundle"

// ociBundle builds an OCI bundle in dir: a root file system of Debian's
// static busybox (with its applets as links) and a file only it has
// (/marker), and the config.json `crun spec` writes. It fails the test
// when crun or busybox-static is missing (.ci/run installs them).
func ociBundle(t *testing.T, dir string) string {
	t.Helper()
	crun, err := osexec.LookPath("crun")
	if err != nil {
		t.Fatalf("crun: %v (Debian package crun; .ci/run installs it)", err)
	}
	// A static busybox runs in a root file system without a libc.
	const busybox = "/bin/busybox"
	if out, err := osexec.Command("dpkg", "-s", "busybox-static").CombinedOutput(); err != nil {
		t.Fatalf("busybox-static is not installed (.ci/run installs it): %v %s", err, out)
	}
	root := filepath.Join(dir, "rootfs")
	for _, d := range []string{"bin", "proc", "dev", "sys", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "cat", "echo", "id", "sleep", "ls", "hostname", "tr", "test", "env", "true", "grep"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "marker"), []byte(containerMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := osexec.Command(crun, "spec")
	spec.Dir = dir
	if out, err := spec.CombinedOutput(); err != nil {
		t.Fatalf("crun spec: %v: %s", err, out)
	}
	return dir
}

// runtimeContainers lists the containers crun knows whose ids start
// with prefix.
func runtimeContainers(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := osexec.Command("crun", "list", "-q").Output()
	if err != nil {
		t.Fatalf("crun list: %v", err)
	}
	var ids []string
	for _, id := range strings.Fields(string(out)) {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	return ids
}

// bundleAndWork makes an OCI bundle (ociBundle) and a work directory
// beside it, in a directory of their own (root's) under os.TempDir,
// removed when the test ends.
func bundleAndWork(t *testing.T) (bundle, work string) {
	t.Helper()
	base := sharedTempDir(t, "shoal-oci-", 0o700)
	bundle = ociBundle(t, filepath.Join(base, "bundle"))
	work = filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	return bundle, work
}

// TestContainer (issue 13): sbatch --container and srun --container run
// each task in the OCI bundle, through the node's runtime, one container
// per rank (two agents on this host run the ranks of one step): the
// task sees the bundle's root file system and not the host's, its pid 1
// is its own command, the Slurm variables reach it (SLURM_CONTAINER
// too), its exit code is the task's, and scancel kills it, container
// included. On a node with no runtime (--oci-runtime none) the job fails
// to start with a reason naming the node, without hanging.
func TestContainer(t *testing.T) {
	mustRoot(t)
	bundle, work := bundleAndWork(t)
	c := startCluster(t, localcluster.Options{Nodes: 2, ExtraArgs: []string{"--oci-runtime", "crun"}})
	a := c.Agents[0]
	sh := newSlurmShims(t, a)

	// A batch script in its container: the bundle's files, no host
	// /etc/os-release, its own pid namespace, the job's variables, its
	// exit code.
	script := `cat /marker
test -e /etc/os-release && echo host-os-release || echo no-os-release
echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"
echo "job=$SLURM_JOB_ID container=$SLURM_CONTAINER procid=$SLURM_PROCID uid=$(id -u)"
exit 3`
	id := sh.sbatch("--container="+bundle, "--chdir", work, "--wrap", script)
	j := waitJob(t, a, id, 2*time.Minute)
	out, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("slurm-%d.out", id)))
	for _, want := range []string{
		containerMarker, "no-os-release", "pid1=/bin/sh /var/run/shoal/job_script",
		fmt.Sprintf("job=%d container=%s procid=0 uid=0", id, bundle),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sbatch --container: output %q; want a line with %q", out, want)
		}
	}
	if j.State != "FAILED" || j.ExitCode != 3 {
		t.Errorf("sbatch --container exiting 3: %s exit %d (%s); want FAILED exit 3", j.State, j.ExitCode, j.Reason)
	}
	scontrol := sh.must("scontrol", "show", "job", fmt.Sprint(id))
	if !strings.Contains(scontrol, "Container="+bundle) {
		t.Errorf("scontrol show job: %q; want Container=%s", scontrol, bundle)
	}

	// srun outside an allocation, on both nodes: each rank in a
	// container of its own.
	step := `cat /marker; echo "rank=$SLURM_PROCID of $SLURM_NTASKS on $(hostname) container=$SLURM_CONTAINER"`
	r := sh.run("srun", "-N2", "-n2", "--container", bundle, "--chdir", work, "-l", "sh", "-c", step)
	for _, want := range []string{"0: " + containerMarker, "1: " + containerMarker,
		"0: rank=0 of 2 on " + c.Agents[0].Name + " container=" + bundle, "1: rank=1 of 2 on " + c.Agents[1].Name + " container=" + bundle} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("srun -N2 --container: stdout %q, stderr %q; want a line %q", r.stdout, r.stderr, want)
		}
	}
	if r.code != 0 {
		t.Errorf("srun -N2 --container: exit %d; want 0", r.code)
	}
	// A rank's exit code is its container's: srun's.
	r = sh.run("srun", "-N2", "-n2", "--container", bundle, "--chdir", work, "sh", "-c", "exit $((5 * SLURM_PROCID))")
	if r.code != 5 {
		t.Errorf("srun -N2 --container, ranks exiting 0 and 5: exit %d (stderr %q); want 5", r.code, r.stderr)
	}

	// A step of a job on the host: the step alone runs in the bundle.
	host := sh.allocation("-N2", "--chdir", work)
	r = sh.srunIn(nil, []string{fmt.Sprintf("SLURM_JOB_ID=%d", host)}, "-N2", "-n2", "--container", bundle, "--chdir", work, "cat", "/marker")
	if r.code != 0 || r.stdout != containerMarker+"\n"+containerMarker+"\n" {
		t.Errorf("srun --container in a job: exit %d, stdout %q, stderr %q; want the marker twice", r.code, r.stdout, r.stderr)
	}
	sh.must("scancel", fmt.Sprint(host))

	// scancel kills it: the container is gone once the job is.
	sleeper := sh.sbatch("--container="+bundle, "--chdir", work, "--wrap", "echo started; exec sleep 3217")
	waitState(t, a, sleeper, "RUNNING", "")
	prefix := fmt.Sprintf("shoal-%s-%d-", a.Name, sleeper)
	eventually(t, time.Minute, "the container to run", func() error {
		if ids := runtimeContainers(t, prefix); len(ids) != 1 {
			return fmt.Errorf("crun list: %v; want one %s* container", ids, prefix)
		}
		return nil
	})
	sh.must("scancel", fmt.Sprint(sleeper))
	if j := waitJob(t, a, sleeper, 2*time.Minute); j.State != "CANCELLED" {
		t.Errorf("scancel of a container job: %s (%s); want CANCELLED", j.State, j.Reason)
	}
	// The job is CANCELLED at once; its node then ends the ranks.
	containerGone(t, prefix, "sleep 3217")

	// The time limit ends it the same way: sleep, the container's pid 1,
	// ignores SIGTERM, so the SIGKILL after the kill-wait does it.
	limited := sh.sbatch("--container="+bundle, "--chdir", work, "--time=0:02", "--wrap", "exec sleep 3218")
	if j := waitJob(t, a, limited, 2*time.Minute); j.State != "TIMEOUT" {
		t.Errorf("a container job past its time limit: %s (%s); want TIMEOUT", j.State, j.Reason)
	}
	containerGone(t, fmt.Sprintf("shoal-%s-%d-", a.Name, limited), "sleep 3218")
}

// containerGone waits until crun lists no container whose id starts with
// prefix and no process runs cmdline.
func containerGone(t *testing.T, prefix, cmdline string) {
	t.Helper()
	eventually(t, time.Minute, "the container to be gone", func() error {
		if ids := runtimeContainers(t, prefix); len(ids) != 0 {
			return fmt.Errorf("crun still lists %v", ids)
		}
		if pids := processesRunning(t, cmdline); len(pids) != 0 {
			return fmt.Errorf("the container's %s still runs: pids %v", cmdline, pids)
		}
		return nil
	})
}

// TestContainerNoRuntime: a node started with --oci-runtime none runs no
// containers: a --container job fails to start there at once (exit 127,
// not a hang), and its error file says why, naming the node, as
// slurmstepd's errors do.
func TestContainerNoRuntime(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 1, ExtraArgs: []string{"--oci-runtime", "none"}})
	work := t.TempDir()
	id := sh.sbatch("--container=/nonexistent/bundle", "--chdir", work, "--wrap", "true")
	j := waitJob(t, a, id, 2*time.Minute)
	if j.State != "FAILED" || j.ExitCode != 127 {
		t.Errorf("sbatch --container on a node without a runtime: %s exit %d; want FAILED exit 127", j.State, j.ExitCode)
	}
	out, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("slurm-%d.out", id)))
	want := "shoal stepd: error: node " + a.Name + ": --container /nonexistent/bundle: no OCI runtime on this node"
	if !strings.Contains(string(out), want) {
		t.Errorf("sbatch --container on a node without a runtime: output %q; want %q", out, want)
	}
	r := sh.run("srun", "--container=/nonexistent/bundle", "--chdir", work, "true")
	if r.code == 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("srun --container on a node without a runtime: exit %d, stderr %q; want a failure with %q", r.code, r.stderr, want)
	}
}

// processesRunning lists the pids whose command line is cmdline (its
// arguments joined by spaces).
func processesRunning(t *testing.T, cmdline string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") == cmdline {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestContainerUser (issue 13; DESIGN: tasks run as their user): a job of
// a user other than root runs in its container as that user, with its
// groups, no capabilities and no new privileges, though the runtime runs
// as root; and a bundle the user cannot read is refused, naming it,
// rather than read for it by root.
func TestContainerUser(t *testing.T) {
	mustRoot(t)
	c := startCluster(t, localcluster.Options{Nodes: 1, ExtraArgs: []string{"--oci-runtime", "crun"}})
	a := c.Agents[0]
	u := newSecUser(t, "shoaloci")
	base, work := secDirs(t, c, u)
	bundle := ociBundle(t, filepath.Join(base, "bundle"))
	// contained runs script in a bundle as u (sbatch --container) and
	// returns the ended job and its output.
	contained := func(bundle, script string) (api.Job, []byte) {
		t.Helper()
		r := u.run(t, a, work, nil, "slurm", "sbatch", "--parsable", "--container", bundle, "--chdir", work, "--wrap", script)
		if r.code != 0 {
			t.Fatalf("sbatch --container as %s: exit %d %s", u.name, r.code, r.stderr)
		}
		id := mustID(t, strings.TrimSpace(r.stdout))
		j := waitJob(t, a, id, 2*time.Minute)
		out, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("slurm-%d.out", id)))
		return j, out
	}

	j, out := contained(bundle, `echo "uid=$(id -u) gid=$(id -g)"; cat /marker; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status`)
	if j.State != "COMPLETED" {
		t.Errorf("sbatch --container as %s: %s exit %d; want COMPLETED", u.name, j.State, j.ExitCode)
	}
	for _, want := range []string{fmt.Sprintf("uid=%d gid=%d", u.uid, u.gid), containerMarker,
		"CapEff:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sbatch --container as %s: output %q; want %q", u.name, out, want)
		}
	}

	// A bundle under a directory only root may enter.
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	hidden := ociBundle(t, filepath.Join(private, "bundle"))
	if j, out = contained(hidden, "cat /marker"); j.State != "FAILED" {
		t.Errorf("sbatch --container of a bundle %s cannot read: %s; want FAILED", u.name, j.State)
	}
	want := fmt.Sprintf("--container %s: not an OCI bundle: open %s/config.json: permission denied", hidden, hidden)
	if !strings.Contains(string(out), want) || strings.Contains(string(out), containerMarker) {
		t.Errorf("sbatch --container of a bundle %s cannot read: output %q; want %q and no marker", u.name, out, want)
	}

	// A readable bundle that bind-mounts a directory open to all, under
	// one the user cannot enter: through the container it could.
	inner := filepath.Join(private, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inner, "secret"), []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	binder := ociBundle(t, filepath.Join(base, "binder"))
	cfgPath := filepath.Join(binder, "config.json")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["mounts"] = append(cfg["mounts"].([]any), map[string]any{
		"destination": "/private", "type": "bind", "source": inner, "options": []any{"rbind", "ro"}})
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if j, out = contained(binder, "cat /private/secret"); j.State != "FAILED" {
		t.Errorf("sbatch --container binding what %s cannot reach: %s; want FAILED", u.name, j.State)
	}
	want = fmt.Sprintf("shoal stepd: error: node %s: --container %s: open %s: permission denied", a.Name, binder, inner)
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "root's") {
		t.Errorf("sbatch --container binding what %s cannot reach: output %q; want %q and no listing", u.name, out, want)
	}
}

// TestContainerNoCgroups: without cgroups (--cgroups off) a cancelled
// container task still ends: SIGTERM reaches the container's first
// process through the runtime (a shell's trap runs), and a container
// that ignores it is killed by the runtime's delete after the SIGKILL,
// with nothing left running.
func TestContainerNoCgroups(t *testing.T) {
	mustRoot(t)
	bundle, work := bundleAndWork(t)
	a, sh := startWithShims(t, localcluster.Options{Nodes: 1, ExtraArgs: []string{"--oci-runtime", "crun", "--cgroups", "off"}})

	// SIGTERM, forwarded: the trap of the container's pid 1 runs.
	trapper := sh.sbatch("--container="+bundle, "--chdir", work, "--wrap",
		`trap 'echo got-term; exit 0' TERM; echo ready; sleep 3219 & wait`)
	waitState(t, a, trapper, "RUNNING", "")
	outFile := filepath.Join(work, fmt.Sprintf("slurm-%d.out", trapper))
	eventually(t, time.Minute, "the script to be ready", func() error {
		if b, _ := os.ReadFile(outFile); !strings.Contains(string(b), "ready") {
			return fmt.Errorf("output %q", b)
		}
		return nil
	})
	sh.must("scancel", fmt.Sprint(trapper))
	containerGone(t, fmt.Sprintf("shoal-%s-%d-", a.Name, trapper), "sleep 3219")
	if b, _ := os.ReadFile(outFile); !strings.Contains(string(b), "got-term") {
		t.Errorf("scancel of a container whose pid 1 traps TERM: output %q; want got-term", b)
	}

	// SIGTERM ignored (sleep as pid 1): SIGKILL, then the runtime's
	// delete.
	sleeper := sh.sbatch("--container="+bundle, "--chdir", work, "--wrap", "exec sleep 3220")
	waitState(t, a, sleeper, "RUNNING", "")
	prefix := fmt.Sprintf("shoal-%s-%d-", a.Name, sleeper)
	eventually(t, time.Minute, "the container to run", func() error {
		if len(processesRunning(t, "sleep 3220")) != 1 {
			return fmt.Errorf("sleep 3220 not running yet")
		}
		return nil
	})
	sh.must("scancel", fmt.Sprint(sleeper))
	containerGone(t, prefix, "sleep 3220")
}
