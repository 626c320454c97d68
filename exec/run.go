package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// rankStart is what a rank goroutine reports once its process was forked.
type rankStart struct {
	pid        int
	startTicks uint64
	err        error
}

// run launches t's ranks, supervises them to the end and records the exit.
// It sends the launch result on launched exactly once, before supervising.
func (e *Executor) run(t *task, launched chan<- error) {
	log := e.log.With("job", t.key.Job, "incarnation", t.key.Incarnation)
	if t.key.Step != NoStep {
		log = log.With("step", t.key.Step)
	}
	exits := make(chan rankExit, t.plan.ranks)

	var cg *taskCgroup
	var pgids []int
	var startCode int
	var startErr error
	if e.cfg.Cgroup != nil {
		// A task that cannot be confined does not run.
		if cg, startErr = e.setupCgroup(t, log); startErr != nil {
			startCode = codeNotFound
		}
	}
	if startErr == nil {
		pgids, startCode, startErr = e.startRanks(t, log, cg, exits)
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	if cg != nil {
		go func() { // stopped below, before the usage is read
			defer close(sampled)
			cg.sample(stopSampling)
		}()
	} else {
		close(sampled)
	}
	e.mu.Lock()
	t.pgids = pgids // before Start returns, so Signal reaches them
	e.mu.Unlock()
	if startErr != nil {
		log.Error("start ranks", "err", startErr)
		launched <- fmt.Errorf("start job %s: %w: %w", t.key, ErrStartFailed, startErr)
	} else {
		log.Info("ranks started", "ranks", t.plan.ranks, "pids", pgids)
		launched <- nil
	}

	signal := func(sig syscall.Signal) {
		for _, pg := range pgids {
			if err := syscall.Kill(-pg, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				log.Warn("signal ranks", "pid", pg, "signal", sig.String(), "err", err)
			}
		}
		if cg != nil {
			// Ending the task reaches what left the ranks' groups too.
			cg.signalOutside(sig, pgids)
		}
	}
	s := supervision{
		ranks:     len(pgids),
		exits:     exits,
		stop:      t.stop,
		timeLimit: t.plan.timeLimit - time.Since(t.start),
		grace:     e.cfg.KillWait,
		signal:    signal,
		onSignal: func(cause string, sig syscall.Signal) {
			log.Info("ending ranks", "cause", cause, "signal", sig.String())
		},
		fenceGrace: e.cfg.KillGrace,
	}
	if d, ok := earlySignalDelay(t.launch, t.plan, t.start, time.Now()); ok && startErr == nil {
		js := t.launch.Spec.Signal
		s.early = d
		s.earlySignal = func() {
			sig := syscall.Signal(js.Number)
			log.Info("signal before the time limit", "signal", sig.String(), "before", js.Before, "shell_only", js.BatchOnly)
			if err := signalGroups(pgids, sig, js.BatchOnly); err != nil {
				log.Warn("signal before the time limit", "err", err)
			}
		}
	}
	if t.plan.timeLimit <= 0 {
		s.timeLimit = 0
	} else if s.timeLimit <= 0 {
		s.timeLimit = time.Nanosecond
	}
	if startErr != nil {
		s.initial = causeStartFail
	}
	out := supervise(s)
	if startErr != nil {
		out = outcome{code: startCode, cause: causeStartFail}
	}

	// Every leader is reaped. Whatever they left behind in their groups
	// (background children) dies with them, as in a Slurm step, and exec
	// waits for it: the GPUs are released only once nothing runs.
	signal(syscall.SIGKILL)
	if alive := waitGroupsGone(pgids, killWait); len(alive) > 0 {
		log.Error("processes survived SIGKILL", "pids", alive)
	}
	close(stopSampling)
	<-sampled
	if cg != nil {
		// Everything in the task's cgroup, wherever it moved in the
		// process tree, dies before the exit is recorded.
		usage, oom := cg.end(log)
		out.usage = usage
		if oom && out.cause == causeExit {
			// The kernel killed a process for the job's memory limit: the
			// job ran out of memory, whatever its leader's code (Slurm's
			// OUT_OF_MEMORY).
			out.cause = causeOOM
			if out.code == 0 {
				out.code = 128 + int(syscall.SIGKILL)
			}
		}
	}
	e.finish(t, out)
}

// startRanks forks the ranks one by one. It returns the pids of those
// started (each leads its own process group), and on a failure the exit
// code a shell would give and the error; the ranks started so far then run
// until supervise stops them.
func (e *Executor) startRanks(t *task, log *slog.Logger, cg *taskCgroup, exits chan<- rankExit) (pgids []int, code int, err error) {
	l, p := t.launch, t.plan

	if p.workDir == "" {
		return nil, codeNotFound, errors.New("work dir: empty")
	}
	if fi, err := os.Stat(p.workDir); err != nil {
		return nil, codeNotFound, fmt.Errorf("work dir: %w", err)
	} else if !fi.IsDir() {
		return nil, codeNotFound, fmt.Errorf("work dir %s: not a directory", p.workDir)
	}

	id := lookupUser(l.Spec.UID, l.Spec.GID)
	var cred *syscall.Credential
	if os.Geteuid() == 0 && l.Spec.UID != 0 {
		cred = &syscall.Credential{Uid: uint32(l.Spec.UID), Gid: uint32(l.Spec.GID), Groups: id.groups}
	}
	var script *os.File
	if p.script {
		if script, err = writeScript(t.dir, l.Spec.Batch.Script, cred); err != nil {
			return nil, codeNotFound, fmt.Errorf("batch script: %w", err)
		}
		defer script.Close()
	}

	for local := range p.ranks {
		rank := p.first + local
		var env []string
		var path string
		var args []string
		var extra []*os.File
		switch {
		case p.script:
			env = batchEnv(l, id.home)
			// The task directory is the agent's alone; a script that runs
			// as another user is executed through its open descriptor.
			path = script.Name()
			if cred != nil {
				path, extra = "/dev/fd/3", []*os.File{script}
			}
			args = append([]string{path}, p.argv...)
		default:
			env = contractEnv(l, local, id.home)
			path, err = lookPath(p.argv[0], envValue(env, "PATH"), p.workDir)
			if err != nil {
				return pgids, startFailCode(err), fmt.Errorf("rank %d: %w", rank, err)
			}
			args = p.argv
		}
		stdout, stderr, err := e.openOutput(t, rank, cred)
		if err != nil {
			return pgids, codeNotFound, fmt.Errorf("rank %d: %w", rank, err)
		}
		cmd := &osexec.Cmd{
			Path:       path,
			Args:       args,
			Env:        env,
			Dir:        p.workDir,
			Stdout:     stdout,
			Stderr:     stderr,
			ExtraFiles: extra,
			SysProcAttr: &syscall.SysProcAttr{
				Setpgid:    true,
				Pdeathsig:  syscall.SIGKILL,
				Credential: cred,
			},
		}
		release, err := inTaskNamespace(cmd, e.cfg.TaskNamespace, e.cfg.NodeName, t.dir, l.Hosts, log)
		if err != nil {
			stdout.Close()
			if stderr != stdout {
				stderr.Close()
			}
			return pgids, codeNotFound, fmt.Errorf("rank %d: %w", rank, err)
		}
		ready := make(chan rankStart, 1)
		e.wg.Go(func() { runRank(cmd, cg, local, ready, exits) })
		r := <-ready // bounded: fork and exec
		release()
		stdout.Close()
		if stderr != stdout {
			stderr.Close()
		}
		if r.err != nil {
			return pgids, startFailCode(r.err), fmt.Errorf("rank %d: %w", rank, r.err)
		}
		pgids = append(pgids, r.pid)
		log.Debug("rank started", "rank", rank, "pid", r.pid)
		if err := writeJSON(t.dir, procFile(rank), procRecord{Rank: rank, PID: r.pid, StartTicks: r.startTicks}); err != nil {
			// A rank exec cannot find again after a crash must not run.
			return pgids, codeNotFound, fmt.Errorf("rank %d: record pid %d: %w", rank, r.pid, err)
		}
	}
	return pgids, 0, nil
}

// runRank starts cmd and waits for it. The child's Pdeathsig (SIGKILL)
// fires when the OS thread that forked it exits, not the process: the
// goroutine keeps that thread locked until the child is reaped, so the
// signal fires only if the agent itself dies. The same locked thread
// forks the child into the task's cgroup cg, when there is one: the
// child never runs outside it.
func runRank(cmd *osexec.Cmd, cg *taskCgroup, local int, ready chan<- rankStart, exits chan<- rankExit) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	leave, err := enterForFork(cg, cmd.SysProcAttr)
	if err != nil {
		ready <- rankStart{err: err}
		return
	}
	err = cmd.Start()
	leave()
	if err != nil {
		ready <- rankStart{err: err}
		return
	}
	pid := cmd.Process.Pid
	st, err := readStat(pid) // not yet reaped, so /proc/<pid> exists
	ready <- rankStart{pid: pid, startTicks: st.StartTicks, err: err}
	werr := cmd.Wait()
	exits <- rankExit{local: local, code: exitCode(cmd.ProcessState, werr)}
}

