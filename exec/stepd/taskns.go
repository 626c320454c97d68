package stepd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/exec/task"
)

// Task namespaces: on one machine that hosts several agents (`shoal dev`,
// the integration tests), node names are not host names. With
// exec.Config.TaskNamespace set, each rank runs in its own UTS and mount
// namespace whose hostname is the node's name and whose /etc/hosts maps
// every node name to its agent's address, as on a real cluster. Go cannot
// run code between fork and exec, so the rank is forked (as root, in the
// new namespaces) into a helper, the shoal binary's hidden subcommand
// TaskNamespaceCommand, which sets the hostname, bind-mounts the hosts
// file, takes the job's user's ids and execs the rank's program.
//
// The helper runs as root, so it must not run with the task's
// environment: LD_PRELOAD or LD_LIBRARY_PATH would make the dynamic
// loader of a cgo build run the job's code as root, and GODEBUG and the
// like would steer the helper's runtime. It gets a fixed environment of
// its own (helperOwnEnv: the task's markers, which recovery finds processes
// by, and nothing else), and the task's environment on an inherited
// descriptor (a memfd, --env-fd), which it applies only at the final
// exec, after dropping to the user's ids.

// TaskNamespaceCommand is the hidden subcommand of the shoal binary that
// runs TaskNamespaceMain.
const TaskNamespaceCommand = "__task-namespace"

// maxEnvBytes bounds a task environment the helper reads (Linux refuses
// much smaller ones at exec).
const maxEnvBytes = 64 << 20

