package exec

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/internal/exectest"
	"github.com/shoal-sched/shoal/exec/pmix"
	"github.com/shoal-sched/shoal/exec/task"
)

// rankPID reads the pid a rank wrote to file in its work dir.
func rankPID(t *testing.T, path string) (int, uint64) {
	t.Helper()
	waitFile(t, path)
	var pid int
	for deadline := time.Now().Add(waitBound); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	st, err := task.ReadStat(pid)
	if err != nil {
		t.Fatalf("rank %d: %v", pid, err)
	}
	return pid, st.StartTicks
}

// TestDetachAndReattach: an agent's executor dropped while its task runs
// (Detach, as a restarting agent does) leaves the task running under its
// supervisor; the next executor on the data dir reattaches to it, does not
// run it again, and gets its exit when it ends by itself.
func TestDetachAndReattach(t *testing.T) {
	dir := t.TempDir()
	e1, err := New(t.Context(), Config{DataDir: dir, NodeName: "n2", KillWait: time.Second, Logger: exectest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	l := shLaunch(t, 30, 1, `echo $$ > pid; while [ ! -e release ]; do sleep 0.05; done; echo runs >> count; exit 3`)
	key := TaskKey{Job: 30, Incarnation: 1, Step: NoStep}
	if err := e1.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	pid, ticks := rankPID(t, filepath.Join(l.Spec.WorkDir, "pid"))
	e1.Detach()
	if err := e1.Start(t.Context(), l); err == nil {
		t.Errorf("Start after Detach = nil; want ErrClosed")
	}
	if !task.SameProcessAlive(pid, ticks) {
		t.Fatalf("rank %d died with its detached executor", pid)
	}

	e2 := newTestExec(t, dir, time.Second)
	if got := e2.Running(); !slices.Equal(got, []TaskKey{key}) {
		t.Fatalf("Running() after reattach = %v; want [%v]", got, key)
	}
	if err := e2.Start(t.Context(), l); err != nil {
		t.Errorf("Start of a reattached task = %v; want nil, doing nothing", err)
	}
	if err := os.WriteFile(filepath.Join(l.Spec.WorkDir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	x := waitKey(t, e2, key)
	if x.Cause != task.CauseExit || x.ExitCode != 3 {
		t.Errorf("exit = %+v; want cause exit, code 3", x)
	}
	if b, _ := os.ReadFile(filepath.Join(l.Spec.WorkDir, "count")); string(b) != "runs\n" {
		t.Errorf("the rank ran %q; want once", b)
	}
	if got := e2.Running(); len(got) != 0 {
		t.Errorf("Running() after the exit = %v; want none", got)
	}
}

// TestWatchdogFencesWithoutRenewal: a supervisor kills its task once the
// lease passes without a renewal, with no agent to tell it (DESIGN: a
// node that cannot renew kills its own tasks before the leader reuses its
// GPUs). While the lease is renewed the task runs.
func TestWatchdogFencesWithoutRenewal(t *testing.T) {
	const ttl = 600 * time.Millisecond
	dir := t.TempDir()
	e := openExec(t, Config{DataDir: dir, NodeName: "n2", KillWait: 10 * time.Second,
		KillGrace: 300 * time.Millisecond, LeaseTTL: ttl}, stopThenClose)
	if err := e.RenewLease(time.Now(), ttl); err != nil {
		t.Fatal(err)
	}
	if left := e.LeaseLeft(); left <= 0 || left > ttl {
		t.Errorf("LeaseLeft() = %v just after a renewal; want in (0, %v]", left, ttl)
	}
	// Renewed every 50 ms until the test has seen the task run.
	stopRenewing := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopRenewing:
				return
			case <-tick.C:
				if err := e.RenewLease(time.Now(), ttl); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	// The rank ignores SIGTERM: only the fence's SIGKILL, after KillGrace
	// rather than the 10 s KillWait, ends it.
	l := shLaunch(t, 31, 1, `trap '' TERM; echo $$ > pid; while :; do sleep 0.05; done`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	pid, ticks := rankPID(t, filepath.Join(l.Spec.WorkDir, "pid"))
	time.Sleep(3 * ttl) // three leases' worth of renewals
	if !task.SameProcessAlive(pid, ticks) || len(e.PendingExits()) != 0 {
		t.Fatalf("the task ended while its lease was renewed: exits %+v", e.PendingExits())
	}
	close(stopRenewing)
	<-renewed
	// No more renewals: the supervisor fences on its own.
	x := waitExit(t, e, 31)
	if x.Cause != task.CauseFenced || x.ExitCode != 128+9 {
		t.Errorf("exit = %+v; want cause fenced, code 137 (SIGKILL after the grace)", x)
	}
	if task.SameProcessAlive(pid, ticks) {
		t.Errorf("rank %d alive after its fenced exit was recorded", pid)
	}
	if left := e.LeaseLeft(); left != 0 {
		t.Errorf("LeaseLeft() = %v after the lease ended; want 0", left)
	}
}

// TestWatchdogFencesWithoutLeaseRecord: a supervisor that cannot read the
// lease at all fences at once rather than run unguarded.
func TestWatchdogFencesWithoutLeaseRecord(t *testing.T) {
	e := openExec(t, Config{DataDir: t.TempDir(), NodeName: "n2", KillWait: time.Second,
		KillGrace: 300 * time.Millisecond, LeaseTTL: time.Hour}, closeOnly)
	l := shLaunch(t, 32, 1, `while :; do sleep 0.05; done`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if x := waitExit(t, e, 32); x.Cause != task.CauseFenced {
		t.Errorf("exit = %+v; want cause fenced", x)
	}
}

// TestStepAfterScriptEnded: a step whose batch script already ended on
// this node is stopped as soon as its supervisor runs, as it would have
// been had it started before the script ended (the step ends with the
// job; the agent's driver would stop it later otherwise).
func TestStepAfterScriptEnded(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	l := batchLaunch(t, 33, "#!/bin/sh\nexit 0\n")
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 33); x.Cause != task.CauseExit {
		t.Fatalf("script exit = %+v; want cause exit", x)
	}
	step := withStep(l, 0, 0, `exec sleep 30`)
	if err := e.Start(t.Context(), step); err != nil {
		t.Fatal(err)
	}
	if sx := waitKey(t, e, TaskKey{Job: 33, Incarnation: 1, Step: 0}); sx.Cause != task.CauseCancelled || sx.ExitCode != 128+15 {
		t.Errorf("step exit = %+v; want it stopped at once, cause cancelled, code 143", sx)
	}
}

// TestStopRecordReachesSupervisor: a stop whose request never reached the
// supervisor (only its record was written, as Stop does first) still
// stops the task.
func TestStopRecordReachesSupervisor(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	l := shLaunch(t, 34, 1, `while :; do sleep 0.05; done`)
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	key := TaskKey{Job: 34, Incarnation: 1, Step: NoStep}
	if err := task.WriteJSON(filepath.Join(e.jobs, key.DirName()), task.StopFile, task.StopRecord{Cause: task.CauseCancelled}); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 34); x.Cause != task.CauseCancelled || x.ExitCode != 128+15 {
		t.Errorf("exit = %+v; want cause cancelled, code 143", x)
	}
}

// TestRenewLeaseGrantedTTL: the deadline the supervisors read is the
// renewal's send time + the TTL the leader granted, longer than
// Config.LeaseTTL once stretched, and shorter again when a later renewal
// was granted less.
func TestRenewLeaseGrantedTTL(t *testing.T) {
	const ttl = 10 * time.Second
	dir := t.TempDir()
	e := openExec(t, Config{DataDir: dir, NodeName: "n2", KillGrace: 300 * time.Millisecond, LeaseTTL: ttl}, closeOnly)
	sent := time.Now()
	if err := e.RenewLease(sent, 6*ttl); err != nil {
		t.Fatal(err)
	}
	if left := e.LeaseLeft(); left <= 5*ttl || left > 6*ttl {
		t.Errorf("LeaseLeft() = %v after a renewal granted %v; want in (%v, %v]", left, 6*ttl, 5*ttl, 6*ttl)
	}
	if task.LeaseExpired(filepath.Join(dir, task.LeaseFile)) {
		t.Error("the supervisors' lease ended just after a stretched renewal")
	}
	if err := e.RenewLease(sent, ttl); err != nil {
		t.Fatal(err)
	}
	if left := e.LeaseLeft(); left <= 0 || left > ttl {
		t.Errorf("LeaseLeft() = %v after a renewal granted %v; want in (0, %v]", left, ttl, ttl)
	}
	// A renewal sent long ago with a TTL that has passed: ended.
	if err := e.RenewLease(sent.Add(-2*ttl), ttl); err != nil {
		t.Fatal(err)
	}
	if !task.LeaseExpired(filepath.Join(dir, task.LeaseFile)) {
		t.Error("the supervisors' lease still runs after its granted TTL")
	}
}

// TestStepdCommand: a task that serves no PMIx starts under the light
// supervisor when one is configured; a PMIx step, which needs the
// agent's binary (linked with libpmix), never does.
func TestStepdCommand(t *testing.T) {
	full, light := []string{"/bin/shoal", task.StepdArg}, []string{"/bin/shoal-slurm", task.StepdArg}
	pmixStep := Launch{Step: &cluster.Step{Spec: cluster.StepSpec{Env: []string{"SLURM_MPI_TYPE=pmix"}}}}
	pmi2Step := Launch{Step: &cluster.Step{Spec: cluster.StepSpec{Env: []string{"SLURM_MPI_TYPE=pmi2"}}}}
	for _, tc := range []struct {
		name  string
		light []string
		l     Launch
		want  []string
	}{
		{"batch script, light configured", light, Launch{}, light},
		{"pmi2 step, light configured", light, pmi2Step, light},
		{"pmix step, light configured", light, pmixStep, full},
		{"batch script, no light", nil, Launch{}, full},
		{"pmix step, no light", nil, pmixStep, full},
	} {
		e := &Executor{cfg: Config{StepdCommand: full, StepdLightCommand: tc.light}}
		tr := &tracked{pmix: pmix.Wanted(tc.l)}
		if got := e.stepdCommand(tr); !slices.Equal(got, tc.want) {
			t.Errorf("%s: stepdCommand = %q; want %q", tc.name, got, tc.want)
		}
	}
}
