// Package rankexec is what runs in a rank's own process before its
// program: the exec shim that gives a rank its pid as SLURM_TASK_PID
// (ExecMain) and the task namespace helper (NamespaceMain). Go cannot
// run code between fork and exec, so a task supervisor (package stepd)
// forks each rank into one of these, a hidden subcommand of a binary,
// which execs the rank's program in place.
//
// They run once per rank, so their start is part of every task's: the
// package imports nothing but the standard library's process and file
// calls, so that shoal-slurm, the small binary, can serve them
// (cmd/shoal/shim) without the agent's packages' initialisation, and
// the full shoal binary serves them as well. Both dispatch on their
// command before anything else runs.
//
// It must never import the agent's packages, the API client, or
// anything whose init costs (TestImportsOnlyStd).
package rankexec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Task namespaces: on one machine that hosts several agents (`shoal dev`,
// the integration tests), node names are not host names. With task
// namespaces on, each rank runs in its own UTS and mount namespace whose
// hostname is the node's name and whose /etc/hosts maps every node name
// to its agent's address, as on a real cluster. The supervisor forks the
// rank (as root, in the new namespaces) into the helper, NamespaceMain,
// which sets the hostname, bind-mounts the hosts file, takes the job's
// user's ids and execs the rank's program. The helper runs as root, so
// it runs with a fixed environment of its own, and the task's arrives on
// an inherited descriptor (--env-fd) that it applies only at the final
// exec, after dropping to the user's ids (see stepd's taskns.go).

// NamespaceCommand is the hidden subcommand of the shoal and
// shoal-slurm binaries that runs NamespaceMain.
const NamespaceCommand = "__task-namespace"

// ExecCommand is the hidden subcommand of the shoal and shoal-slurm
// binaries that runs ExecMain.
const ExecCommand = "__task-exec"

// DetachUnifiedFlag, before the exec shim's "--", makes it detach the
// cgroup v2 mount of a hybrid host (see detachHybridUnified).
const DetachUnifiedFlag = "--detach-hybrid-unified"

// Main runs the hidden subcommand args[1] names when it is one of this
// package's, with the rest of args, and reports whether it was: a
// binary's main calls it first, before signal handlers or flag parsing
// touch the rank's argv. It returns only when the subcommand failed.
func Main(args []string) (code int, ok bool) {
	if len(args) < 2 {
		return 0, false
	}
	switch args[1] {
	case NamespaceCommand:
		return NamespaceMain(args[2:]), true
	case ExecCommand:
		return ExecMain(args[2:]), true
	}
	return 0, false
}

// ExecMain is the exec shim: args are "--", the program's path and
// its argv (argv[0] first). It execs the program with this process's
// environment plus SLURM_TASK_PID, this pid, and returns only on
// failure, with the code a shell would give (126, 127) after a message
// on stderr, which is the rank's. With "--probe" alone it returns 0:
// the agent asks so whether a binary serves the shim.
//
// With DetachUnifiedFlag first, it runs an OCI runtime (see stepd's
// container.go): started in a mount namespace of its own, it first
// detaches a hybrid host's cgroup v2 mount there, which crun refuses.
func ExecMain(args []string) int {
	if len(args) == 1 && args[0] == "--probe" {
		return 0
	}
	if len(args) > 0 && args[0] == DetachUnifiedFlag {
		if err := detachHybridUnified(); err != nil {
			fmt.Fprintf(os.Stderr, "shoal: task exec: %v\n", err)
			return 126
		}
		args = args[1:]
	}
	if len(args) < 3 || args[0] != "--" {
		fmt.Fprintf(os.Stderr, "shoal: task exec: want -- PATH ARGV0 [ARGS...], got %q\n", args)
		return 1
	}
	err := syscall.Exec(args[1], args[2:], WithTaskPID(os.Environ(), os.Getpid()))
	fmt.Fprintf(os.Stderr, "shoal: task exec: %s: %v\n", args[1], err)
	if err == syscall.ENOENT {
		return 127
	}
	return 126
}

// hybridUnified is where a hybrid host (cgroup v1 controllers, a cgroup
// v2 mount beside them) mounts cgroup v2.
const hybridUnified = "/sys/fs/cgroup/unified"

// detachHybridUnified detaches the cgroup v2 mount of a hybrid host in
// this process's mount namespace (the runtime's own, private one): crun
// 1.8 refuses a hybrid hierarchy whose v2 mount holds controllers, even
// with its cgroup manager disabled, and runs on the v1 controllers
// without it. A host that is not hybrid is left alone.
func detachHybridUnified() error {
	var root, unified unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &root) != nil || root.Type != unix.TMPFS_MAGIC {
		return nil
	}
	if unix.Statfs(hybridUnified, &unified) != nil || unified.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil
	}
	if err := unix.Unmount(hybridUnified, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach %s for the OCI runtime: %w", hybridUnified, err)
	}
	return nil
}

// maxEnvBytes bounds a task environment the helper reads (Linux refuses
// much smaller ones at exec).
const maxEnvBytes = 64 << 20

