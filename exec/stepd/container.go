package stepd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/exec/rankexec"
	"github.com/shoal-sched/shoal/exec/task"
)

// Containers (--container=BUNDLE), as Slurm's OCI support runs them: the
// bundle is a directory with an OCI config.json and the root file system
// it names. Each rank runs in a container of its own, made from a copy of
// the bundle's config in which the supervisor sets what is the task's
// (ociConfig: the command, the environment contract over the image's
// variables, the working directory, the job's user, the node's host
// name) and started with the node's OCI runtime in the foreground
// (`runc run --bundle DIR ID`, one ID per rank and node; crun the same).
// The runtime is the rank's leader: the supervisor forks it as it forks
// any rank (its own process group, Pdeathsig, born in the task's
// cgroup), it passes the rank's stdin, stdout and stderr to the
// container, forwards the signals it gets to the container's first
// process and exits with its status, which is the rank's exit code.
//
// Cgroups: the container stays under the task's cgroup, so the task's
// limits bind it and the end of the task kills it with the rest (see
// cgroup.go). runc creates a cgroup per container; its config names a
// relative linux.cgroupsPath (the container's ID), which runc makes a
// child of its own cgroup, the task's. crun runs with
// --cgroup-manager=disabled and so leaves the container in the task's
// cgroup itself. The bundle's own linux.resources are dropped: the
// allocation sets the limits.
//
// Signals: SIGTERM (scancel, the time limit) reaches the runtime through
// its process group and the runtime forwards it; SIGKILL kills the
// runtime, not the container, so a SIGKILL is followed by the runtime's
// `delete --force ID`, which kills the container and forgets it, with
// or without cgroups.
//
// Security: the runtime runs as root (the agent must), the container's
// process as the job's user (process.user from the job's uid and gid and
// groups). For a job of another user than root the bundle is read as
// that user (so a bundle it cannot read is refused) and what it could
// use to gain privileges is removed: hooks (they run as root, outside
// the container), devices, capabilities, rlimits; noNewPrivileges is
// set, and every bind mount is nosuid and nodev, from a source the user
// can reach.

// Where a container sees what the supervisor gives it.
const (
	// containerScript is where a batch script is mounted in its
	// container (Slurm mounts its spool directory at /var/run/slurm).
	containerScript = "/var/run/shoal/job_script"
	// ociConfigFile is the OCI bundle's configuration.
	ociConfigFile = "config.json"
	// maxOCIConfigBytes bounds a bundle's config.json.
	maxOCIConfigBytes = 4 << 20
	// runtimeDeleteWait bounds one `RUNTIME delete --force`.
	runtimeDeleteWait = 10 * time.Second
)

// OCIRuntimes are the runtimes an agent looks for on its PATH, in order,
// when --oci-runtime does not name one. crun comes first: with its cgroup
// manager disabled it leaves the container in the task's cgroup and
// writes no cgroup of its own. runc always creates a cgroup for its
// container and writes device rules to it, among them "c *:* m", which
// cgroup v1 refuses under a job cgroup that confines GPUs (the devices
// controller keeps a child within its parent's exceptions): with Shoal's
// cgroups on v1, runc runs no container.
var OCIRuntimes = []string{"crun", "runc"}

// ociMount is a bind mount the supervisor adds to a container.
type ociMount struct {
	Source, Destination string
	ReadOnly            bool
}

// ociTask is what one rank's container runs: ociConfig's input besides
// the bundle's config.
type ociTask struct {
	// Bundle is the bundle's directory; a relative root.path is taken
	// from it.
	Bundle string
	// Args is the command, run inside the container (the runtime looks
	// a bare name up in Env's PATH there).
	Args []string
	// Env is the rank's environment; it wins over the image's variables
	// of the same names.
	Env []string
	Cwd string
	// UID, GID and Groups (supplementary) are the job's user.
	UID, GID int
	Groups   []uint32
	// Hostname, when set, is the container's host name (with a UTS
	// namespace of its own).
	Hostname string
	Mounts   []ociMount
	// CgroupsPath is linux.cgroupsPath; empty: none.
	CgroupsPath string
}

