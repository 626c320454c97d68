package exec

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Task namespaces: on one machine that hosts several agents (`shoal dev`,
// the integration tests), node names are not host names. With
// Config.TaskNamespace set, each rank runs in its own UTS and mount
// namespace whose hostname is the node's name and whose /etc/hosts maps
// every node name to its agent's address, as on a real cluster. Go cannot
// run code between fork and exec, so the rank is forked (as root, in the
// new namespaces) into a helper, the shoal binary's hidden subcommand
// TaskNamespaceCommand, which sets the hostname, bind-mounts the hosts
// file, takes the job's user's ids and execs the rank's program.

// TaskNamespaceCommand is the hidden subcommand of the shoal binary that
// runs TaskNamespaceMain.
const TaskNamespaceCommand = "__task-namespace"

// hostsFile is the private /etc/hosts of a task in its task directory.
const hostsFile = "hosts"

// Host is a node name and its agent's address (an IP), for the private
// /etc/hosts of tasks.
type Host struct {
	Name string
	Addr string
}

// inTaskNamespace makes cmd, a rank's command as exec builds it, run in
// its own UTS and mount namespace through helper (Config.TaskNamespace),
// with hostname as its hostname and hosts, written to taskDir once, as its
// /etc/hosts; with helper empty it leaves cmd alone. The helper runs as
// root and takes the rank's Credential itself (a process that has switched
// to the user could not set a hostname or mount), then re-arms Pdeathsig,
// which a change of ids clears, and enters cmd.Dir as the user. It depends
// on nothing but its arguments, so any process that forks ranks can call it.
func inTaskNamespace(cmd *osexec.Cmd, helper []string, hostname, taskDir string, hosts []Host, log *slog.Logger) error {
	if len(helper) == 0 {
		return nil
	}
	file := filepath.Join(taskDir, hostsFile)
	if ok, err := exists(file); err != nil {
		return fmt.Errorf("task namespace: %w", err)
	} else if !ok {
		// Read by the helper before any rank runs; a task never restarts,
		// so the file needs no sync.
		if err := os.WriteFile(file, hostsContent(hosts, log), 0o644); err != nil {
			return fmt.Errorf("task namespace: write %s: %w", file, err)
		}
	}
	args := append(helper[1:len(helper):len(helper)], "--hostname", hostname, "--hosts", file)
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
	a := *attr
	a.Credential = nil
	a.Cloneflags |= syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS
	cmd.SysProcAttr = &a
	return nil
}

// hostsContent is a task's /etc/hosts: localhost, each node name at its
// agent's address (an entry whose address is not an IP, or whose name is
// empty or has blanks, is left out: /etc/hosts cannot say it), then the
// host's own /etc/hosts, so the names it knows still resolve; the first
// match wins, so node names resolve to their agents.
func hostsContent(hosts []Host, log *slog.Logger) []byte {
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
	probe                bool     // set up, then exit 0 instead of exec
	argv                 []string // path, then the program's argv
}

func parseTaskNamespaceArgs(args []string) (taskNamespaceArgs, error) {
	var a taskNamespaceArgs
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

// TaskNamespaceMain is the helper: run by exec as root in a rank's new
// UTS and mount namespaces with the arguments inTaskNamespace wrote, it
// makes every mount a slave of the host's (so its own mounts never reach
// the host, while the host's later mounts still reach the job), bind-mounts
// the task's hosts file on /etc/hosts, sets the hostname, switches to the
// job's user, re-arms the parent-death signal and execs the rank's program
// with this process's environment. It returns only on failure, with the
// code a shell would give (126, 127) or 1 for a setup failure, after a
// message on stderr, which is the rank's.
func TaskNamespaceMain(args []string) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "shoal: task namespace: "+format+"\n", a...)
		return code
	}
	a, err := parseTaskNamespaceArgs(args)
	if err != nil {
		return fail(1, "%v", err)
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
		if os.Getppid() != ppid { // the agent died before the signal was armed
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
	err = syscall.Exec(a.argv[0], a.argv[1:], os.Environ())
	code := 126
	if errors.Is(err, syscall.ENOENT) {
		code = 127
	}
	return fail(code, "exec %s: %v", a.argv[0], err)
}

// ProbeTaskNamespace runs helper (the argv prefix of Config.TaskNamespace)
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