// exitCode is a shell's $? for a reaped process: the exit status, or
// 128+signal for a signal death.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return codeLost
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func startFailCode(err error) int {
	if errors.Is(err, fs.ErrPermission) {
		return codeNotExecutable
	}
	return codeNotFound
}

// openOutput opens rank's stdout and stderr: the task's Stdout/Stderr
// files when set (the same *os.File for both when they are one path),
// opened as the job's user and never through a symbolic link, with what
// was opened recorded in the task directory (see output.go); else the
// rank files of the task directory, owned by the job's user when exec
// switches to it.
func (e *Executor) openOutput(t *task, rank int, cred *syscall.Credential) (stdout, stderr *os.File, err error) {
	l := t.launch
	var opened outputRecord
	open := func(path, ext, stream string) (*os.File, error) {
		if path != "" {
			// O_NONBLOCK keeps a FIFO without a reader from blocking the
			// agent; os/exec makes the descriptor blocking again (Fd).
			flags := os.O_WRONLY | os.O_CREATE | syscall.O_NOCTTY | syscall.O_NONBLOCK
			if l.Spec.Batch != nil && l.Spec.Batch.OpenMode == "append" {
				flags |= os.O_APPEND
			} else {
				flags |= os.O_TRUNC
			}
			f, o, err := openOutputFile(stream, path, flags, cred)
			opened.Files = append(opened.Files, o)
			return f, err
		}
		f, err := os.OpenFile(filepath.Join(t.dir, logFile(rank, ext)), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o640)
		if err != nil {
			return nil, err
		}
		if cred != nil {
			if err := f.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
				f.Close()
				return nil, err
			}
		}
		return f, nil
	}
	// record writes what was opened, also an open that failed (whose
	// error `shoal logs` then shows), before any rank can write.
	record := func() error {
		if len(opened.Files) == 0 {
			return nil
		}
		if err := writeJSON(t.dir, outputsFile, opened); err != nil {
			return fmt.Errorf("record output files: %w", err)
		}
		return nil
	}
	if stdout, err = open(l.Stdout, "out", "stdout"); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("open stdout: %w", err), record())
	}
	if l.Stderr != "" && l.Stderr == l.Stdout {
		stderr = stdout
	} else if stderr, err = open(l.Stderr, "err", "stderr"); err != nil {
		stdout.Close()
		return nil, nil, errors.Join(fmt.Errorf("open stderr: %w", err), record())
	}
	if err := record(); err != nil {
		stdout.Close()
		if stderr != stdout {
			stderr.Close()
		}
		return nil, nil, err
	}
	return stdout, stderr, nil
}

