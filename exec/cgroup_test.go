package exec

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/exec/task"
)

// newCgroupExec opens an executor whose tasks run in cgroups, on a tree
// of the test's own, removed at the end; without root or a hierarchy it
// skips, and fails in CI (CI=true).
func newCgroupExec(t *testing.T, need cgroup.Controller) (*Executor, cgroup.Hierarchy) {
	t.Helper()
	unusable := func(msg string) { t.Helper(); noCgroups(t, msg) }
	if os.Geteuid() != 0 {
		unusable("not root")
	}
	r, err := cgroup.Detect(fmt.Sprintf("exectest%d_%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")))
	if err != nil {
		unusable(err.Error())
	}
	if r.Has&need != need {
		unusable(fmt.Sprintf("hierarchy has %s, the test needs %s", r.Has, need))
	}
	h, err := cgroup.Open(r)
	if err != nil {
		unusable(err.Error())
	}
	host, err := cgroup.HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, this runs once the executor is closed.
	t.Cleanup(func() {
		if err := h.Kill("", 5*time.Second); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := h.Remove(""); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	e := openExec(t, Config{DataDir: t.TempDir(), NodeName: "n2", KillWait: time.Second, KillGrace: time.Second,
		Cgroup: &r, HostCPUs: cgroup.Canonical(host), TaskPidsMax: 256}, stopAndCheck)
	return e, h
}

// A rank is confined from its first instruction to the CPUs of its
// allocation, and its cgroup is gone once its exit is recorded.
func TestTaskCPUSet(t *testing.T) {
	e, h := newCgroupExec(t, cgroup.CPUSet)
	host, _ := cgroup.HostCPUs()
	canon := cgroup.Canonical(host)
	pos := len(canon) - 1
	l := shLaunch(t, 1, 1, `grep Cpus_allowed_list /proc/self/status`)
	l.Alloc.Nodes[1].CPUs = []int{pos}
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	x := waitExit(t, e, 1)
	if x.ExitCode != 0 || x.Cause != task.CauseExit {
		t.Fatalf("exit = %+v", x)
	}
	want := "Cpus_allowed_list:\t" + strconv.Itoa(canon[pos]) + "\n"
	if got := readLog(t, e, 1, 1, "stdout"); got != want {
		t.Errorf("rank's affinity = %q; want %q", got, want)
	}
	if procs, err := h.Procs(""); err != nil || len(procs) != 0 {
		t.Errorf("after the exit, the tree holds %v, %v; want nothing", procs, err)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.Cgroup.Dirs["cpuset"], "job_1.1")); !os.IsNotExist(err) {
		t.Errorf("job cgroup left behind: %v", err)
	}
}

// A rank that allocates past the job's memory is OOM-killed and the task
// ends with cause oom, which the FSM turns into OUT_OF_MEMORY.
func TestTaskOOM(t *testing.T) {
	e, _ := newCgroupExec(t, cgroup.Memory)
	l := shLaunch(t, 1, 1, `dd if=/dev/zero of=/dev/null bs=256M count=1; echo after`)
	l.Alloc.Nodes[1].MemMiB = 32
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	x := waitExit(t, e, 1)
	if x.Cause != task.CauseOOM || x.ExitCode == 0 {
		t.Errorf("exit = %+v; want cause oom and a failing code", x)
	}
	// The same under no limit completes.
	l = shLaunch(t, 2, 1, `dd if=/dev/zero of=/dev/null bs=64M count=1`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 2); x.Cause != task.CauseExit || x.ExitCode != 0 {
		t.Errorf("exit without a limit = %+v; want code 0 cause exit", x)
	}
}

