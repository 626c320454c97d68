package exec

import (
	"context"
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/rankexec"
	"github.com/shoal-sched/shoal/exec/stepd"
	"github.com/shoal-sched/shoal/exec/task"
)

// helperEnv makes the test binary act as a crashing agent (see TestMain);
// helperStepEnv=1 makes it run a step instead of a job's own task.
// helperCgroupEnv names a cgroup tree (cgroup.Detect's name): the
// helper's tasks then run in cgroups, and its rank leaves a child that
// dropped its environment and left its session.
const (
	helperEnv       = "SHOAL_EXEC_TEST_AGENT_DIR"
	helperStepEnv   = "SHOAL_EXEC_TEST_AGENT_STEP"
	helperCgroupEnv = "SHOAL_EXEC_TEST_AGENT_CGROUP"
)

func TestMain(m *testing.M) {
	if code, ok := rankexec.Main(os.Args); ok {
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == task.StepdArg { // every task's supervisor
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		code := stepd.Main(ctx, os.Args[2:])
		stop()
		os.Exit(code)
	}
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(helperAgent(dir))
	}
	os.Exit(m.Run())
}

// helperAgent starts job 50 on node n2 whose rank leaves a background
// child (with helperStepEnv: step 3 of job 51, whose own task is not
// started), then idles until the test kills it with SIGKILL (bounded, in
// case the test died first).
func helperAgent(dir string) int {
	ctx := context.Background()
	cfg := Config{DataDir: dir, NodeName: "n2"}
	command := `sleep 300 & echo $! > child.pid; wait`
	if name := os.Getenv(helperCgroupEnv); name != "" {
		r, err := cgroup.Detect(name)
		if err != nil {
			return 2
		}
		if _, err := cgroup.Open(r); err != nil {
			return 2
		}
		cfg.Cgroup = &r
		command = `env -i setsid sleep 300 & echo $! > child.pid; wait`
	}
	e, err := New(ctx, cfg)
	if err != nil {
		return 2
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return 2
	}
	l := Launch{Job: 50, Incarnation: 1, NodeIndex: 0, MasterAddr: "127.0.0.1", NodeList: "n2", NodeName: "n2"}
	l.Spec.Command = []string{"/bin/sh", "-c", command}
	l.Spec.WorkDir = work
	l.Alloc.Nodes = []cluster.NodeAlloc{{Node: "n2"}}
	if os.Getenv(helperStepEnv) != "" {
		l.Job = 51
		l.Step = &cluster.Step{ID: 3, Incarnation: 1, Spec: cluster.StepSpec{Command: l.Spec.Command},
			Nodes: []cluster.StepNode{{Node: "n2", FirstRank: 0, Tasks: 1}}}
		l.StepNodeList = "n2"
	}
	if err := e.Start(ctx, l); err != nil {
		return 2
	}
	time.Sleep(60 * time.Second)
	return 3
}

// TestRecoveryAfterAgentKill: a task outlives its agent's kill -9 under
// its supervisor, and the next agent reattaches to it and gets its exit
// (the job is neither run twice nor forgotten); with the supervisor
// killed too, the rank leaders die through Pdeathsig and the next agent
// kills what they left behind and reports the task lost (DESIGN invariant
// 1: no GPU is freed while anything of the task runs).
func TestRecoveryAfterAgentKill(t *testing.T) {
	for _, step := range []bool{false, true} {
		for _, killSupervisor := range []bool{false, true} {
			name := "own task"
			if step {
				name = "step"
			}
			if killSupervisor {
				name += " supervisor killed"
			}
			t.Run(name, func(t *testing.T) { testRecoveryAfterAgentKill(t, step, killSupervisor) })
		}
	}
}

