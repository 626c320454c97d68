package stepd

import (
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/shoal-sched/shoal/exec/internal/exectest"
	"github.com/shoal-sched/shoal/exec/rankexec"
	"github.com/shoal-sched/shoal/exec/task"
)

func TestHostsContent(t *testing.T) {
	got := string(hostsContent([]task.Host{
		{Name: "n1", Addr: "127.0.0.1"}, {Name: "n2", Addr: "10.0.0.2"}, {Name: "v6", Addr: "fd00::2"},
		{Name: "bad", Addr: "host.example"}, {Name: "a b", Addr: "10.0.0.3"}, {Name: "", Addr: "10.0.0.4"},
	}, exectest.Logger(t)))
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
	hosts := []task.Host{{Name: "n1", Addr: "10.0.0.1"}}
	release, err := inTaskNamespace(cmd, []string{"/bin/shoal", "__x"}, "n1", dir, hosts, exectest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	wantArgs := []string{"/bin/shoal", "__x", "--hostname", "n1", "--hosts", filepath.Join(dir, task.HostsFile), "--env-fd", "4",
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
	if got := rankexec.ParseEnvBlock(b); !slices.Equal(got, taskEnv) {
		t.Errorf("environment on the descriptor = %q; want %q", got, taskEnv)
	}
	got, err := rankexec.ParseNamespaceArgs(cmd.Args[2:])
	if err != nil || got.Cred == nil || got.Cred.Uid != 1000 || got.EnvFD != 4 ||
		!slices.Equal(got.Argv, []string{"/dev/fd/3", "/dev/fd/3", "a b"}) {
		t.Errorf("the helper reads back %+v, %v", got, err)
	}
	if data := exectest.ReadFile(t, filepath.Join(dir, task.HostsFile)); !strings.Contains(data, "10.0.0.1\tn1\n") {
		t.Errorf("hosts file = %q", data)
	}

	plain := &osexec.Cmd{Path: "/bin/true", Args: []string{"true"}}
	if _, err := inTaskNamespace(plain, nil, "n1", dir, hosts, exectest.Logger(t)); err != nil || plain.Path != "/bin/true" ||
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
	got, err := rankexec.ReadEnvFD(fd)
	if err != nil || !slices.Equal(got, env) {
		t.Errorf("ReadEnvFD = %q, %v; want %q", got, err, env)
	}
	// (The number may have been reused since: look at what it names.)
	if target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil && strings.Contains(target, "shoal-task-env") {
		t.Errorf("descriptor %d (%s) still open after ReadEnvFD: the rank would inherit it", fd, target)
	}
	if _, err := envMemfd([]string{"A=\x00b"}); err == nil {
		t.Error("envMemfd took an entry with a NUL byte")
	}
}
