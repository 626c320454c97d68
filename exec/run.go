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
	l := t.launch
	tpn := l.Spec.Request.WithDefaults().TasksPerNode
	exits := make(chan rankExit, tpn)

	pgids, startCode, startErr := e.startRanks(t, log, exits)
	if startErr != nil {
		log.Error("start ranks", "err", startErr)
		launched <- fmt.Errorf("start job %s incarnation %d: %w: %w", t.key.Job, t.key.Incarnation, ErrStartFailed, startErr)
	} else {
		log.Info("ranks started", "ranks", tpn, "pids", pgids)
		launched <- nil
	}

	signal := func(sig syscall.Signal) {
		for _, pg := range pgids {
			if err := syscall.Kill(-pg, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				log.Warn("signal ranks", "pid", pg, "signal", sig.String(), "err", err)
			}
		}
	}
	s := supervision{
		ranks:     len(pgids),
		exits:     exits,
		stop:      t.stop,
		timeLimit: l.Spec.Request.TimeLimit - time.Since(t.start),
		grace:     e.cfg.KillGrace,
		signal:    signal,
		onSignal: func(cause string, sig syscall.Signal) {
			log.Info("ending ranks", "cause", cause, "signal", sig.String())
		},
	}
	if l.Spec.Request.TimeLimit <= 0 {
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
	e.finish(t, out)
}

// startRanks forks the ranks one by one. It returns the pids of those
// started (each leads its own process group), and on a failure the exit
// code a shell would give and the error; the ranks started so far then run
// until supervise stops them.
func (e *Executor) startRanks(t *task, log *slog.Logger, exits chan<- rankExit) (pgids []int, code int, err error) {
	l := t.launch
	tpn := l.Spec.Request.WithDefaults().TasksPerNode
	first := l.NodeIndex * tpn

	if l.Spec.WorkDir == "" {
		return nil, codeNotFound, errors.New("work dir: empty")
	}
	if fi, err := os.Stat(l.Spec.WorkDir); err != nil {
		return nil, codeNotFound, fmt.Errorf("work dir: %w", err)
	} else if !fi.IsDir() {
		return nil, codeNotFound, fmt.Errorf("work dir %s: not a directory", l.Spec.WorkDir)
	}

	id := lookupUser(l.Spec.UID, l.Spec.GID)
	var cred *syscall.Credential
	if os.Geteuid() == 0 && l.Spec.UID != 0 {
		cred = &syscall.Credential{Uid: uint32(l.Spec.UID), Gid: uint32(l.Spec.GID), Groups: id.groups}
	}

	for local := range tpn {
		rank := first + local
		env := contractEnv(l, local, id.home)
		path, err := lookPath(l.Spec.Command[0], envValue(env, "PATH"), l.Spec.WorkDir)
		if err != nil {
			return pgids, startFailCode(err), fmt.Errorf("rank %d: %w", rank, err)
		}
		stdout, stderr, err := e.openLogs(t.dir, rank, cred)
		if err != nil {
			return pgids, codeNotFound, fmt.Errorf("rank %d: %w", rank, err)
		}
		cmd := &osexec.Cmd{
			Path:   path,
			Args:   l.Spec.Command,
			Env:    env,
			Dir:    l.Spec.WorkDir,
			Stdout: stdout,
			Stderr: stderr,
			SysProcAttr: &syscall.SysProcAttr{
				Setpgid:    true,
				Pdeathsig:  syscall.SIGKILL,
				Credential: cred,
			},
		}
		ready := make(chan rankStart, 1)
		e.wg.Go(func() { runRank(cmd, local, ready, exits) })
		r := <-ready // bounded: fork and exec
		stdout.Close()
		stderr.Close()
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
// signal fires only if the agent itself dies.
func runRank(cmd *osexec.Cmd, local int, ready chan<- rankStart, exits chan<- rankExit) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
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

// openLogs opens rank's output files, owned by the job's user when exec
// switches to it.
func (e *Executor) openLogs(dir string, rank int, cred *syscall.Credential) (stdout, stderr *os.File, err error) {
	open := func(ext string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(dir, logFile(rank, ext)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
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
	if stdout, err = open("out"); err != nil {
		return nil, nil, fmt.Errorf("open stdout: %w", err)
	}
	if stderr, err = open("err"); err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("open stderr: %w", err)
	}
	return stdout, stderr, nil
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