// A daemon that left the rank's process group and session dies with the
// task, and the usage of the task is in its exit: the CPU a busy loop
// burned and the memory dd held. The loop is a fixed amount of work
// (about 0.6 s of CPU on this box), not a fixed time, so a loaded
// machine does not shrink what it burns.
func TestTaskDaemonKilledAndUsage(t *testing.T) {
	e, _ := newCgroupExec(t, cgroup.Memory|cgroup.CPUAcct)
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	l := shLaunch(t, 1, 1, `setsid sleep 300 & echo $! > `+pidFile+`
i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done
dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null
exit 0`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	x := waitExit(t, e, 1)
	if x.ExitCode != 0 || x.Cause != task.CauseExit {
		t.Fatalf("exit = %+v", x)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The exit is recorded only once the cgroup is empty: no wait here.
	if err := syscall.Kill(pid, 0); err == nil {
		if st, err := task.ReadStat(pid); err == nil && !st.Dead() {
			t.Errorf("daemon %d survived its task", pid)
		}
	}
	u := x.Usage
	if u == nil {
		t.Fatal("exit has no usage")
	}
	if cpu := u.TotalCPU(); cpu < 200*time.Millisecond || cpu > 10*time.Second {
		t.Errorf("TotalCPU = %s (user %s, system %s); want about 0.6s", cpu, u.UserCPU, u.SystemCPU)
	}
	if u.MaxRSS < 64<<20 || u.MaxRSS > 1<<30 {
		t.Errorf("MaxRSS = %d; want 64 MiB or a little more", u.MaxRSS)
	}
	if u.AveRSS == 0 || u.AveRSS > u.MaxRSS {
		t.Errorf("AveRSS = %d with MaxRSS %d; want samples, at most the peak", u.AveRSS, u.MaxRSS)
	}
	// The usage is durable: a new executor on the same directory reads it.
	var rec task.ExitRecord
	if err := task.ReadJSON(filepath.Join(e.jobs, TaskKey{Job: 1, Incarnation: 1, Step: NoStep}.DirName()), task.ExitFile, &rec); err != nil || rec.Usage == nil || *rec.Usage != *u {
		t.Errorf("exit record usage = %+v, %v; want %+v", rec.Usage, err, u)
	}
}

// A rank's oom_score_adj is the default, whatever protects its
// supervisor.
func TestRankOOMScoreReset(t *testing.T) {
	requireRoot(t)
	old, err := os.ReadFile(oomScoreFile)
	if err != nil {
		t.Fatalf("read %s: %v", oomScoreFile, err) // every Linux has it
	}
	if err := os.WriteFile(oomScoreFile, []byte("500"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(oomScoreFile, old, 0) })
	e := newTestExec(t, t.TempDir(), time.Second)
	l := shLaunch(t, 1, 1, `cat /proc/$$/oom_score_adj; cat /proc/$PPID/oom_score_adj`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	waitExit(t, e, 1)
	if got := readLog(t, e, 1, 1, "stdout"); got != "0\n500\n" {
		t.Errorf("rank's and supervisor's oom_score_adj = %q; want 0 and 500", got)
	}
}

// A task whose supervisor died is lost; a child of it that dropped its
// environment and left its session is found by nothing but its cgroup,
// which the next executor's recovery kills (DESIGN invariant 1: no GPU
// is freed while anything of the task runs).
func TestRecoveryKillsLostTaskCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		noCgroups(t, "not root")
	}
	name := fmt.Sprintf("exectest%d_recovery", os.Getpid())
	r, err := cgroup.Detect(name)
	if err != nil {
		noCgroups(t, err.Error())
	}
	t.Cleanup(func() {
		if h, err := cgroup.Attach(r); err == nil {
			_ = h.Kill("", 5*time.Second)
			if err := h.Remove(""); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	dir := t.TempDir()
	agent := osexec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), helperEnv+"="+dir, helperCgroupEnv+"="+name)
	agent.Stderr = t.Output()
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	child := childPID(t, dir)
	// The child execs env, setsid and sleep: wait until it is sleep,
	// without SHOAL_* in its environment.
	for deadline := time.Now().Add(waitBound); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d never became sleep", child)
		}
	}
	childStat, err := task.ReadStat(child)
	if err != nil {
		t.Fatal(err)
	}
	childProc, err := os.FindProcess(child)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = childProc.Kill(); childProc.Release() })
	if _, _, ok := task.EnvironMarks(child); ok {
		t.Fatalf("child %d carries the task's markers; the test needs one without", child)
	}

	// The supervisor writes the rank's proc record once the fork
	// returned, which may be after the rank became sleep.
	key := TaskKey{Job: 50, Incarnation: 1, Step: NoStep}
	var procs []task.ProcRecord
	var errs []error
	for deadline := time.Now().Add(waitBound); ; time.Sleep(10 * time.Millisecond) {
		procs, errs = task.ReadProcs(filepath.Join(dir, "jobs", key.DirName()))
		if len(procs) == 1 && len(errs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("proc records = %+v, %v; want one", procs, errs)
		}
	}
	supervisor, supervisorTicks := parentOf(t, procs[0].PID)
	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait()
	if err := syscall.Kill(supervisor, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if alive := waitPIDsGone(t.Context(), map[int]uint64{supervisor: supervisorTicks}, waitBound); len(alive) > 0 {
		t.Fatalf("supervisor %d survived SIGKILL", supervisor)
	}
	for deadline := time.Now().Add(waitBound); supervisorListens(filepath.Join(dir, "jobs", key.DirName())); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the killed supervisor's socket still accepts after %v", waitBound)
		}
	}
	if !task.SameProcessAlive(child, childStat.StartTicks) {
		t.Fatalf("child %d died with its supervisor; the test needs it alive", child)
	}

	e := newTestExec(t, dir, time.Second) // no cgroups of its own: stepd.json names the tree
	if task.SameProcessAlive(child, childStat.StartTicks) {
		t.Errorf("child %d of the lost task, outside its groups and without its environment, still runs after New", child)
	}
	if got := e.PendingExits(); len(got) != 1 || got[0].Cause != task.CauseLost {
		t.Errorf("PendingExits = %+v; want the task lost", got)
	}
}

// Stopping a task sends SIGTERM once to its ranks (by process group) and
// once to what left their groups (by cgroup): a daemon hears it too, and
// a rank does not hear it twice.
func TestTaskStopSignalsOnce(t *testing.T) {
	e, _ := newCgroupExec(t, 0)
	log := filepath.Join(t.TempDir(), "signals")
	l := shLaunch(t, 1, 1, `setsid sh -c 'trap "echo daemon >> `+log+`; exit 0" TERM; while :; do sleep 0.05; done' &
trap 'echo rank >> `+log+`' TERM
echo ready >> `+log+`
while :; do sleep 0.05; done`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	waitFile(t, log)
	time.Sleep(200 * time.Millisecond) // the daemon's trap is set
	e.Stop(TaskKey{Job: 1, Incarnation: 1, Step: NoStep}, task.CauseCancelled)
	if x := waitExit(t, e, 1); x.Cause != task.CauseCancelled {
		t.Fatalf("exit = %+v; want cancelled", x)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	count := func(s string) int {
		n := 0
		for _, l := range lines {
			if l == s {
				n++
			}
		}
		return n
	}
	if count("rank") != 1 || count("daemon") != 1 {
		t.Errorf("signals heard: %q; want one SIGTERM for the rank and one for the daemon", lines)
	}
}

// noCgroups ends a test that needs cgroups where they cannot be used:
// skipped on a developer's machine, failed in CI (CI=true), where the
// facility must be there.
func noCgroups(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and no usable cgroup hierarchy: %s", why)
	}
	t.Skip(why)
}