// ociConfig rewrites the bundle's config.json base for one rank's
// container, t. It keeps what it does not set (namespaces, the image's
// mounts, seccomp, ...), except, for a user other than root, what could
// raise privileges (see the comment at the top of this file). It is
// pure, and its output's keys are sorted.
func ociConfig(base []byte, t ociTask) ([]byte, error) {
	var cfg map[string]any
	if err := json.Unmarshal(base, &cfg); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	if cfg == nil {
		return nil, errors.New("config.json: want a JSON object")
	}
	if len(t.Args) == 0 {
		return nil, errors.New("container command: empty")
	}
	root, _ := cfg["root"].(map[string]any)
	rootPath, _ := root["path"].(string)
	if rootPath == "" {
		return nil, errors.New("config.json: root.path: empty, want the bundle's root file system")
	}
	if !filepath.IsAbs(rootPath) {
		rootPath = filepath.Join(t.Bundle, rootPath)
	}
	root["path"] = rootPath

	proc, ok := cfg["process"].(map[string]any)
	if !ok {
		proc = map[string]any{}
		cfg["process"] = proc
	}
	proc["args"] = t.Args
	proc["cwd"] = t.Cwd
	proc["terminal"] = false // the rank's descriptors pass through
	var image []string
	if env, ok := proc["env"].([]any); ok {
		for _, kv := range env {
			if s, ok := kv.(string); ok {
				image = append(image, s)
			}
		}
	}
	proc["env"] = mergeEnv(image, t.Env)
	usr := map[string]any{"uid": t.UID, "gid": t.GID}
	if groups := slices.DeleteFunc(slices.Clone(t.Groups), func(g uint32) bool { return g == uint32(t.GID) }); len(groups) > 0 {
		usr["additionalGids"] = groups
	}
	proc["user"] = usr

	linux, ok := cfg["linux"].(map[string]any)
	if !ok {
		linux = map[string]any{}
		cfg["linux"] = linux
	}
	delete(linux, "resources") // the allocation's cgroup sets the limits
	delete(linux, "cgroupsPath")
	if t.CgroupsPath != "" {
		linux["cgroupsPath"] = t.CgroupsPath
	}
	if t.Hostname != "" && hasNamespace(linux, "uts") {
		cfg["hostname"] = t.Hostname
	}

	mounts, _ := cfg["mounts"].([]any)
	for _, m := range t.Mounts {
		opts := []any{"rbind", "nosuid", "nodev"}
		if m.ReadOnly {
			opts = append(opts, "ro")
		}
		mounts = append(mounts, map[string]any{"destination": m.Destination, "type": "bind", "source": m.Source, "options": opts})
	}
	if t.UID != 0 {
		if err := unprivileged(cfg, linux, proc, mounts); err != nil {
			return nil, err
		}
	}
	if mounts != nil {
		cfg["mounts"] = mounts
	}
	return json.MarshalIndent(cfg, "", "\t")
}

// virtualMounts are the file systems a user's bundle may mount besides
// binds: none of them reaches the host's files.
var virtualMounts = []string{"proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2"}

// unprivileged takes out of the config of a container that runs as a
// user other than root what the runtime, as root, would do for it that
// the user could not: hooks (run as root outside the container), device
// nodes, capabilities, rlimits above the node's, an OOM score, CPU or I/O
// scheduling class or cache class of its own, sysctls, and mounts of
// anything but what the user can reach (binds, made nosuid and nodev)
// and virtual file systems; and it refuses a user namespace (its uid
// mappings could make the job's uid root outside) and joining an
// existing namespace (another job's, or the host's).
func unprivileged(cfg, linux, proc map[string]any, mounts []any) error {
	nss, _ := linux["namespaces"].([]any)
	for _, ns := range nss {
		m, _ := ns.(map[string]any)
		switch {
		case m["type"] == "user":
			return errors.New("config.json: linux.namespaces: a user namespace is for jobs of root only (the container runs as the job's user)")
		case m["path"] != nil:
			return fmt.Errorf("config.json: linux.namespaces: joining the %v namespace at %v is for jobs of root only", m["type"], m["path"])
		}
	}
	for _, m := range mounts {
		mm, _ := m.(map[string]any)
		if isBind(mm) {
			mm["options"] = withOptions(mm["options"], "nosuid", "nodev")
			continue
		}
		if typ, _ := mm["type"].(string); !slices.Contains(virtualMounts, typ) {
			return fmt.Errorf("config.json: mounts: %v of type %q is for jobs of root only; want a bind or one of %s",
				mm["destination"], typ, strings.Join(virtualMounts, ", "))
		}
	}
	delete(cfg, "hooks")
	for _, k := range []string{"devices", "uidMappings", "gidMappings", "sysctl"} {
		delete(linux, k)
	}
	// What only root may ask of the kernel for itself: limits above the
	// node's, an OOM score below the node's tasks', a real-time CPU or
	// I/O class, a cache allocation class.
	for _, k := range []string{"rlimits", "oomScoreAdj", "scheduler", "ioPriority"} {
		delete(proc, k)
	}
	delete(linux, "intelRdt")
	proc["capabilities"] = map[string]any{}
	proc["noNewPrivileges"] = true
	return nil
}

