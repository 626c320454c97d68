package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/cluster"
)

// The tests below create real cgroups. They need root and a hierarchy
// with the controllers; where either is missing they skip, except in CI
// (CI=true), where the confinement they check must be proven, not
// assumed: they fail.

// helperEnv makes the test binary run a helper (see TestMain) instead
// of the tests: what the confined processes do.
const helperEnv = "SHOAL_CGROUP_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helper(h, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helper runs one confined behaviour and returns the exit code.
func helper(name string, args []string) int {
	switch name {
	case "alloc": // touch args[0] MiB, then report and sleep
		mib, _ := strconv.Atoi(args[0])
		buf := make([]byte, mib<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		fmt.Println("allocated", len(buf))
		time.Sleep(time.Duration(len(args)) * 500 * time.Millisecond)
		runtime.KeepAlive(buf)
		return 0
	case "affinity": // print the CPUs it may run on
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			fmt.Println("error", err)
			return 1
		}
		var ids []int
		for i := range maxCPUID {
			if set.IsSet(i) {
				ids = append(ids, i)
			}
		}
		fmt.Println(cluster.CPUList(ids))
		return 0
	case "open": // open each path, print "ok" or the errno name
		for _, p := range args {
			fd, err := unix.Open(p, unix.O_RDWR, 0)
			switch {
			case err == nil:
				unix.Close(fd)
				fmt.Println("ok")
			case errors.Is(err, unix.EPERM):
				fmt.Println("EPERM")
			default:
				fmt.Println("other", err)
			}
		}
		return 0
	case "daemon": // start a sleeper in a session of its own, print its pid, exit
		cmd := osexec.Command(os.Args[0], "3600")
		cmd.Env = []string{helperEnv + "=sleep"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(cmd.Process.Pid)
		return 0
	case "sleep":
		s, _ := strconv.Atoi(args[0])
		time.Sleep(time.Duration(s) * time.Second)
		return 0
	case "burn": // burn args[0] of CPU time, then touch args[1] MiB
		d, _ := time.ParseDuration(args[0])
		start := cpuTime()
		for cpuTime()-start < d {
		}
		mib, _ := strconv.Atoi(args[1])
		buf := make([]byte, mib<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		runtime.KeepAlive(buf)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper", name)
	return 2
}

func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// requireHierarchy opens a tree of its own for the test, with the
// controllers need, or skips (fails in CI). The tree and everything in
// it are removed at the end.
func requireHierarchy(t *testing.T, need Controller) Hierarchy {
	t.Helper()
	unusable := func(why string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(why, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no usable cgroup hierarchy: %s", msg)
		}
		t.Skip(msg)
	}
	if os.Geteuid() != 0 {
		unusable("not root")
	}
	node := fmt.Sprintf("test%d_%s", os.Getpid(), strings.NewReplacer("/", "_").Replace(t.Name()))
	r, err := Detect(node)
	if err != nil {
		unusable("%v", err)
	}
	if r.Has&need != need {
		unusable("hierarchy v%d has %s; the test needs %s", r.Version, r.Has, need)
	}
	h, err := Open(r)
	if err != nil {
		unusable("%v", err)
	}
	t.Cleanup(func() {
		if err := h.Kill("", 5*time.Second); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := h.Remove(""); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return h
}

// startCmdIn starts cmd born in the cgroup path, as the supervisor starts
// ranks: from a locked OS thread (ForkIn may move the thread on v1).
func startCmdIn(h Hierarchy, path string, cmd *osexec.Cmd) (forker time.Duration, err error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	type result struct {
		forker time.Duration
		err    error
	}
	done := make(chan result, 1)
	go func() { // ends when the start does
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		before := threadCPUTime()
		back, err := h.ForkIn(path, cmd.SysProcAttr)
		if err != nil {
			done <- result{err: err}
			return
		}
		err = cmd.Start()
		back()
		done <- result{threadCPUTime() - before, err}
	}()
	r := <-done
	return r.forker, r.err
}

// threadCPUTime is the calling thread's CPU time.
func threadCPUTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// helperCmd is the helper name with args, to start in a cgroup.
func helperCmd(name string, args ...string) *osexec.Cmd {
	cmd := osexec.Command(os.Args[0], args...)
	cmd.Env = []string{helperEnv + "=" + name}
	cmd.Stderr = os.Stderr
	return cmd
}

// startIn starts the helper name with args born in path.
func startIn(t *testing.T, h Hierarchy, path, name string, args ...string) (*osexec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := helperCmd(name, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startCmdIn(h, path, cmd); err != nil {
		t.Fatalf("start %s in %s: %v", name, path, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

// waitBounded waits for cmd, failing the test after bound.
func waitBounded(t *testing.T, cmd *osexec.Cmd, bound time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v still running after %s", cmd.Args, bound)
		return nil
	}
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read helper output: %v", err)
	}
	return strings.TrimSpace(line)
}

func create(t *testing.T, h Hierarchy, path string, l Limits) {
	t.Helper()
	if err := h.Create(path, l); err != nil {
		t.Fatal(err)
	}
}

// The ForkIn thread must leave the cgroup again: otherwise the task's
// kill would reach the supervisor.
func TestForkInLeavesNoThreadBehind(t *testing.T) {
	h := requireHierarchy(t, 0)
	create(t, h, "job", Limits{})
	create(t, h, "job/task", Limits{PidsMax: 64})
	cmd, _ := startIn(t, h, "job/task", "sleep", "30")
	procs, err := h.Procs("job")
	if err != nil || !slices.Equal(procs, []int{cmd.Process.Pid}) {
		t.Fatalf("Procs(job) = %v, %v; want only the child %d", procs, err, cmd.Process.Pid)
	}
	if h.Version() == 1 {
		// Every thread in the cgroup is one of the child's.
		for _, d := range h.(*v1).dirs("job/task") {
			b, err := os.ReadFile(filepath.Join(d, "tasks"))
			if err != nil {
				t.Fatal(err)
			}
			tids, _ := parsePIDs(b)
			for _, tid := range tids {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", cmd.Process.Pid, tid)); err != nil {
					t.Errorf("%s/tasks has thread %d, not the child's (%d)", d, tid, cmd.Process.Pid)
				}
			}
		}
	}
}

// A process that allocates past its job's limit is OOM-killed, and the
// kill is counted on its task's cgroup.
func TestOOMKill(t *testing.T) {
	h := requireHierarchy(t, Memory)
	create(t, h, "job", Limits{MemoryBytes: 32 << 20})
	create(t, h, "job/task", Limits{})
	cmd, _ := startIn(t, h, "job/task", "alloc", "256")
	err := waitBounded(t, cmd, 30*time.Second)
	var ee *osexec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("alloc 256 MiB under a 32 MiB limit: %v; want killed by SIGKILL", err)
	}
	s, err := h.Stats("job/task")
	if err != nil {
		t.Fatal(err)
	}
	if !s.OOMKnown || s.OOMKills < 1 {
		t.Errorf("Stats = %+v; want an OOM kill counted", s)
	}

	// Under the limit nothing is killed and nothing counted.
	create(t, h, "job2", Limits{MemoryBytes: 64 << 20})
	create(t, h, "job2/task", Limits{})
	cmd, _ = startIn(t, h, "job2/task", "alloc", "8")
	if err := waitBounded(t, cmd, 30*time.Second); err != nil {
		t.Fatalf("alloc 8 MiB under a 64 MiB limit: %v", err)
	}
	if s, err := h.Stats("job2/task"); err != nil || s.OOMKills != 0 {
		t.Errorf("Stats = %+v, %v; want no OOM kill", s, err)
	}
}

// cpuset.cpus restricts what the child may run on, from its first
// instruction.
func TestCPUSet(t *testing.T) {
	h := requireHierarchy(t, CPUSet)
	host, err := HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	last := host[len(host)-1].ID
	create(t, h, "job", Limits{CPUs: []int{last}})
	create(t, h, "job/task", Limits{})
	cmd, out := startIn(t, h, "job/task", "affinity")
	if got := readLine(t, out); got != strconv.Itoa(last) {
		t.Errorf("affinity in a cpuset of CPU %d = %q", last, got)
	}
	if err := waitBounded(t, cmd, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A job given GPU 0 opens /dev/nvidia0 (which has no driver here, so the
// open fails past the cgroup check, not with EPERM) and gets EPERM on
// nvidia1 and on the last minor, nvidia253 (v1 writes the deny list
// one rule per write on one open file: a list cut short shows there).
func TestDevices(t *testing.T) {
	testDevices(t, requireHierarchy(t, Devices))
}

// testDevices checks GPU confinement on h, v1's deny list or v2's
// device program.
func testDevices(t *testing.T, h Hierarchy) {
	t.Helper()
	dir := t.TempDir()
	for _, minor := range []int{0, 1, nvidiaMaxMinor} {
		p := filepath.Join(dir, "nvidia"+strconv.Itoa(minor))
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(nvidiaMajor, uint32(minor)))); err != nil {
			t.Fatalf("mknod %s: %v", p, err)
		}
	}
	nv0, nv1, nvLast := filepath.Join(dir, "nvidia0"), filepath.Join(dir, "nvidia1"), filepath.Join(dir, "nvidia"+strconv.Itoa(nvidiaMaxMinor))
	create(t, h, "free", Limits{})
	cmd, out := startIn(t, h, "free", "open", nv0, nv1, nvLast)
	if a, b, c := readLine(t, out), readLine(t, out), readLine(t, out); a == "EPERM" || b == "EPERM" || c == "EPERM" {
		t.Fatalf("without confinement: %q, %q, %q; the device nodes themselves refuse", a, b, c)
	}
	waitBounded(t, cmd, 10*time.Second)

	create(t, h, "gpujob", Limits{ConfineGPUs: true, GPUs: []int{0}})
	create(t, h, "gpujob/task", Limits{})
	cmd, out = startIn(t, h, "gpujob/task", "open", nv0, nv1, nvLast)
	if got := readLine(t, out); got == "EPERM" {
		t.Errorf("open nvidia0 with GPU 0 given: %s", got)
	}
	if got := readLine(t, out); got != "EPERM" {
		t.Errorf("open nvidia1 with GPU 0 given: %s; want EPERM", got)
	}
	if got := readLine(t, out); got != "EPERM" {
		t.Errorf("open %s with GPU 0 given: %s; want EPERM", nvLast, got)
	}
	waitBounded(t, cmd, 10*time.Second)
}

// A daemon that left the process group and session (setsid, reparented
// away from its parent) is in the cgroup still, and Kill ends it.
func TestKillDaemon(t *testing.T) {
	h := requireHierarchy(t, 0)
	create(t, h, "job", Limits{})
	create(t, h, "job/task", Limits{})
	killsDaemon(t, h)
	if err := h.Remove("job"); err != nil {
		t.Errorf("Remove after Kill: %v", err)
	}
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// The CPU time a cgroup's accounting reports is what its one task ran, as
// the kernel's rusage of that task (wait4, once it exited) says: the same
// scheduler clock, read two ways, so no share of the machine (load) can
// part them. The cgroup also held the thread that forked the task
// (ForkIn) for a moment, and run time is charged to a cgroup at each tick
// and switch, so a thread's last moments may be charged before or after
// they are read: the two may differ by what that thread ran meanwhile
// (measured) and accountingSlack, no more. The tick-sampled user and
// system split alone counted 412 ms for 500 ms burned at load 15; the
// peak memory is at least the 64 MiB the task touched.
func TestStatsMatchWork(t *testing.T) {
	h := requireHierarchy(t, Memory|CPUAcct)
	create(t, h, "job", Limits{})
	create(t, h, "job/task", Limits{})
	cmd := helperCmd("burn", "500ms", "64")
	forker, err := startCmdIn(h, "job/task", cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := waitBounded(t, cmd, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatalf("rusage of the task: %T", cmd.ProcessState.SysUsage())
	}
	task := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if task < 500*time.Millisecond {
		t.Fatalf("the task's rusage = %s; it burns until its own reads 500ms", task)
	}
	s, err := h.Stats("job/task")
	if err != nil {
		t.Fatal(err)
	}
	cpu := s.UserCPU + s.SystemCPU
	t.Logf("cgroup %s (user %s, system %s), task %s, forker %s", cpu, s.UserCPU, s.SystemCPU, task, forker)
	if cpu < task-accountingSlack || cpu > task+forker+accountingSlack {
		t.Errorf("CPU time = %s (user %s, system %s); want the task's %s, plus up to the forking thread's %s, within %s",
			cpu, s.UserCPU, s.SystemCPU, task, forker, accountingSlack)
	}
	if s.MemPeak < 64<<20 || s.MemPeak > 512<<20 {
		t.Errorf("peak memory = %d; want 64 MiB or a little more", s.MemPeak)
	}
}

// accountingSlack is one scheduler tick at the lowest HZ Linux offers
// (100): a running thread's run time is charged to its cgroup at every
// tick and switch, so what it ran but was not yet charged (the task's
// threads' last moments as they exit, the forking thread's before it
// moved in) is under a tick.
const accountingSlack = 10 * time.Millisecond

// pids.max bounds what a task may fork: five background sleeps fit
// under 64, not under 4.
func TestPidsMax(t *testing.T) {
	h := requireHierarchy(t, Pids)
	create(t, h, "job", Limits{})
	for _, tc := range []struct {
		max int64
		ok  bool
	}{{64, true}, {4, false}} {
		path := fmt.Sprintf("job/max%d", tc.max)
		create(t, h, path, Limits{PidsMax: tc.max})
		cmd := osexec.Command("/bin/sh", "-c", "for i in 1 2 3 4 5; do sleep 1 & done; wait")
		if _, err := startCmdIn(h, path, cmd); err != nil {
			t.Fatal(err)
		}
		err := waitBounded(t, cmd, 10*time.Second)
		if (err == nil) != tc.ok {
			t.Errorf("five forks under pids.max %d: %v; want success %v", tc.max, err, tc.ok)
		}
	}
}

// The v2 code on a hybrid host's empty cgroup2 mount (no controllers):
// birth in the cgroup through CLONE_INTO_CGROUP, the GPU device program
// (where this process may load one), cgroup.kill of a daemon, and
// cpu.stat. Pure v2 hosts run every test above on v2 instead.
func TestV2WithoutControllers(t *testing.T) {
	const mnt = "/sys/fs/cgroup/unified"
	var st unix.Statfs_t
	if os.Geteuid() != 0 && os.Getenv("CI") == "true" {
		t.Fatal("CI=true and not root: cgroups cannot be tested")
	}
	// Only a hybrid host has this mount; a pure v2 host runs every test
	// above on v2 instead, so its absence is no missing facility.
	if os.Geteuid() != 0 || unix.Statfs(mnt, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skip("no root, or no cgroup2 beside v1 at " + mnt)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	cgs, err := parseProcCgroup(own)
	if err != nil {
		t.Fatal(err)
	}
	rel, ok := ownPath(cgs, "")
	if !ok {
		t.Skip("no v2 line in /proc/self/cgroup")
	}
	r := Root{Version: 2, Has: CPUAcct, Dirs: map[string]string{
		"": filepath.Join(mnt, rel, fmt.Sprintf("shoal_test%d_v2", os.Getpid()))}}
	h, err := Open(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.Kill("", 5*time.Second)
		if err := h.Remove(""); err != nil {
			t.Error(err)
		}
	})
	if h.Has()&Kill == 0 {
		t.Skip("kernel without cgroup.kill")
	}
	create(t, h, "job", Limits{})
	create(t, h, "job/task", Limits{})
	t.Logf("cgroup v2 at %s: %s", r.Dirs[""], h.Has())
	if h.Has()&Devices == 0 {
		if err := h.Create("job/gpu", Limits{ConfineGPUs: true}); err == nil {
			t.Error("v2 accepted device confinement it cannot enforce")
		}
	} else {
		testDevices(t, h)
	}
	killsDaemon(t, h)
	if _, err := h.Stats("job/task"); err != nil {
		t.Errorf("Stats: %v", err)
	}
}

// killsDaemon starts, in job/task, a process that double-forks a daemon
// out of its group and session, and checks that the daemon is in the
// cgroup and that Kill of job ends it.
func killsDaemon(t *testing.T, h Hierarchy) {
	t.Helper()
	cmd, out := startIn(t, h, "job/task", "daemon")
	pid, err := strconv.Atoi(readLine(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitBounded(t, cmd, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if procs, _ := h.Procs("job"); !slices.Contains(procs, pid) {
		t.Fatalf("daemon %d not in the cgroup: %v", pid, procs)
	}
	if err := h.Kill("job", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("daemon %d alive after Kill", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