// inTaskNamespace makes cmd, a rank's command as the supervisor builds
// it, run in its own UTS and mount namespace through helper
// (exec.Config.TaskNamespace), with hostname as its hostname and hosts,
// written to taskDir once, as its /etc/hosts; with helper empty it leaves
// cmd alone. The helper runs as
// root and takes the rank's Credential itself (a process that has switched
// to the user could not set a hostname or mount), then re-arms Pdeathsig,
// which a change of ids clears, and enters cmd.Dir as the user. cmd's
// environment goes to the helper on a descriptor, for the rank only; the
// helper itself runs with helperOwnEnv. It depends on nothing but its
// arguments, so any process that forks ranks can call it. The caller
// calls release once cmd has started (or failed to).
func inTaskNamespace(cmd *osexec.Cmd, helper []string, hostname, taskDir string, hosts []task.Host, log *slog.Logger) (release func(), err error) {
	release = func() {}
	if len(helper) == 0 {
		return release, nil
	}
	file := filepath.Join(taskDir, task.HostsFile)
	if ok, err := task.Exists(file); err != nil {
		return release, fmt.Errorf("task namespace: %w", err)
	} else if !ok {
		// Read by the helper before any rank runs; a task never restarts,
		// so the file needs no sync.
		if err := os.WriteFile(file, hostsContent(hosts, log), 0o644); err != nil {
			return release, fmt.Errorf("task namespace: write %s: %w", file, err)
		}
	}
	taskEnv := cmd.Environ() // what os/exec would have given the rank
	envFile, err := envMemfd(taskEnv)
	if err != nil {
		return release, fmt.Errorf("task namespace: %w", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, envFile)
	envFD := 3 + len(cmd.ExtraFiles) - 1 // ExtraFiles[i] is descriptor 3+i
	args := append(helper[1:len(helper):len(helper)], "--hostname", hostname, "--hosts", file,
		"--env-fd", strconv.Itoa(envFD))
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	if c := attr.Credential; c != nil {
		groups := make([]string, len(c.Groups))
		for i, g := range c.Groups {
			groups[i] = strconv.FormatUint(uint64(g), 10)
		}
		args = append(args, "--uid", strconv.FormatUint(uint64(c.Uid), 10),
			"--gid", strconv.FormatUint(uint64(c.Gid), 10), "--groups", strings.Join(groups, ","))
	}
	if attr.Pdeathsig != 0 {
		args = append(args, "--pdeathsig", strconv.Itoa(int(attr.Pdeathsig)))
	}
	if cmd.Dir != "" {
		args = append(args, "--dir", cmd.Dir)
	}
	args = append(args, "--", cmd.Path)
	cmd.Args = append(append([]string{helper[0]}, args...), cmd.Args...)
	cmd.Path = helper[0]
	cmd.Env = helperOwnEnv(taskEnv)
	a := *attr
	a.Credential = nil
	a.Cloneflags |= syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS
	cmd.SysProcAttr = &a
	return func() { envFile.Close() }, nil
}

// helperMarkers are the variables of a task's environment the helper's
// own environment keeps: recovery finds a task's processes by them (see
// EnvironMarks). The dynamic loader and the Go runtime read none of them.
var helperMarkers = []string{"SHOAL_JOB_ID", "SHOAL_INCARNATION", "SHOAL_STEP_ID", "SHOAL_NODE_NAME"}

// helperOwnEnv is the task namespace helper's own environment: a fixed PATH
// and the task's markers, nothing the job chose otherwise.
func helperOwnEnv(taskEnv []string) []string {
	env := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, k := range helperMarkers {
		if v := envValue(taskEnv, k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// envMemfd returns an anonymous file holding env, NUL-separated, read
// from its start: the task environment handed to the helper. It is
// close-on-exec here; os/exec passes it on as one of ExtraFiles.
func envMemfd(env []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("shoal-task-env", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("environment file: %w", err)
	}
	f := os.NewFile(uintptr(fd), "shoal-task-env")
	var b bytes.Buffer
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			f.Close()
			return nil, fmt.Errorf("environment entry %.40q: has a NUL byte", kv)
		}
		b.WriteString(kv)
		b.WriteByte(0)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return nil, fmt.Errorf("environment file: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("environment file: %w", err)
	}
	return f, nil
}

// readEnvFD reads the task environment envMemfd wrote from descriptor fd
// and closes it, so the rank does not inherit it.
func readEnvFD(fd int) ([]string, error) {
	f := os.NewFile(uintptr(fd), "task-env")
	if f == nil {
		return nil, fmt.Errorf("environment descriptor %d: invalid", fd)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEnvBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read environment from descriptor %d: %w", fd, err)
	}
	if len(b) > maxEnvBytes {
		return nil, fmt.Errorf("environment on descriptor %d: over %d bytes", fd, maxEnvBytes)
	}
	return parseEnvBlock(b), nil
}

// parseEnvBlock splits a NUL-separated environment; empty entries are
// dropped.
func parseEnvBlock(b []byte) []string {
	var env []string
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env
}

// hostsContent is a task's /etc/hosts: localhost, each node name at its
// agent's address (an entry whose address is not an IP, or whose name is
// empty or has blanks, is left out: /etc/hosts cannot say it), then the
// host's own /etc/hosts, so the names it knows still resolve; the first
// match wins, so node names resolve to their agents.
func hostsContent(hosts []task.Host, log *slog.Logger) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by shoal: the cluster's node names at their agents' addresses.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, h := range hosts {
		if h.Name == "" || strings.ContainsAny(h.Name, " \t\n#") || net.ParseIP(h.Addr) == nil {
			log.Warn("task /etc/hosts: entry left out", "node", h.Name, "addr", h.Addr)
			continue
		}
		fmt.Fprintf(&b, "%s\t%s\n", h.Addr, h.Name)
	}
	if own, err := os.ReadFile("/etc/hosts"); err == nil {
		b.WriteString("# The host's /etc/hosts:\n")
		b.Write(own)
		if len(own) > 0 && own[len(own)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// taskNamespaceArgs is what the helper's command line says.
type taskNamespaceArgs struct {
	hostname, hosts, dir string
	cred                 *syscall.Credential
	pdeathsig            syscall.Signal
	envFD                int      // the task's environment; -1: none given
	probe                bool     // set up, then exit 0 instead of exec
	argv                 []string // path, then the program's argv
}

func parseTaskNamespaceArgs(args []string) (taskNamespaceArgs, error) {
	a := taskNamespaceArgs{envFD: -1}
	var uid, gid = -1, -1
	var groups []uint32
	for len(args) > 0 {
		flag := args[0]
		args = args[1:]
		switch flag {
		case "--":
			a.argv = args
			args = nil
			continue
		case "--probe":
			a.probe = true
			continue
		}
		if len(args) == 0 {
			return a, fmt.Errorf("%s: missing value", flag)
		}
		v := args[0]
		args = args[1:]
		var err error
		switch flag {
		case "--hostname":
			a.hostname = v
		case "--hosts":
			a.hosts = v
		case "--dir":
			a.dir = v
		case "--uid":
			uid, err = parseID(v)
		case "--gid":
			gid, err = parseID(v)
		case "--groups":
			for g := range strings.SplitSeq(v, ",") {
				if g == "" {
					continue
				}
				var n int
				if n, err = parseID(g); err != nil {
					break
				}
				groups = append(groups, uint32(n))
			}
		case "--env-fd":
			a.envFD, err = strconv.Atoi(v)
			if err == nil && a.envFD < 3 {
				err = errors.New("want 3 or more (0 to 2 are the rank's stdio)")
			}
		case "--pdeathsig":
			var n int
			n, err = strconv.Atoi(v)
			if err == nil && (n <= 0 || n >= 65) {
				err = errors.New("not a signal number")
			}
			a.pdeathsig = syscall.Signal(n)
		default:
			return a, fmt.Errorf("unknown option %q", flag)
		}
		if err != nil {
			return a, fmt.Errorf("%s %q: %w", flag, v, err)
		}
	}
	switch {
	case a.hostname == "":
		return a, errors.New("--hostname: missing")
	case a.hosts == "":
		return a, errors.New("--hosts: missing")
	case (uid < 0) != (gid < 0):
		return a, errors.New("--uid and --gid: give both or neither")
	case !a.probe && len(a.argv) < 2:
		return a, errors.New("after --: want the program's path and its argv")
	case !a.probe && a.envFD < 0:
		// Never fall back to the helper's own environment: the task's
		// must not reach a root process's.
		return a, errors.New("--env-fd: missing")
	}
	if uid >= 0 {
		a.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}
	}
	return a, nil
}

func parseID(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	return int(n), err
}

// TaskNamespaceMain is the helper: run by a supervisor as root in a rank's new
// UTS and mount namespaces with the arguments inTaskNamespace wrote, it
// reads the task's environment from --env-fd (closing it), makes every
// mount a slave of the host's (so its own mounts never reach the host,
// while the host's later mounts still reach the job), bind-mounts the
// task's hosts file on /etc/hosts, sets the hostname, switches to the
// job's user, re-arms the parent-death signal and execs the rank's program
// with the task's environment (never this process's own). It returns only
// on failure, with the code a shell would give (126, 127) or 1 for a setup
// failure, after a message on stderr, which is the rank's.
func TaskNamespaceMain(args []string) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "shoal: task namespace: "+format+"\n", a...)
		return code
	}
	a, err := parseTaskNamespaceArgs(args)
	if err != nil {
		return fail(1, "%v", err)
	}
	var env []string
	if a.envFD >= 0 {
		if env, err = readEnvFD(a.envFD); err != nil {
			return fail(1, "%v", err)
		}
	}
	ppid := os.Getppid()
	// Run by hand or forked without the clone flags, the helper would
	// rename the host and mount over its /etc/hosts.
	for _, ns := range []string{"uts", "mnt"} {
		own, err1 := os.Readlink("/proc/self/ns/" + ns)
		parent, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", ppid, ns))
		if err := errors.Join(err1, err2); err != nil {
			return fail(1, "%s namespace: %v", ns, err)
		}
		if own == parent {
			return fail(1, "not in a %s namespace of its own (%s): refusing to change the host's", ns, own)
		}
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SLAVE, ""); err != nil {
		return fail(1, "make mounts private: %v", err)
	}
	if err := syscall.Mount(a.hosts, "/etc/hosts", "", syscall.MS_BIND, ""); err != nil {
		return fail(1, "bind %s on /etc/hosts: %v", a.hosts, err)
	}
	if err := syscall.Sethostname([]byte(a.hostname)); err != nil {
		return fail(1, "set hostname %q: %v", a.hostname, err)
	}
	if c := a.cred; c != nil {
		groups := make([]int, 0, len(c.Groups)+1)
		for _, g := range c.Groups {
			groups = append(groups, int(g))
		}
		if len(groups) == 0 {
			groups = append(groups, int(c.Gid))
		}
		if err := syscall.Setgroups(groups); err != nil {
			return fail(1, "setgroups: %v", err)
		}
		if err := syscall.Setresgid(int(c.Gid), int(c.Gid), int(c.Gid)); err != nil {
			return fail(1, "setresgid %d: %v", c.Gid, err)
		}
		if err := syscall.Setresuid(int(c.Uid), int(c.Uid), int(c.Uid)); err != nil {
			return fail(1, "setresuid %d: %v", c.Uid, err)
		}
	}
	if a.pdeathsig != 0 {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(a.pdeathsig), 0); e != 0 {
			return fail(1, "set parent-death signal: %v", e)
		}
		if os.Getppid() != ppid { // the supervisor died before the signal was armed
			return 128 + int(a.pdeathsig)
		}
	}
	if a.dir != "" {
		if err := syscall.Chdir(a.dir); err != nil {
			return fail(1, "chdir %s: %v", a.dir, err)
		}
	}
	if a.probe {
		return 0
	}
	// The rank keeps this process's pid through the exec: it is the
	// task's pid, which Slurm gives every task as SLURM_TASK_PID.
	env = withTaskPID(env, os.Getpid())
	err = syscall.Exec(a.argv[0], a.argv[1:], env)
	code := 126
	if errors.Is(err, syscall.ENOENT) {
		code = 127
	}
	return fail(code, "exec %s: %v", a.argv[0], err)
}

// ProbeTaskNamespace runs helper (the argv prefix of exec.Config.TaskNamespace)
// once in new namespaces, as a rank would, without running anything
// after the setup: an agent calls it to learn whether this machine lets
// it (root, a kernel and a container that allow the namespaces and the
// bind mount) before it enables task namespaces.
func ProbeTaskNamespace(helper []string, hostname string) error {
	if len(helper) == 0 {
		return errors.New("task namespace helper: empty")
	}
	args := append(helper[1:len(helper):len(helper)], "--probe", "--hostname", hostname, "--hosts", "/etc/hosts")
	cmd := osexec.Command(helper[0], args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("task namespace probe: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// withTaskPID is env with SLURM_TASK_PID=pid in place of any other.
func withTaskPID(env []string, pid int) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SLURM_TASK_PID=") {
			out = append(out, kv)
		}
	}
	return append(out, "SLURM_TASK_PID="+strconv.Itoa(pid))
}