// ReadEnvFD reads the task environment the supervisor wrote (stepd's envMemfd) from descriptor fd
// and closes it, so the rank does not inherit it.
func ReadEnvFD(fd int) ([]string, error) {
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
	return ParseEnvBlock(b), nil
}

// ParseEnvBlock splits a NUL-separated environment; empty entries are
// dropped.
func ParseEnvBlock(b []byte) []string {
	var env []string
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env
}

// NamespaceArgs is what the helper's command line says.
type NamespaceArgs struct {
	Hostname, Hosts, Dir string
	Cred                 *syscall.Credential
	Pdeathsig            syscall.Signal
	EnvFD                int      // the task's environment; -1: none given
	Probe                bool     // set up, then exit 0 instead of exec
	Argv                 []string // path, then the program's argv
}

func ParseNamespaceArgs(args []string) (NamespaceArgs, error) {
	a := NamespaceArgs{EnvFD: -1}
	var uid, gid = -1, -1
	var groups []uint32
	for len(args) > 0 {
		flag := args[0]
		args = args[1:]
		switch flag {
		case "--":
			a.Argv = args
			args = nil
			continue
		case "--probe":
			a.Probe = true
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
			a.Hostname = v
		case "--hosts":
			a.Hosts = v
		case "--dir":
			a.Dir = v
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
			a.EnvFD, err = strconv.Atoi(v)
			if err == nil && a.EnvFD < 3 {
				err = errors.New("want 3 or more (0 to 2 are the rank's stdio)")
			}
		case "--pdeathsig":
			var n int
			n, err = strconv.Atoi(v)
			if err == nil && (n <= 0 || n >= 65) {
				err = errors.New("not a signal number")
			}
			a.Pdeathsig = syscall.Signal(n)
		default:
			return a, fmt.Errorf("unknown option %q", flag)
		}
		if err != nil {
			return a, fmt.Errorf("%s %q: %w", flag, v, err)
		}
	}
	switch {
	case a.Hostname == "":
		return a, errors.New("--hostname: missing")
	case a.Hosts == "":
		return a, errors.New("--hosts: missing")
	case (uid < 0) != (gid < 0):
		return a, errors.New("--uid and --gid: give both or neither")
	case !a.Probe && len(a.Argv) < 2:
		return a, errors.New("after --: want the program's path and its argv")
	case !a.Probe && a.EnvFD < 0:
		// Never fall back to the helper's own environment: the task's
		// must not reach a root process's.
		return a, errors.New("--env-fd: missing")
	}
	if uid >= 0 {
		a.Cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}
	}
	return a, nil
}

func parseID(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	return int(n), err
}

// NamespaceMain is the helper: run by a supervisor as root in a rank's new
// UTS and mount namespaces with the arguments stepd's inTaskNamespace wrote, it
// reads the task's environment from --env-fd (closing it), makes every
// mount a slave of the host's (so its own mounts never reach the host,
// while the host's later mounts still reach the job), bind-mounts the
// task's hosts file on /etc/hosts, sets the hostname, switches to the
// job's user, re-arms the parent-death signal and execs the rank's program
// with the task's environment (never this process's own). It returns only
// on failure, with the code a shell would give (126, 127) or 1 for a setup
// failure, after a message on stderr, which is the rank's.
func NamespaceMain(args []string) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "shoal: task namespace: "+format+"\n", a...)
		return code
	}
	a, err := ParseNamespaceArgs(args)
	if err != nil {
		return fail(1, "%v", err)
	}
	var env []string
	if a.EnvFD >= 0 {
		if env, err = ReadEnvFD(a.EnvFD); err != nil {
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
	if err := syscall.Mount(a.Hosts, "/etc/hosts", "", syscall.MS_BIND, ""); err != nil {
		return fail(1, "bind %s on /etc/hosts: %v", a.Hosts, err)
	}
	if err := syscall.Sethostname([]byte(a.Hostname)); err != nil {
		return fail(1, "set hostname %q: %v", a.Hostname, err)
	}
	if c := a.Cred; c != nil {
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
	if a.Pdeathsig != 0 {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(a.Pdeathsig), 0); e != 0 {
			return fail(1, "set parent-death signal: %v", e)
		}
		if os.Getppid() != ppid { // the supervisor died before the signal was armed
			return 128 + int(a.Pdeathsig)
		}
	}
	if a.Dir != "" {
		if err := syscall.Chdir(a.Dir); err != nil {
			return fail(1, "chdir %s: %v", a.Dir, err)
		}
	}
	if a.Probe {
		return 0
	}
	// The rank keeps this process's pid through the exec: it is the
	// task's pid, which Slurm gives every task as SLURM_TASK_PID.
	env = WithTaskPID(env, os.Getpid())
	err = syscall.Exec(a.Argv[0], a.Argv[1:], env)
	code := 126
	if errors.Is(err, syscall.ENOENT) {
		code = 127
	}
	return fail(code, "exec %s: %v", a.Argv[0], err)
}

// WithTaskPID is env with SLURM_TASK_PID=pid in place of any other.
func WithTaskPID(env []string, pid int) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SLURM_TASK_PID=") {
			out = append(out, kv)
		}
	}
	return append(out, "SLURM_TASK_PID="+strconv.Itoa(pid))
}
