package exec

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseTaskNamespaceArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    taskNamespaceArgs
		wantErr string
	}{
		{
			name: "root rank",
			args: []string{"--hostname", "n1", "--hosts", "/d/hosts", "--env-fd", "3", "--dir", "/w", "--", "/bin/sh", "sh", "-c", "x"},
			want: taskNamespaceArgs{hostname: "n1", hosts: "/d/hosts", dir: "/w", envFD: 3, argv: []string{"/bin/sh", "sh", "-c", "x"}},
		},
		{
			name: "user rank",
			args: []string{"--hostname", "n2", "--hosts", "/h", "--uid", "1000", "--gid", "100", "--groups", "100,27",
				"--pdeathsig", "9", "--env-fd", "4", "--", "/dev/fd/3", "/dev/fd/3", "--", "a"},
			want: taskNamespaceArgs{hostname: "n2", hosts: "/h", pdeathsig: syscall.SIGKILL, envFD: 4,
				cred: &syscall.Credential{Uid: 1000, Gid: 100, Groups: []uint32{100, 27}},
				argv: []string{"/dev/fd/3", "/dev/fd/3", "--", "a"}},
		},
		{
			name: "probe",
			args: []string{"--probe", "--hostname", "n1", "--hosts", "/etc/hosts"},
			want: taskNamespaceArgs{hostname: "n1", hosts: "/etc/hosts", probe: true, envFD: -1},
		},
		// The task's environment never falls back to the helper's own.
		{name: "no env fd", args: []string{"--hostname", "n1", "--hosts", "/h", "--", "/bin/true", "true"}, wantErr: "--env-fd: missing"},
		{name: "env fd on stdio", args: []string{"--hostname", "n1", "--hosts", "/h", "--env-fd", "2", "--", "/bin/true", "true"}, wantErr: `--env-fd "2"`},
		{name: "bad env fd", args: []string{"--hostname", "n1", "--hosts", "/h", "--env-fd", "x"}, wantErr: `--env-fd "x"`},
		{name: "no hostname", args: []string{"--hosts", "/h", "--", "/bin/true", "true"}, wantErr: "--hostname: missing"},
		{name: "no hosts", args: []string{"--hostname", "n1", "--", "/bin/true", "true"}, wantErr: "--hosts: missing"},
		{name: "no program", args: []string{"--hostname", "n1", "--hosts", "/h", "--", "/bin/true"}, wantErr: "after --"},
		{name: "uid alone", args: []string{"--hostname", "n1", "--hosts", "/h", "--uid", "5", "--", "/bin/true", "true"}, wantErr: "--uid and --gid"},
		{name: "bad uid", args: []string{"--hostname", "n1", "--hosts", "/h", "--uid", "-5", "--gid", "1"}, wantErr: `--uid "-5"`},
		{name: "bad group", args: []string{"--hostname", "n1", "--hosts", "/h", "--groups", "1,x"}, wantErr: `--groups "1,x"`},
		{name: "bad signal", args: []string{"--hostname", "n1", "--hosts", "/h", "--pdeathsig", "99"}, wantErr: `--pdeathsig "99"`},
		{name: "missing value", args: []string{"--hostname"}, wantErr: "--hostname: missing value"},
		{name: "unknown", args: []string{"--mount", "x"}, wantErr: `unknown option "--mount"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTaskNamespaceArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v; want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.hostname != tt.want.hostname || got.hosts != tt.want.hosts || got.dir != tt.want.dir ||
				got.pdeathsig != tt.want.pdeathsig || got.probe != tt.want.probe || got.envFD != tt.want.envFD ||
				!slices.Equal(got.argv, tt.want.argv) {
				t.Errorf("got %+v; want %+v", got, tt.want)
			}
			if (got.cred == nil) != (tt.want.cred == nil) {
				t.Fatalf("cred = %+v; want %+v", got.cred, tt.want.cred)
			}
			if c, w := got.cred, tt.want.cred; c != nil && (c.Uid != w.Uid || c.Gid != w.Gid || !slices.Equal(c.Groups, w.Groups)) {
				t.Errorf("cred = %+v; want %+v", c, w)
			}
		})
	}
}

func TestHostsContent(t *testing.T) {
	got := string(hostsContent([]Host{
		{Name: "n1", Addr: "127.0.0.1"}, {Name: "n2", Addr: "10.0.0.2"}, {Name: "v6", Addr: "fd00::2"},
		{Name: "bad", Addr: "host.example"}, {Name: "a b", Addr: "10.0.0.3"}, {Name: "", Addr: "10.0.0.4"},
	}, testLogger(t)))
	for _, want := range []string{"127.0.0.1\tlocalhost\n", "127.0.0.1\tn1\n", "10.0.0.2\tn2\n", "fd00::2\tv6\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("hosts file lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"host.example", "a b", "10.0.0.4"} {
		if strings.Contains(got, bad) {
			t.Errorf("hosts file has %q:\n%s", bad, got)
		}
	}
	// Node names come before the host's own entries: the first match wins.
	if own, err := os.ReadFile("/etc/hosts"); err == nil && len(own) > 0 &&
		strings.Index(got, "10.0.0.2\tn2") > strings.Index(got, string(own)) {
		t.Errorf("node entries after the host's:\n%s", got)
	}
}

// TestTaskNamespace runs a rank as another user through the helper (this
// test binary, see TestMain) and checks what it sees: the node's name as
// hostname, the node names in /etc/hosts, its own ids and work dir. The
// bind mount must not reach the test's own mount namespace.
func TestTaskNamespace(t *testing.T) {
	requireRoot(t)
	before := hostsMounts(t)
	e, err := New(t.Context(), Config{DataDir: t.TempDir(), NodeName: "n2", KillWait: time.Second, KillGrace: time.Second,
		Logger: testLogger(t), TaskNamespace: []string{os.Args[0], TaskNamespaceCommand}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.StopAll(causeCancelled)
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
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
	if err := ProbeTaskNamespace([]string{os.Args[0], TaskNamespaceCommand}, "n7"); err != nil {
		t.Errorf("probe: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-shoal")
	if err := ProbeTaskNamespace([]string{missing, TaskNamespaceCommand}, "n7"); err == nil {
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
	cmd := osexec.Command(os.Args[0], TaskNamespaceCommand, "--probe", "--hostname", "refused", "--hosts", hosts)
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
	if ok, _ := exists(filepath.Join(e.jobs, TaskKey{10, 1, NoStep}.dirName(), hostsFile)); ok {
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

// TestInTaskNamespaceCmd checks how a rank's command is rewritten: the
// helper first, the ids and the parent-death signal moved to it, the
// namespaces asked of the fork, the task's environment moved from the
// helper's own to a descriptor, the rest kept.
func TestInTaskNamespaceCmd(t *testing.T) {
	dir := t.TempDir()
	cred := &syscall.Credential{Uid: 1000, Gid: 100, Groups: []uint32{100, 27}}
	script, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()
	taskEnv := []string{"PATH=/job/bin", "LD_PRELOAD=/tmp/evil.so", "LD_LIBRARY_PATH=/tmp", "GODEBUG=x=1",
		"SHOAL_JOB_ID=7", "SHOAL_INCARNATION=2", "SHOAL_NODE_NAME=n1", "A=b=c", "EMPTY="}
	cmd := &osexec.Cmd{Path: "/dev/fd/3", Args: []string{"/dev/fd/3", "a b"}, Dir: "/work", Env: taskEnv,
		ExtraFiles:  []*os.File{script},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}}
	orig := cmd.SysProcAttr
	hosts := []Host{{Name: "n1", Addr: "10.0.0.1"}}
	release, err := inTaskNamespace(cmd, []string{"/bin/shoal", "__x"}, "n1", dir, hosts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	wantArgs := []string{"/bin/shoal", "__x", "--hostname", "n1", "--hosts", filepath.Join(dir, hostsFile), "--env-fd", "4",
		"--uid", "1000", "--gid", "100", "--groups", "100,27", "--pdeathsig", "9", "--dir", "/work",
		"--", "/dev/fd/3", "/dev/fd/3", "a b"}
	if cmd.Path != "/bin/shoal" || !slices.Equal(cmd.Args, wantArgs) {
		t.Errorf("command = %s %q; want /bin/shoal %q", cmd.Path, cmd.Args, wantArgs)
	}
	a := cmd.SysProcAttr
	if a.Credential != nil || !a.Setpgid || a.Pdeathsig != syscall.SIGKILL ||
		a.Cloneflags != syscall.CLONE_NEWUTS|syscall.CLONE_NEWNS {
		t.Errorf("SysProcAttr = %+v", a)
	}
	if orig.Credential != cred || orig.Cloneflags != 0 {
		t.Errorf("the caller's SysProcAttr was changed: %+v", orig)
	}
	// The helper, root, runs with a fixed environment and the markers.
	wantOwn := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SHOAL_JOB_ID=7", "SHOAL_INCARNATION=2", "SHOAL_NODE_NAME=n1"}
	if !slices.Equal(cmd.Env, wantOwn) {
		t.Errorf("helper environment = %q; want %q", cmd.Env, wantOwn)
	}
	// The task's, on descriptor 4 (ExtraFiles[1]), unchanged.
	if len(cmd.ExtraFiles) != 2 || cmd.ExtraFiles[0] != script {
		t.Fatalf("ExtraFiles = %v; want the script, then the environment", cmd.ExtraFiles)
	}
	b, err := io.ReadAll(cmd.ExtraFiles[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := parseEnvBlock(b); !slices.Equal(got, taskEnv) {
		t.Errorf("environment on the descriptor = %q; want %q", got, taskEnv)
	}
	got, err := parseTaskNamespaceArgs(cmd.Args[2:])
	if err != nil || got.cred == nil || got.cred.Uid != 1000 || got.envFD != 4 ||
		!slices.Equal(got.argv, []string{"/dev/fd/3", "/dev/fd/3", "a b"}) {
		t.Errorf("the helper reads back %+v, %v", got, err)
	}
	if data := readFile(t, filepath.Join(dir, hostsFile)); !strings.Contains(data, "10.0.0.1\tn1\n") {
		t.Errorf("hosts file = %q", data)
	}

	plain := &osexec.Cmd{Path: "/bin/true", Args: []string{"true"}}
	if _, err := inTaskNamespace(plain, nil, "n1", dir, hosts, testLogger(t)); err != nil || plain.Path != "/bin/true" ||
		len(plain.Args) != 1 || plain.SysProcAttr != nil || plain.Env != nil || plain.ExtraFiles != nil {
		t.Errorf("without a helper the command changed: %+v, %v", plain, err)
	}
}

// TestEnvFD checks the environment's round trip through a descriptor, as
// the helper reads it: entries kept as they are, the descriptor closed.
func TestEnvFD(t *testing.T) {
	env := []string{"A=1", "B=x=y", "C=", "D=line\nbreak", "LD_PRELOAD=/x.so"}
	f, err := envMemfd(env)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := readEnvFD(fd)
	if err != nil || !slices.Equal(got, env) {
		t.Errorf("readEnvFD = %q, %v; want %q", got, err, env)
	}
	// (The number may have been reused since: look at what it names.)
	if target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil && strings.Contains(target, "shoal-task-env") {
		t.Errorf("descriptor %d (%s) still open after readEnvFD: the rank would inherit it", fd, target)
	}
	if _, err := envMemfd([]string{"A=\x00b"}); err == nil {
		t.Error("envMemfd took an entry with a NUL byte")
	}
}

// mustBeRoot fails a test that needs root to act as another user; only
// -short skips it.
func mustBeRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root to act as another user (-short)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root to act as another user: run as root, or with -short")
	}
}

// TestTaskNamespaceHelperEnv runs a stand-in for the task namespace
// helper that saves its own environment: the helper runs as root, and
// must not get the job's LD_PRELOAD, LD_LIBRARY_PATH or GODEBUG.
func TestTaskNamespaceHelperEnv(t *testing.T) {
	mustBeRoot(t)
	saved := filepath.Join(t.TempDir(), "helper.environ")
	helper := []string{"/bin/sh", "-c", `cat /proc/$$/environ >` + saved}
	e, err := New(t.Context(), Config{DataDir: t.TempDir(), NodeName: "n2", KillWait: time.Second, KillGrace: time.Second,
		Logger: testLogger(t), TaskNamespace: helper})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		_ = e.Close(ctx)
	})
	l := shLaunch(t, 63, 1, "true")
	l.Spec.Env = []string{"LD_PRELOAD=/nonexistent/evil.so", "LD_LIBRARY_PATH=/nonexistent", "GODEBUG=inittrace=1",
		"GOTRACEBACK=crash", "JOB_SECRET=x"}
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 63); x.ExitCode != 0 {
		t.Fatalf("exit %+v", x)
	}
	env := parseEnvBlock([]byte(readFile(t, saved)))
	for _, kv := range env {
		for _, bad := range []string{"LD_", "GODEBUG=", "GOTRACEBACK=", "JOB_SECRET="} {
			if strings.HasPrefix(kv, bad) {
				t.Errorf("the root helper ran with the job's %s", kv)
			}
		}
	}
	if envValue(env, "SHOAL_JOB_ID") != "63" || envValue(env, "SHOAL_NODE_NAME") != "n2" {
		t.Errorf("helper environment %q lacks the task's markers", env)
	}
}