// writeScript writes a batch script to dir as an executable owned by the
// job's user and returns it open for reading.
func writeScript(dir, script string, cred *syscall.Credential) (*os.File, error) {
	path := filepath.Join(dir, scriptFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o700)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(script)
	if err == nil && cred != nil {
		err = f.Chown(int(cred.Uid), int(cred.Gid))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.Open(path)
}

// openAsUser opens path with flags as the job's user would: on a thread of
// its own that takes the user's ids before the open and dies after it, so
// a root agent neither creates, truncates nor reads a file the user could
// not. A file it creates belongs to the user. With cred nil it is
// os.OpenFile. (The runtime starts no thread from a locked one, so the
// ids never spread to another thread.)
func openAsUser(path string, flags int, cred *syscall.Credential) (*os.File, error) {
	if cred == nil {
		return os.OpenFile(path, flags, 0o644)
	}
	type result struct {
		f   *os.File
		err error
	}
	res := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, whose ids no longer are the agent's,
		// ends with this goroutine instead of running others.
		runtime.LockOSThread()
		// Raw system calls change the ids of this thread only (the
		// syscall package's wrappers change every thread's).
		groups := cred.Groups
		if len(groups) == 0 {
			groups = []uint32{cred.Gid}
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
			res <- result{err: fmt.Errorf("setgroups: %w", e)}
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(cred.Gid), uintptr(cred.Gid), uintptr(cred.Gid)); e != 0 {
			res <- result{err: fmt.Errorf("setresgid %d: %w", cred.Gid, e)}
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(cred.Uid), uintptr(cred.Uid), uintptr(cred.Uid)); e != 0 {
			res <- result{err: fmt.Errorf("setresuid %d: %w", cred.Uid, e)}
			return
		}
		f, err := os.OpenFile(path, flags, 0o644)
		res <- result{f, err}
	}()
	r := <-res
	return r.f, r.err
}

// identity is what the user database says about the job's user.
type identity struct {
	home   string
	groups []uint32 // supplementary groups; always includes the primary
}

// lookupUser reads uid's home and groups. A user missing from the local
// database still runs, with no HOME and only its primary group.
func lookupUser(uid, gid int) identity {
	id := identity{groups: []uint32{uint32(gid)}}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return id
	}
	id.home = u.HomeDir
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil && uint32(n) != uint32(gid) {
				id.groups = append(id.groups, uint32(n))
			}
		}
	}
	return id
}

// lookPath finds the program a rank runs the way its shell would: a name
// with a slash is taken as is (relative to the work dir), any other is
// searched in the rank's PATH. Relative PATH entries are skipped.
func lookPath(name, pathEnv, workDir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(workDir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("command %s: %w", name, err)
		}
		return p, nil
	}
	var firstErr error
	for dir := range strings.SplitSeq(pathEnv, ":") {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && errors.Is(err, fs.ErrPermission) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", fmt.Errorf("command %s: %w", name, firstErr)
	}
	return "", fmt.Errorf("command %s: not found in PATH %q: %w", name, pathEnv, fs.ErrNotExist)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return &fs.PathError{Op: "exec", Path: p, Err: fs.ErrPermission}
	}
	return nil
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// waitGroupsGone waits up to bound for every process group in pgids to
// have no live member and returns those that still have one.
func waitGroupsGone(pgids []int, bound time.Duration) []int {
	deadline := time.Now().Add(bound)
	for {
		var alive []int
		for _, pg := range pgids {
			if groupAlive(pg) {
				alive = append(alive, pg)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(killPoll)
	}
}
