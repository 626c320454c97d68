package stepd

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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/exec/pmi2"
	"github.com/shoal-sched/shoal/exec/pmix"
	"github.com/shoal-sched/shoal/exec/task"
)

// rankStart is what a rank goroutine reports once its process was forked.
type rankStart struct {
	pid        int
	startTicks uint64
	err        error
}

// run launches the task's ranks, supervises them to the end and records the exit.
// It sends the launch result on launched exactly once, before supervising.
func (s *supervisor) run(launched chan<- error) {
	log := s.log.With("job", s.key.Job, "incarnation", s.key.Incarnation)
	if s.key.Step != task.NoStep {
		log = log.With("step", s.key.Step)
	}
	exits := make(chan rankExit, s.plan.Ranks)

	var cg *taskCgroup
	var pgids []int
	var startCode int
	var startErr error
	if s.cfg.Cgroup != nil {
		// A task that cannot be confined does not run.
		if cg, startErr = s.setupCgroup(log); startErr != nil {
			startCode = task.CodeNotFound
		}
	}
	if startErr == nil {
		pgids, startCode, startErr = s.startRanks(log, cg, exits)
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
	s.mu.Lock()
	s.pgids = pgids // before the launch is reported, so a signal request reaches them
	pmixKill := s.pmixKill
	s.mu.Unlock()
	if pmixKill {
		_ = signalGroups(pgids, syscall.SIGKILL, false)
	}
	if startErr != nil {
		log.Error("start ranks", "err", startErr)
		launched <- fmt.Errorf("start job %s: %w: %w", s.key, errStartFailed, startErr)
	} else {
		log.Info("ranks started", "ranks", s.plan.Ranks, "pids", pgids)
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
		if sig == syscall.SIGKILL {
			// A runtime killed leaves its container running: the
			// runtime's delete kills it (a container that ended is
			// already gone, and says so).
			for _, id := range s.containers {
				if err := s.runtime.remove(id, s.cfg.TaskExec); err != nil {
					log.Debug("remove container", "id", id, "err", err)
				}
			}
		}
	}
	sup := supervision{
		ranks:     len(pgids),
		exits:     exits,
		stop:      s.stop,
		limit:     s.limit,
		timeLimit: s.plan.TimeLimit - time.Since(s.cfg.Start),
		grace:     s.cfg.KillWait,
		signal:    signal,
		onSignal: func(cause string, sig syscall.Signal) {
			log.Info("ending ranks", "cause", cause, "signal", sig.String())
		},
		fenceGrace: s.cfg.KillGrace,
	}
	if js, d, ok := earlySignalDelay(s.cfg.Launch, s.plan, s.cfg.Start, time.Now()); ok && startErr == nil {
		sup.early = d
		sup.earlySignal = func() {
			sig := syscall.Signal(js.Number)
			log.Info("signal before the time limit", "signal", sig.String(), "before", js.Before, "shell_only", js.BatchOnly)
			if err := signalGroups(pgids, sig, js.BatchOnly); err != nil {
				log.Warn("signal before the time limit", "err", err)
			}
		}
	}
	if s.plan.TimeLimit <= 0 {
		sup.timeLimit = 0
	} else if sup.timeLimit <= 0 {
		sup.timeLimit = time.Nanosecond
	}
	if startErr != nil {
		sup.initial = task.CauseStartFail
	}
	out := supervise(sup)
	if startErr != nil {
		out = outcome{code: startCode, cause: task.CauseStartFail}
	}

	// Every leader is reaped. Whatever they left behind in their groups
	// (background children) dies with them, as in a Slurm step, and the
	// supervisor waits for it: the GPUs are released only once nothing
	// runs.
	signal(syscall.SIGKILL)
	if alive := waitGroupsGone(pgids, task.GoneWait); len(alive) > 0 {
		log.Error("processes survived SIGKILL", "pids", alive)
	}
	if s.pty != nil {
		// The terminal's last output reaches srun before the exit is
		// recorded.
		s.pty.close()
	}
	if s.stdin != nil {
		s.stdin.close()
	}
	if s.pmix != nil {
		s.pmix.Close()
	}
	if s.pmi2 != nil {
		s.pmi2.Close()
	}
	close(stopSampling)
	<-sampled
	if cg != nil {
		// Everything in the task's cgroup, wherever it moved in the
		// process tree, dies before the exit is recorded.
		usage, oom := cg.end(log)
		out.usage = usage
		if oom && out.cause == task.CauseExit {
			// The kernel killed a process for the job's memory limit: the
			// job ran out of memory, whatever its leader's code (Slurm's
			// OUT_OF_MEMORY).
			out.cause = task.CauseOOM
			if out.code == 0 {
				out.code = 128 + int(syscall.SIGKILL)
			}
		}
	}
	s.finish(out)
}

// startRanks forks the ranks one by one. It returns the pids of those
// started (each leads its own process group), and on a failure the exit
// code a shell would give and the error; the ranks started so far then run
// until supervise stops them.
func (s *supervisor) startRanks(log *slog.Logger, cg *taskCgroup, exits chan<- rankExit) (pgids []int, code int, err error) {
	l, p := s.cfg.Launch, s.plan

	if p.WorkDir == "" {
		return nil, task.CodeNotFound, errors.New("work dir: empty")
	}
	if fi, err := os.Stat(p.WorkDir); err != nil {
		return nil, task.CodeNotFound, fmt.Errorf("work dir: %w", err)
	} else if !fi.IsDir() {
		return nil, task.CodeNotFound, fmt.Errorf("work dir %s: not a directory", p.WorkDir)
	}

	id := lookupUser(l.Spec.UID, l.Spec.GID)
	var cred *syscall.Credential
	if os.Geteuid() == 0 && l.Spec.UID != 0 {
		cred = &syscall.Credential{Uid: uint32(l.Spec.UID), Gid: uint32(l.Spec.GID), Groups: id.groups}
	}
	bundle := l.Container()
	var ctr *containerSetup // set at the first rank, once its output is open
	var script *os.File
	if p.Script {
		if script, err = writeScript(s.dir, l.Spec.Batch.Script, cred); err != nil {
			return nil, task.CodeNotFound, fmt.Errorf("batch script: %w", err)
		}
		defer script.Close()
	}

	if pmix.Wanted(l) {
		// srun --mpi=pmix: the ranks' PMIx server, up before the first
		// rank connects to it.
		if s.pmix, err = s.startPMIx(log); err != nil {
			s.tellRanks(l.Rank(0), cred, err)
			return nil, task.CodeNotFound, err
		}
	}
	if pmi2.Wanted(l) {
		// srun --mpi=pmi2: each rank's end of its PMI socket pair.
		if s.pmi2, err = s.startPMI2(log); err != nil {
			s.tellRanks(l.Rank(0), cred, err)
			return nil, task.CodeNotFound, err
		}
	}
	for local := range p.Ranks {
		rank := l.Rank(local)
		var env []string
		var path string
		var args []string
		var extra []*os.File
		switch {
		case p.Script:
			env = batchEnv(l, id.home)
			if envValue(env, GetUserEnvVar) == "1" {
				// sbatch --get-user-env: the user's login environment
				// under the submitted one; without it the script does
				// not start, as slurmd fails the launch.
				login, err := loginEnv(l.Spec.User)
				if err != nil {
					return pgids, task.CodeNotFound, err
				}
				env = underlay(login, env)
			}
			// The task directory is the agent's alone; a script that runs
			// as another user is executed through its open descriptor.
			path = script.Name()
			if cred != nil {
				path, extra = "/dev/fd/3", []*os.File{script}
			}
			args = append([]string{path}, p.Argv...)
		case bundle != "":
			// The container's runtime looks the program up in it.
			env = contractEnv(l, local, id.home)
			args = p.Argv
		default:
			env = contractEnv(l, local, id.home)
			if s.pmix != nil {
				env = underlay(env, s.pmix.Env(local))
			}
			if s.pmi2 != nil {
				// The rank's end of its socket pair is its PMI_FD, the
				// descriptor after those before it (3 is the first).
				env = underlay(env, s.pmi2.Env(local, 3+len(extra)))
				extra = append(extra, s.pmi2.File(local))
			}
			path, err = lookPath(p.Argv[0], envValue(env, "PATH"), p.WorkDir)
			if err != nil {
				return pgids, startFailCode(err), fmt.Errorf("rank %d: %w", rank, err)
			}
			args = p.Argv
		}
		var stdout, stderr *os.File
		if l.PtyRank(rank) {
			// srun --pty: the rank's terminal is its input and output.
			if s.pty, stdout, err = openPty(log, l.Spec.UID, l.Spec.GID); err != nil {
				return pgids, task.CodeNotFound, fmt.Errorf("rank %d: %w", rank, err)
			}
			s.pty.serve()
			stderr = stdout
		} else if stdout, stderr, err = s.openOutput(rank, cred); err != nil {
			return pgids, task.CodeNotFound, fmt.Errorf("rank %d: %w", rank, err)
		}
		if bundle != "" && ctr == nil {
			// A node that cannot run the container says why where the
			// task's errors go, as slurmstepd does.
			if ctr, err = prepareContainer(bundle, p.WorkDir, s.cfg.OCIRuntime, s.cfg.NodeName, cred); err != nil {
				fmt.Fprintf(stderr, "shoal stepd: error: %v\n", err)
				stdout.Close()
				if stderr != stdout {
					stderr.Close()
				}
				return pgids, task.CodeNotFound, err
			}
		}
		cmd := &osexec.Cmd{
			Path:       path,
			Args:       args,
			Env:        env,
			Dir:        p.WorkDir,
			Stdout:     stdout,
			Stderr:     stderr,
			ExtraFiles: extra,
			SysProcAttr: &syscall.SysProcAttr{
				Setpgid:    true,
				Pdeathsig:  syscall.SIGKILL,
				Credential: cred,
			},
		}
		var stdin *os.File
		if l.PtyRank(rank) {
			cmd.Stdin = stdout
			ptyAttr(cmd.SysProcAttr)
		} else if l.RelayRank(rank) {
			// srun's own stdin, relayed through the agent.
			if s.stdin == nil {
				s.stdin, err = openStdin(log)
			}
			if err == nil {
				stdin, err = s.stdin.pipe()
			}
			if err != nil {
				stdout.Close()
				if stderr != stdout {
					stderr.Close()
				}
				return pgids, task.CodeNotFound, fmt.Errorf("rank %d: %w", rank, err)
			}
			cmd.Stdin = stdin
		} else if in := l.StdinPath(rank, p.WorkDir); in != "" {
			// sbatch/srun --input: opened as the job's user, as slurmstepd
			// does; O_NONBLOCK keeps a FIFO without a writer from blocking
			// the supervisor (os/exec makes it blocking again).
			if stdin, err = task.OpenAsUser(in, os.O_RDONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, cred); err != nil {
				stdout.Close()
				if stderr != stdout {
					stderr.Close()
				}
				return pgids, task.CodeNotFound, fmt.Errorf("rank %d: could not open stdin file %s: %w", rank, in, err)
			}
			cmd.Stdin = stdin
		}
		closeStdin := func() {
			if stdin != nil {
				stdin.Close()
			}
		}
		release := func() {}
		if ctr != nil {
			// The runtime is the rank's leader, as root; the container
			// has namespaces of its own and runs as the job's user.
			var sc *os.File
			if p.Script {
				sc, args = script, append([]string{containerScript}, p.Argv...)
			}
			t := ociTask{Args: args, Env: env, Cwd: p.WorkDir, UID: l.Spec.UID, GID: l.Spec.GID, Groups: id.groups,
				Hostname: s.cfg.NodeName, Mounts: []ociMount{{Source: p.WorkDir, Destination: p.WorkDir}}}
			err = s.containerCommand(ctr, cmd, rank, t, sc, cred, stderr)
		} else {
			if len(s.cfg.TaskNamespace) == 0 { // the helper sets SLURM_TASK_PID itself
				viaTaskExec(cmd, s.cfg.TaskExec)
			}
			release, err = inTaskNamespace(cmd, s.cfg.TaskNamespace, s.cfg.NodeName, s.dir, l.Hosts, log)
		}
		if err != nil {
			stdout.Close()
			if stderr != stdout {
				stderr.Close()
			}
			closeStdin()
			return pgids, task.CodeNotFound, fmt.Errorf("rank %d: %w", rank, err)
		}
		ready := make(chan rankStart, 1)
		s.wg.Go(func() { runRank(cmd, cg, local, ready, exits) })
		r := <-ready // bounded: fork and exec
		if s.pmi2 != nil && bundle == "" && !p.Script {
			s.pmi2.Started(local)
		}
		release()
		closeStdin()
		stdout.Close()
		if stderr != stdout {
			stderr.Close()
		}
		if r.err != nil {
			return pgids, startFailCode(r.err), fmt.Errorf("rank %d: %w", rank, r.err)
		}
		pgids = append(pgids, r.pid)
		log.Debug("rank started", "rank", rank, "pid", r.pid)
		if err := task.WriteJSON(s.dir, task.ProcFile(rank), task.ProcRecord{Rank: rank, PID: r.pid, StartTicks: r.startTicks}); err != nil {
			// A rank the agent cannot find again after a crash must not run.
			return pgids, task.CodeNotFound, fmt.Errorf("rank %d: record pid %d: %w", rank, r.pid, err)
		}
	}
	if s.stdin != nil {
		s.stdin.serve()
	}
	return pgids, 0, nil
}

// runRank starts cmd and waits for it. The child's Pdeathsig (SIGKILL)
// fires when the OS thread that forked it exits, not the process: the
// goroutine keeps that thread locked until the child is reaped, so the
// signal fires only if the supervisor itself dies. The same locked thread
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
	st, err := task.ReadStat(pid) // not yet reaped, so /proc/<pid> exists
	ready <- rankStart{pid: pid, startTicks: st.StartTicks, err: err}
	werr := cmd.Wait()
	exits <- rankExit{local: local, code: exitCode(cmd.ProcessState, werr)}
}

