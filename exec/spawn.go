package exec

import (
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/shoal-sched/shoal/exec/task"
)

// stepdEnv is a supervisor's environment: PATH, and the markers of its
// task, which recovery finds it by should it be left without an exit
// record (see killOrphans).
func stepdEnv(k TaskKey, node string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), task.LaunchEnv + "=3",
		"SHOAL_JOB_ID=" + k.Job.String(),
		"SHOAL_INCARNATION=" + strconv.FormatUint(k.Incarnation, 10),
		"SHOAL_NODE_NAME=" + node}
	if k.Step != NoStep {
		env = append(env, "SHOAL_STEP_ID="+strconv.Itoa(k.Step))
	}
	return env
}

// spawnStepd starts t's supervisor and waits for its launch result.
//
// The supervisor is started directly, in a session of its own, and is the
// agent's child until the agent ends: a goroutine reaps it when it exits,
// and after an agent's restart it is init's (or a subreaper's) to reap.
// One exec of the binary instead of the two of `stepd --detach` (a
// detaching parent that exits at once), which cost a whole process start
// per task (BENCHMARKS.md, task supervisors).
func (e *Executor) spawnStepd(t *tracked) (task.LaunchResult, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return task.LaunchResult{}, err
	}
	defer r.Close()
	logf, err := os.OpenFile(filepath.Join(t.dir, task.StepdLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		w.Close()
		return task.LaunchResult{}, err
	}
	argv := append(slices.Clone(e.stepdCommand(t)), t.dir)
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Env = stepdEnv(t.key, e.cfg.NodeName)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	// Its own session: signals to the agent's process group or terminal
	// never reach it, and it keeps running when the agent goes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	logf.Close()
	if err != nil {
		return task.LaunchResult{}, fmt.Errorf("start %v: %w", argv, err)
	}
	// The reaper ends when the supervisor does; its exit status means
	// nothing here (the exit record is what counts), and an agent that
	// ends first leaves the supervisor to init.
	go func() { _ = cmd.Wait() }()
	var res task.LaunchResult
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return task.LaunchResult{}, fmt.Errorf("supervisor of %s ended without a launch result (see %s): %w",
			t.key, filepath.Join(t.dir, task.StepdLog), err)
	}
	return res, nil
}

// stepdCommand is the argv prefix that runs t's supervisor: the light
// one, when configured, unless t serves PMIx (which only the agent's
// binary, linked with libpmix, can).
func (e *Executor) stepdCommand(t *tracked) []string {
	if len(e.cfg.StepdLightCommand) > 0 && !t.pmix {
		return e.cfg.StepdLightCommand
	}
	return e.cfg.StepdCommand
}

// ctl sends a request to t's supervisor on a connection of its own.
func (e *Executor) ctl(t *tracked, req task.Request) (task.Reply, error) {
	c, err := task.Dial(t.dir)
	if err != nil {
		return task.Reply{}, fmt.Errorf("supervisor of %s: %w", t.key, err)
	}
	defer c.Close()
	reply, err := task.Send(c, req)
	if err != nil {
		return reply, fmt.Errorf("supervisor of %s: %s: %w", t.key, req.Op, err)
	}
	return reply, nil
}