// mergeEnv is the image's variables with the rank's over them: the
// image's order, then the rank's new names in theirs.
func mergeEnv(image, task []string) []string {
	value := map[string]string{}
	var order []string
	add := func(kv string) {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := value[k]; !ok {
			order = append(order, k)
		}
		value[k] = v
	}
	for _, kv := range image {
		add(kv)
	}
	for _, kv := range task {
		add(kv)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+value[k])
	}
	return out
}

func hasNamespace(linux map[string]any, kind string) bool {
	nss, _ := linux["namespaces"].([]any)
	for _, ns := range nss {
		if m, ok := ns.(map[string]any); ok && m["type"] == kind && m["path"] == nil {
			return true
		}
	}
	return false
}

// isBind says whether an OCI mount is a bind mount.
func isBind(m map[string]any) bool {
	if m["type"] == "bind" {
		return true
	}
	opts, _ := m["options"].([]any)
	return slices.Contains(opts, any("bind")) || slices.Contains(opts, any("rbind"))
}

// withOptions is a mount's options with add, without their negations.
func withOptions(opts any, add ...string) []any {
	list, _ := opts.([]any)
	var out []any
	for _, o := range list {
		if s, ok := o.(string); ok && slices.Contains(add, "no"+s) {
			continue // "suid", "dev"
		}
		out = append(out, o)
	}
	for _, a := range add {
		if !slices.Contains(out, any(a)) {
			out = append(out, a)
		}
	}
	return out
}

// bindSources are the sources of cfg's bind mounts.
func bindSources(cfg []byte) []string {
	var c struct {
		Mounts []map[string]any `json:"mounts"`
	}
	if json.Unmarshal(cfg, &c) != nil {
		return nil
	}
	var out []string
	for _, m := range c.Mounts {
		if src, ok := m["source"].(string); ok && isBind(m) {
			out = append(out, src)
		}
	}
	return out
}

// ContainerID is the OCI runtime's id of a rank's container: unique on
// the host (agents of several nodes may share one), made of the
// characters runc and crun accept.
func ContainerID(node string, k task.Key, rank int) string {
	step := "j"
	if k.Step != task.NoStep {
		step = strconv.Itoa(k.Step)
	}
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, node)
	return fmt.Sprintf("shoal-%s-%d-%d-%s-%d", safe, k.Job, k.Incarnation, step, rank)
}

// ociRuntime is the node's OCI runtime.
type ociRuntime string

// crun says whether the runtime is crun (by its name).
func (r ociRuntime) crun() bool { return filepath.Base(string(r)) == "crun" }

// runArgs is the argv that runs container id from bundle dir in the
// foreground.
func (r ociRuntime) runArgs(dir, id string) []string {
	if r.crun() {
		return []string{string(r), "--cgroup-manager=disabled", "run", "--bundle", dir, id}
	}
	return []string{string(r), "run", "--bundle", dir, id}
}

// command makes cmd, a rank's command, run container id from bundle dir
// with the runtime, as root (see wrap).
func (r ociRuntime) command(cmd *osexec.Cmd, dir, id string, shim []string) {
	argv := r.runArgs(dir, id)
	cmd.Path, cmd.Args, cmd.Env, cmd.ExtraFiles = argv[0], argv, nil, nil
	cmd.SysProcAttr.Credential = nil
	r.wrap(cmd, shim)
}

// wrap makes crun's cmd go through the exec shim (shim; none: directly)
// in a mount namespace of its own, where the shim detaches a hybrid
// host's cgroup v2 mount before it execs crun.
func (r ociRuntime) wrap(cmd *osexec.Cmd, shim []string) {
	if !r.crun() || len(shim) == 0 {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Unshareflags |= syscall.CLONE_NEWNS // and Go makes it private
	cmd.Args = append(append(append(slices.Clone(shim), rankexec.DetachUnifiedFlag, "--"), cmd.Path), cmd.Args...)
	cmd.Path = shim[0]
}

// cgroupsPath is the linux.cgroupsPath of container id: a child of the
// runtime's own cgroup (the task's) for runc, none for crun (whose
// cgroup manager is disabled).
func (r ociRuntime) cgroupsPath(id string) string {
	if r.crun() {
		return ""
	}
	return id
}

// remove kills container id and forgets it: what follows a SIGKILL of
// its runtime process, and the end of every container rank.
func (r ociRuntime) remove(id string, shim []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), runtimeDeleteWait)
	defer cancel()
	cmd := osexec.CommandContext(ctx, string(r), "delete", "--force", id)
	r.wrap(cmd, shim)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s delete --force %s: %w: %s", r, id, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// containerSetup is what every rank of a container task shares.