// exitCode is a shell's $? for a reaped process: the exit status, or
// 128+signal for a signal death.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return task.CodeLost
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func startFailCode(err error) int {
	if errors.Is(err, fs.ErrPermission) {
		return task.CodeNotExecutable
	}
	return task.CodeNotFound
}

// openOutput opens rank's stdout and stderr: the task's Stdout/Stderr
// files when set (the same *os.File for both when they are one path),
// opened as the job's user and never through a symbolic link, with what
// was opened recorded in the task directory (see task.OpenOutput); else
// the rank files of the task directory, owned by the job's user when the
// ranks run as that user.
func (s *supervisor) openOutput(rank int, cred *syscall.Credential) (stdout, stderr *os.File, err error) {
	l := s.cfg.Launch
	outPath, errPath := l.Stdout, l.Stderr
	if l.Step != nil { // srun -o/-e
		outPath, errPath = l.StepOutputPaths(rank, s.plan.WorkDir)
	}
	opened := &s.outputs
	open := func(path, ext, stream string) (*os.File, error) {
		if path != "" {
			// O_NONBLOCK keeps a FIFO without a reader from blocking the
			// supervisor; os/exec makes the descriptor blocking again (Fd).
			flags := os.O_WRONLY | os.O_CREATE | syscall.O_NOCTTY | syscall.O_NONBLOCK
			switch {
			case l.Spec.Batch != nil && l.Spec.Batch.OpenMode == "append" && l.Step == nil:
				flags |= os.O_APPEND
			case l.Step != nil:
				// As slurmstepd: appending, truncated at the first open
				// (here: the first of this node's ranks naming it).
				flags |= os.O_APPEND
				if !s.truncated[path] && path != task.DevNull {
					flags |= os.O_TRUNC
				}
				if s.truncated == nil {
					s.truncated = map[string]bool{}
				}
				s.truncated[path] = true
			default:
				flags |= os.O_TRUNC
			}
			f, o, err := task.OpenOutput(stream, path, flags, cred)
			if !slices.ContainsFunc(opened.Files, func(x task.OpenedOutput) bool { return x.Stream == o.Stream && x.Path == o.Path }) {
				opened.Files = append(opened.Files, o)
			}
			return f, err
		}
		f, err := os.OpenFile(filepath.Join(s.dir, task.RankFile(rank, ext)), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o640)
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
		if err := task.WriteJSON(s.dir, task.OutputsFile, opened); err != nil {
			return fmt.Errorf("record output files: %w", err)
		}
		return nil
	}
	if stdout, err = open(outPath, "out", "stdout"); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("open stdout: %w", err), record())
	}
	if errPath != "" && errPath == outPath {
		stderr = stdout
	} else if stderr, err = open(errPath, "err", "stderr"); err != nil {
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
	path := filepath.Join(dir, task.ScriptFile)
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
			if task.GroupAlive(pg) {
				alive = append(alive, pg)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(task.GonePoll)
	}
}

// finish records the task's exit durably and ends the wait for it. A
// failed write is logged: the agent, finding no exit record once the
// supervisor is gone, then records the task as lost.
func (s *supervisor) finish(out outcome) {
	k := s.key
	rec := task.ExitRecord{
		Usage:       out.usage,
		Job:         k.Job,
		Incarnation: k.Incarnation,
		Step:        task.StepField(k.Step),
		Node:        s.cfg.NodeName,
		ExitCode:    out.code,
		Cause:       out.cause,
		Start:       s.cfg.Start,
		End:         time.Now(),
	}
	if err := task.WriteJSON(s.dir, task.ExitFile, rec); err != nil {
		s.log.Error("record exit", "task", k, "err", err)
	}
	s.log.Info("task exited", "task", k, "exit_code", out.code, "cause", out.cause)
	close(s.done)
}
