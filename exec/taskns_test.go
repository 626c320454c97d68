package exec

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/exec/internal/exectest"
	"github.com/shoal-sched/shoal/exec/stepd"
	"github.com/shoal-sched/shoal/exec/task"
)

// TestTaskNamespace runs a rank as another user through the helper (this
// test binary, see TestMain) and checks what it sees: the node's name as
// hostname, the node names in /etc/hosts, its own ids and work dir. The
// bind mount must not reach the test's own mount namespace.
func TestTaskNamespace(t *testing.T) {
	requireRoot(t)
	before := hostsMounts(t)
	e := openExec(t, Config{DataDir: t.TempDir(), NodeName: "n2", KillWait: time.Second, KillGrace: time.Second,
		TaskNamespace: []string{os.Args[0], stepd.TaskNamespaceCommand}}, stopAndCheck)
	// The user must reach its work dir: t.TempDir's parent is root's alone.
	work, err := os.MkdirTemp("", "shoal-taskns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	l := shLaunch(t, 9, 1, `echo "host=$(hostname) n1=$(getent hosts n1 | cut -d' ' -f1) n2=$(getent hosts n2 | cut -d' ' -f1) id=$(id -u):$(id -g) pwd=$(pwd) var=$JOBVAR"`)
	l.Spec.WorkDir = work
	l.Spec.Env = []string{"JOBVAR=through the descriptor"}
	l.Spec.User, l.Spec.UID, l.Spec.GID = "nobody", 65534, 65534
	l.Hosts = []Host{{Name: "n1", Addr: "127.0.0.11"}, {Name: "n2", Addr: "127.0.0.12"}}
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 9); x.ExitCode != 0 {
		t.Fatalf("exit = %+v; stderr %q", x, readLog(t, e, 9, 1, "stderr"))
	}
	want := "host=n2 n1=127.0.0.11 n2=127.0.0.12 id=65534:65534 pwd=" + work + " var=through the descriptor\n"
	if got := readLog(t, e, 9, 1, "stdout"); got != want {
		t.Errorf("stdout = %q; want %q (stderr %q)", got, want, readLog(t, e, 9, 1, "stderr"))
	}
	if h, _ := os.Hostname(); h == "n2" {
		t.Errorf("the test's own hostname became n2")
	}
	if after := hostsMounts(t); after != before {
		t.Errorf("mounts on /etc/hosts in the test's namespace: %d before, %d after the task", before, after)
	}
}

// TestTaskNamespaceProbe checks that the probe passes where namespaces
// work (root here) and fails for a helper that cannot run.
func TestTaskNamespaceProbe(t *testing.T) {
	requireRoot(t)
	if err := stepd.ProbeTaskNamespace([]string{os.Args[0], stepd.TaskNamespaceCommand}, "n7"); err != nil {
		t.Errorf("probe: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-shoal")
	if err := stepd.ProbeTaskNamespace([]string{missing, stepd.TaskNamespaceCommand}, "n7"); err == nil {
		t.Errorf("probe of %s passed", missing)
	}
}

// TestTaskNamespaceRefusesHost checks that the helper changes nothing
// when it shares a namespace with its parent (run by hand, or forked
// without the clone flags): here the mount namespace is the test's.
func TestTaskNamespaceRefusesHost(t *testing.T) {
	requireRoot(t)
	before := hostsMounts(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.9 refused\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(os.Args[0], stepd.TaskNamespaceCommand, "--probe", "--hostname", "refused", "--hosts", hosts)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS}
	out, err := cmd.CombinedOutput()
	if after := hostsMounts(t); after != before {
		_ = syscall.Unmount("/etc/hosts", 0) // put the host back
		t.Errorf("the helper mounted on the test's /etc/hosts")
	}
	if err == nil || !strings.Contains(string(out), "not in a mnt namespace of its own") {
		t.Errorf("helper in the test's mount namespace: err %v, output %q; want a refusal", err, out)
	}
}

// TestTaskNamespaceOff checks that without Config.TaskNamespace a rank's
// command is left as built.
func TestTaskNamespaceOff(t *testing.T) {
	e := newTestExec(t, t.TempDir(), time.Second)
	l := shLaunch(t, 10, 1, `hostname`)
	l.Hosts = []Host{{Name: "n2", Addr: "127.0.0.12"}}
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 10); x.ExitCode != 0 {
		t.Fatalf("exit = %+v", x)
	}
	own, _ := os.Hostname()
	if got := readLog(t, e, 10, 1, "stdout"); got != own+"\n" {
		t.Errorf("hostname in the rank = %q; want the machine's %q", got, own)
	}
	if ok, _ := task.Exists(filepath.Join(e.jobs, TaskKey{Job: 10, Incarnation: 1, Step: NoStep}.DirName(), task.HostsFile)); ok {
		t.Errorf("hosts file written with task namespaces off")
	}
}

// hostsMounts counts the mounts on /etc/hosts in this process's namespace.
func hostsMounts(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/etc/hosts" {
			n++
		}
	}
	return n
}

// TestTaskNamespaceHelperEnv runs a stand-in for the task namespace
// helper that saves its own environment: the helper runs as root, and
// must not get the job's LD_PRELOAD, LD_LIBRARY_PATH or GODEBUG.
func TestTaskNamespaceHelperEnv(t *testing.T) {
	exectest.MustBeRoot(t)
	saved := filepath.Join(t.TempDir(), "helper.environ")
	helper := []string{"/bin/sh", "-c", `cat /proc/$$/environ >` + saved}
	e := openExec(t, Config{DataDir: t.TempDir(), NodeName: "n2", KillWait: time.Second, KillGrace: time.Second,
		TaskNamespace: helper}, closeOnly)
	l := shLaunch(t, 63, 1, "true")
	l.Spec.Env = []string{"LD_PRELOAD=/nonexistent/evil.so", "LD_LIBRARY_PATH=/nonexistent", "GODEBUG=inittrace=1",
		"GOTRACEBACK=crash", "JOB_SECRET=x"}
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 63); x.ExitCode != 0 {
		t.Fatalf("exit %+v", x)
	}
	env := strings.Split(strings.TrimRight(exectest.ReadFile(t, saved), "\x00"), "\x00")
	for _, kv := range env {
		for _, bad := range []string{"LD_", "GODEBUG=", "GOTRACEBACK=", "JOB_SECRET="} {
			if strings.HasPrefix(kv, bad) {
				t.Errorf("the root helper ran with the job's %s", kv)
			}
		}
	}
	if !slices.Contains(env, "SHOAL_JOB_ID=63") || !slices.Contains(env, "SHOAL_NODE_NAME=n2") {
		t.Errorf("helper environment %q lacks the task's markers", env)
	}
}