type containerSetup struct {
	runtime ociRuntime
	bundle  string
	config  []byte // the bundle's config.json
}

// prepareContainer checks that this node can run a task in bundle, in
// workDir, and reads the bundle's config as the job's user (cred; nil:
// as the supervisor). Its errors name the node.
func prepareContainer(bundle, workDir, runtime, node string, cred *syscall.Credential) (*containerSetup, error) {
	switch {
	case runtime == "":
		return nil, fmt.Errorf("node %s: --container %s: no OCI runtime on this node (install %s, or start the agent with --oci-runtime)",
			node, bundle, strings.Join(OCIRuntimes, " or "))
	case os.Geteuid() != 0:
		return nil, fmt.Errorf("node %s: --container %s: the agent runs as uid %d; an OCI runtime needs root", node, bundle, os.Geteuid())
	}
	f, err := task.OpenAsUser(filepath.Join(bundle, ociConfigFile), os.O_RDONLY|syscall.O_NONBLOCK, cred)
	if err != nil {
		return nil, fmt.Errorf("node %s: --container %s: not an OCI bundle: %w", node, bundle, err)
	}
	defer f.Close()
	b, err := readBounded(f, maxOCIConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("node %s: --container %s: %s: %w", node, bundle, ociConfigFile, err)
	}
	if err := reachable(workDir, cred); err != nil {
		return nil, fmt.Errorf("node %s: --container %s: work dir: %w", node, bundle, err)
	}
	return &containerSetup{runtime: ociRuntime(runtime), bundle: bundle, config: b}, nil
}

func readBounded(f *os.File, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes, want at most %d", fi.Size(), limit)
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && n != len(b) {
		return nil, err
	}
	return b, nil
}

// reachable checks that the job's user (cred; nil: root) can reach path:
// a bind mount or root file system the user could not open must not let
// it in through the container.
func reachable(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	f, err := task.OpenAsUser(path, unix.O_PATH, cred)
	if err != nil {
		return err
	}
	return f.Close()
}

// containerCommand makes cmd, rank's command, run t in a container of
// its own: it writes the rank's bundle and sets cmd to run the runtime.
// An error, which names the node, goes to the rank's stderr too, where
// the task's errors go (as slurmstepd's).
func (s *supervisor) containerCommand(ctr *containerSetup, cmd *osexec.Cmd, rank int, t ociTask, script *os.File, cred *syscall.Credential, stderr *os.File) error {
	id := ContainerID(s.cfg.NodeName, s.key, rank)
	t.CgroupsPath = ctr.runtime.cgroupsPath(id)
	dir, err := ctr.rankBundle(s.dir, id, t, script, cred)
	if err != nil {
		err = fmt.Errorf("node %s: --container %s: %w", s.cfg.NodeName, ctr.bundle, err)
		fmt.Fprintf(stderr, "shoal stepd: error: %v\n", err)
		return err
	}
	ctr.runtime.command(cmd, dir, id, s.cfg.TaskExec)
	s.containers, s.runtime = append(s.containers, id), ctr.runtime
	return nil
}

// rankBundle writes the bundle of one rank's container, id, under the
// task directory dir: its config.json (from t) and, for a batch script,
// the script the container mounts at containerScript. The runtime reads
// it as root; the script is the job user's (cred).
func (c *containerSetup) rankBundle(dir, id string, t ociTask, script *os.File, cred *syscall.Credential) (string, error) {
	t.Bundle = c.bundle
	b := filepath.Join(dir, "oci."+id)
	if err := os.Mkdir(b, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if script != nil {
		p := filepath.Join(b, "job_script")
		data, err := readBounded(script, 1<<30)
		if err != nil {
			return "", fmt.Errorf("batch script: %w", err)
		}
		if err := os.WriteFile(p, data, 0o500); err != nil {
			return "", err
		}
		if cred != nil {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return "", err
			}
		}
		t.Mounts = append(t.Mounts, ociMount{Source: p, Destination: containerScript, ReadOnly: true})
	}
	cfg, err := ociConfig(c.config, t)
	if err != nil {
		return "", err
	}
	if cred != nil {
		var parsed struct {
			Root struct {
				Path string `json:"path"`
			} `json:"root"`
		}
		_ = json.Unmarshal(cfg, &parsed)
		for _, p := range append([]string{parsed.Root.Path}, bindSources(c.config)...) {
			if err := reachable(p, cred); err != nil {
				return "", err // the path is in the error
			}
		}
	}
	return b, os.WriteFile(filepath.Join(b, ociConfigFile), cfg, 0o600)
}
