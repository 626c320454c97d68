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

	"github.com/shoal-sched/shoal/exec/rankexec"
	"github.com/shoal-sched/shoal/exec/task"
)

// Task namespaces: on one machine that hosts several agents (`shoal dev`,
// the integration tests), node names are not host names. With
// exec.Config.TaskNamespace set, each rank runs in its own UTS and mount
// namespace whose hostname is the node's name and whose /etc/hosts maps
// every node name to its agent's address, as on a real cluster. Go cannot
// run code between fork and exec, so the rank is forked (as root, in the
// new namespaces) into a helper, the hidden subcommand
// TaskNamespaceCommand (package rankexec), which sets the hostname,
// bind-mounts the hosts file, takes the job's user's ids and execs the
// rank's program.
//
// The helper runs as root, so it must not run with the task's
// environment: LD_PRELOAD or LD_LIBRARY_PATH would make the dynamic
// loader of a cgo build run the job's code as root, and GODEBUG and the
// like would steer the helper's runtime. It gets a fixed environment of
// its own (helperOwnEnv: the task's markers, which recovery finds processes
// by, and nothing else), and the task's environment on an inherited
// descriptor (a memfd, --env-fd), which it applies only at the final
// exec, after dropping to the user's ids.

// TaskNamespaceCommand is the hidden subcommand that runs the task
// namespace helper (rankexec.NamespaceMain).
const TaskNamespaceCommand = rankexec.NamespaceCommand

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