// testRecoveryAfterAgentKill runs the agent's crash for job 50's own task
// or, with step, for step 3 of job 51: the step's background child is
// found by its SHOAL_STEP_ID among the lost tasks' markers.
func testRecoveryAfterAgentKill(t *testing.T, step, killSupervisor bool) {
	dir := t.TempDir()
	agent := osexec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), helperEnv+"="+dir)
	key := TaskKey{Job: 50, Incarnation: 1, Step: NoStep}
	if step {
		agent.Env = append(agent.Env, helperStepEnv+"=1")
		key = TaskKey{Job: 51, Incarnation: 1, Step: 3}
	}
	agent.Stderr = t.Output()
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })

	child := childPID(t, dir)
	childStat, err := task.ReadStat(child)
	if err != nil {
		t.Fatalf("background child %d: %v", child, err)
	}
	// Hold a pidfd so the cleanup can only ever kill this very process.
	childProc, err := os.FindProcess(child)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = childProc.Kill(); childProc.Release() })
	taskDir := filepath.Join(dir, "jobs", key.DirName())
	// The background child may write its pid before the supervisor has
	// recorded the rank it forked: wait for the record, bounded.
	procs, errs := task.ReadProcs(taskDir)
	for deadline := time.Now().Add(waitBound); len(procs) == 0 && len(errs) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		procs, errs = task.ReadProcs(taskDir)
	}
	if len(procs) != 1 || len(errs) != 0 {
		t.Fatalf("proc records = %+v, %v; want one", procs, errs)
	}
	leader := map[int]uint64{procs[0].PID: procs[0].StartTicks}
	supervisor, supervisorTicks := parentOf(t, procs[0].PID)
	if supervisor == agent.Process.Pid {
		t.Fatalf("the rank leader's parent is the agent %d; want its supervisor", supervisor)
	}
	t.Cleanup(func() {
		if task.SameProcessAlive(supervisor, supervisorTicks) {
			_ = syscall.Kill(supervisor, syscall.SIGKILL)
		}
	})

	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait()
	if !killSupervisor {
		if !task.SameProcessAlive(procs[0].PID, procs[0].StartTicks) || !task.SameProcessAlive(child, childStat.StartTicks) {
			t.Fatalf("the task died with its agent; its supervisor should keep it")
		}
		e := newTestExec(t, dir, time.Second)
		if got := e.Running(); !slices.Contains(got, key) {
			t.Fatalf("Running() after New = %v; want %v reattached", got, key)
		}
		if !task.SameProcessAlive(procs[0].PID, procs[0].StartTicks) {
			t.Errorf("rank leader %d killed by New; a reattached task must run on", procs[0].PID)
		}
		if !e.Stop(key, task.CauseCancelled) {
			t.Fatalf("Stop(%v) = false; want true", key)
		}
		x := waitKey(t, e, key)
		if x.Cause != task.CauseCancelled || x.ExitCode != 128+15 {
			t.Errorf("exit = %+v; want cause cancelled, code 143", x)
		}
		if task.SameProcessAlive(child, childStat.StartTicks) {
			t.Errorf("background child %d outlived its task's exit", child)
		}
		return
	}

	if err := syscall.Kill(supervisor, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if alive := waitPIDsGone(t.Context(), map[int]uint64{supervisor: supervisorTicks}, waitBound); len(alive) > 0 {
		t.Fatalf("supervisor %d survived SIGKILL", supervisor)
	}
	// Its other threads may hold its socket a moment after its leader
	// is a zombie.
	for deadline := time.Now().Add(waitBound); supervisorListens(taskDir); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the killed supervisor's socket still accepts after %v", waitBound)
		}
	}
	if alive := waitPIDsGone(t.Context(), leader, waitBound); len(alive) > 0 {
		t.Errorf("rank leader %d outlived its supervisor; Pdeathsig should have killed it", procs[0].PID)
	}
	if !task.SameProcessAlive(child, childStat.StartTicks) {
		t.Fatalf("background child %d died with its leader; the test needs it alive", child)
	}

	e := newTestExec(t, dir, time.Second)
	if task.SameProcessAlive(child, childStat.StartTicks) {
		t.Errorf("background child %d of the lost task still runs after New", child)
	}
	got := e.PendingExits()
	if len(got) != 1 || got[0].key() != key || got[0].Cause != task.CauseLost || got[0].ExitCode != -1 {
		t.Fatalf("PendingExits = %+v; want %v lost with code -1", got, key)
	}
	if err := e.Ack(key); err != nil {
		t.Errorf("Ack(%v): %v", key, err)
	}
	if got := newTestExec(t, dir, time.Second).PendingExits(); len(got) != 0 {
		t.Errorf("PendingExits after Ack and restart = %+v; want none", got)
	}
}

// parentOf returns the parent of pid and the parent's start time.
func parentOf(t *testing.T, pid int) (int, uint64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("ppid of %d: %v", pid, err)
	}
	st, err := task.ReadStat(ppid)
	if err != nil {
		t.Fatalf("parent %d of %d: %v", ppid, pid, err)
	}
	return ppid, st.StartTicks
}

// TestRecoveryKillsOnlyVerifiedGroups fabricates a crashed agent's records:
// one task whose leader still runs (its whole group must die) and one whose
// recorded pid now belongs to another process (it must survive).
func TestRecoveryKillsOnlyVerifiedGroups(t *testing.T) {
	dir := t.TempDir()
	// startGroup runs script as its own process group; the cleanup kills
	// the group unless it is already reaped.
	startGroup := func(script string) (pid int, reaped <-chan struct{}) {
		cmd := osexec.Command("/bin/sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			select {
			case <-done:
			default:
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		})
		return cmd.Process.Pid, done
	}
	lost, lostReaped := startGroup(`sleep 300 & exec sleep 301`)
	decoy, _ := startGroup(`exec sleep 300`)
	// Wait for the lost group's background child.
	for deadline := time.Now().Add(waitBound); ; time.Sleep(20 * time.Millisecond) {
		if members(t, lost) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("background child did not start")
		}
	}

	write := func(job string, pid int, ticks uint64) {
		d := filepath.Join(dir, "jobs", job)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		key, _ := task.ParseDirName(job)
		if err := task.WriteJSON(d, task.StartFile, task.StartRecord{Job: key.Job, Incarnation: key.Incarnation, Node: "n2", Ranks: 1, Start: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := task.WriteJSON(d, task.ProcFile(0), task.ProcRecord{Rank: 0, PID: pid, StartTicks: ticks}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := task.ReadStat(lost)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lost group %d, decoy %d", lost, decoy)
	write("60.1", lost, st.StartTicks)
	dst, err := task.ReadStat(decoy)
	if err != nil {
		t.Fatal(err)
	}
	write("61.2", decoy, dst.StartTicks+1) // a recycled pid
	// A directory without a start record: nothing was forked.
	if err := os.MkdirAll(filepath.Join(dir, "jobs", "62.1"), 0o700); err != nil {
		t.Fatal(err)
	}

	e := newTestExec(t, dir, time.Second)
	select {
	case <-lostReaped:
	case <-time.After(waitBound):
		t.Fatal("the lost task's leader survived recovery")
	}
	if n := members(t, lost); n != 0 {
		t.Errorf("%d members of the lost task's group survived recovery", n)
	}
	if !task.SameProcessAlive(decoy, dst.StartTicks) {
		t.Errorf("recovery killed pid %d, whose start time differs from the record", decoy)
	}
	got := e.PendingExits()
	if len(got) != 2 || got[0].Job != 60 || got[1].Job != 61 || got[1].Incarnation != 2 ||
		got[0].Cause != task.CauseLost || got[1].Cause != task.CauseLost {
		t.Errorf("PendingExits = %+v; want 60.1 and 61.2 lost", got)
	}
}

// members counts live processes in process group pgid.
func members(t *testing.T, pgid int) int {
	t.Helper()
	pids, err := task.ListPIDs()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pid := range pids {
		if st, err := task.ReadStat(pid); err == nil && st.PGrp == pgid && !st.Dead() {
			n++
		}
	}
	return n
}

// childPID waits, up to waitBound, for the helper agent's task in dir to
// write its child's pid, and returns it (0 if it never did).
func childPID(t *testing.T, dir string) int {
	t.Helper()
	pidFile := filepath.Join(dir, "work", "child.pid")
	waitFile(t, pidFile)
	var child int
	for deadline := time.Now().Add(waitBound); child == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	return child
}
