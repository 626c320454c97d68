//lint:file-ignore ST1005 srun's messages are Slurm's words, capitalised as srun prints them

package slurmcli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/slurm"
)

// Bounds of srun's wait.
const (
	srunPoll = 200 * time.Millisecond
	// srunCancelWait is how long srun waits for a step it cancelled
	// (Ctrl-C) to end before it gives up on it.
	srunCancelWait = 30 * time.Second
	// jobReadTimeout bounds one read of the job srun runs in.
	jobReadTimeout = 10 * time.Second
)

// Srun is srun: inside an allocation (SHOAL_JOB_ID or SLURM_JOB_ID set)
// it runs a step on the allocation, streams the tasks' output and returns
// the worst task exit code; outside one it runs the command as a job of
// its own and waits for it.
func Srun(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) (int, error) {
	opts, rest, err := slurm.ParseArgs(slurm.Srun, args)
	if err != nil {
		return 1, err
	}
	if len(rest) == 0 {
		return 1, errors.New("command: none given, want `srun [options] COMMAND [ARGS...]`")
	}
	request.PrintWarnings("srun", opts.Warnings)
	// --uid/--gid: the job, or the step, is that user's and runs as them.
	if connect, err = AsCaller(connect, opts); err != nil {
		return 1, err
	}
	preserveEnv(&opts, os.Getenv)
	if err := mpiFromEnv(&opts, os.Getenv); err != nil {
		return 1, err
	}
	if opts.MultiProg {
		if rest, err = multiProgCommand(rest[0]); err != nil {
			return 1, err
		}
	}
	if opts.Pty && (opts.Set["input"] || opts.Set["output"] || opts.Set["error"]) {
		// Slurm's srun refuses the same (src/srun/libsrun/opt.c).
		return 1, errors.New("--error/--input/--output are incompatible with --pty")
	}
	if opts.Pty && (hookPath(opts.TaskProlog) != "" || hookPath(opts.TaskEpilog) != "") {
		return 1, errors.New("--task-prolog/--task-epilog: not supported by Shoal with --pty")
	}
	if err := runSrunHook(ctx, "prolog", opts.Prolog, rest, stderr); err != nil {
		return 1, err
	}
	if hookPath(opts.Epilog) != "" {
		defer func() {
			if err := runSrunHook(context.WithoutCancel(ctx), "epilog", opts.Epilog, rest, stderr); err != nil {
				fmt.Fprintf(stderr, "srun: error: %v\n", err)
			}
		}()
	}
	if opts.Set["jobid"] {
		return srunInJob(ctx, connect, opts, rest, stdout, stderr)
	}
	jobEnv := jobIDEnv()
	if jobEnv == "" {
		return RunOwnJob(ctx, connect, opts, rest, stdout, stderr)
	}
	job, err := slurm.ParseJobID(jobEnv)
	if err != nil {
		return 1, fmt.Errorf("SLURM_JOB_ID: %w", err)
	}
	inc, _ := strconv.ParseUint(os.Getenv("SHOAL_INCARNATION"), 10, 64)
	if opts.Pty {
		return srunPty(ctx, connect, opts, rest, job, inc, stdout, stderr)
	}
	request.PrintWarnings("srun", stepHints(opts))
	spec, err := stepSpec(opts, rest)
	if err != nil {
		return 1, err
	}
	spec.Stdin = relayedStdin(opts, spec.Stdin)
	c, err := connect()
	if err != nil {
		return 1, err
	}
	if spec, err = stepExclude(ctx, c, job, opts, spec); err != nil {
		return 1, err
	}
	if spec.NoKill, err = stepNoKill(ctx, c, job, opts); err != nil {
		return 1, err
	}
	if spec.Command, err = bcastCommand(ctx, c, job, opts, spec.Command, spec.WorkDir); err != nil {
		return 1, err
	}
	spec.Command = withTaskHooks(opts, spec.Command)
	return runStep(ctx, c, job, api.StepRequest{Incarnation: inc, Spec: spec, RequestID: request.NewID()}, opts, stdout, stderr, func(err error) (int, error) {
		return 1, fmt.Errorf("start step in job %d: %w", job, err)
	})
}

// runStep is srun's step in job's allocation: it starts req (waiting for
// the step's resources as startStepWaiting does, relaying srun's stdin as
// opts ask) and follows the step to its end. failed words a start that
// failed other than by a refusal already printed.
func runStep(ctx context.Context, c *api.Client, job uint64, req api.StepRequest, opts slurm.Options, stdout, stderr io.Writer, failed func(error) (int, error)) (int, error) {
	var sent api.StepRequest
	step, err := startStepWaiting(ctx, c, job, opts.Immediate, stderr, func() (step api.StepResponse, err error) {
		step, sent, err = startStep(ctx, c, job, req, localInput(opts), stderr)
		return step, err
	})
	if errors.Is(err, exitcode.Code(1)) {
		return 1, err
	}
	if err != nil {
		return failed(err)
	}
	return followStepInput(ctx, c, job, step, stepStdinOf(opts, sent), followOptsOf(opts), stdout, stderr)
}

// readJob reads job, bounding the read by jobReadTimeout.
func readJob(ctx context.Context, c *api.Client, job uint64) (api.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, jobReadTimeout)
	defer cancel()
	return c.Job(ctx, job)
}

// ParseSrunOutside parses srun's options for a job of its own (shoal run).
func ParseSrunOutside(args []string) (slurm.Options, []string, error) {
	opts, rest, err := slurm.ParseArgs(slurm.Srun, args)
	if err != nil {
		return opts, nil, err
	}
	if len(rest) == 0 {
		return opts, nil, errors.New("command: none given, want `shoal run [options] COMMAND [ARGS...]`")
	}
	if opts.Set["jobid"] {
		return opts, nil, errors.New("--jobid: a step in a running job is srun's (`shoal slurm srun --jobid N ...`); shoal run starts a job of its own")
	}
	if hookPath(opts.Prolog) != "" || hookPath(opts.Epilog) != "" {
		return opts, nil, errors.New("--prolog/--epilog: srun's own hooks are srun's (`shoal slurm srun ...`), not shoal run's")
	}
	request.PrintWarnings("srun", opts.Warnings)
	if err := mpiFromEnv(&opts, os.Getenv); err != nil {
		return opts, nil, err
	}
	return opts, rest, nil
}

// mpiFromEnv takes srun's MPI type from SLURM_MPI_TYPE when --mpi was not
// given, as Slurm's srun does (a batch script may export it once for all
// its sruns).
func mpiFromEnv(opts *slurm.Options, getenv func(string) string) error {
	if opts.Set["mpi"] {
		return nil
	}
	v := getenv("SLURM_MPI_TYPE")
	if v == "" {
		return nil
	}
	t, err := slurm.ParseMPI(v)
	if err != nil {
		return fmt.Errorf("SLURM_MPI_TYPE: %w", err)
	}
	opts.MPI = t
	return nil
}

// stepSpec is the step srun's options ask for.
func stepSpec(opts slurm.Options, command []string) (spec cluster.StepSpec, err error) {
	for _, name := range []string{"constraint", "array"} {
		if opts.Set[name] {
			return cluster.StepSpec{}, fmt.Errorf("--%s: not supported for steps by Shoal yet", name)
		}
	}
	// -w: the step runs on these nodes of the allocation (how mpirun
	// starts its daemons); -N, when given too, must count them. -x
	// (stepExclude) needs the job's nodes.
	nodeList, _, err := request.HostLists(opts)
	if err != nil {
		return cluster.StepSpec{}, err
	}
	spec = cluster.StepSpec{Name: opts.Name, Command: command, GPUsPerTask: opts.GPUsPerTask, NodeList: nodeList}
	// --signal: the step's own warning before the job's time limit (srun
	// takes no "B:", which is sbatch's).
	spec.Signal = request.JobSignal(opts.Signal)
	if spec.Name == "" {
		spec.Name = filepath.Base(command[0])
	}
	if opts.Set["nodes"] {
		spec.Nodes = opts.Nodes.Min
	}
	switch {
	case opts.NTasksPerNode > 0:
		spec.TasksPerNode = opts.NTasksPerNode
	case opts.NTasks > 0:
		// Laid out over the step's nodes by the FSM, in blocks by
		// default as Slurm's: -n 5 on 2 nodes runs 3 and 2.
		spec.NTasks = opts.NTasks
	}
	if opts.NTasksPerGPU > 0 {
		if opts.NTasksPerNode > 0 {
			return spec, errors.New("--ntasks-per-gpu and --ntasks-per-node are mutually exclusive")
		}
		// With -n, binding only; without, the task count too (the FSM's).
		spec.NTasksPerGPU = opts.NTasksPerGPU
	}
	if !opts.Overlap {
		// Slurm 20.11+'s step: it holds its GPUs (--gpus-per-task's,
		// --gpus, --gpus-per-node or --gres=gpu:N, else all the job's) and CPUs (with --exact,
		// -c or a step's --exclusive, which imply it, its tasks'; else
		// all the job's) on its nodes, and waits for them.
		spec.Exclusive = true
		switch {
		case opts.GPUsPerTask > 0:
		case opts.Set["gpus"]:
			spec.GPUs = opts.GPUs
		case opts.GPUsPerNode > 0: // --gpus-per-node, --gres=gpu:N
			spec.GPUsPerNode = opts.GPUsPerNode
		}
		spec.Exact = opts.Exact || opts.Set["cpus-per-task"] || opts.Set["exclusive"]
		if opts.Set["cpus-per-task"] {
			spec.CPUsPerTask = opts.CPUsPerTask
		}
	}
	spec.Distribution = opts.Distribution.String()
	spec.Input = stepInput(opts)
	spec.Stdin = stdinRelay(opts)
	// -o/-e: each task writes to the file its pattern names on its node
	// (slurmstepd's job), so srun shows nothing of it.
	spec.Output, spec.Error = opts.Output, opts.Error
	if spec.Env, err = request.ExportEnv(opts.Export); err != nil {
		return spec, err
	}
	if opts.MPI != "" {
		// The step's supervisors serve PMIx (exec/pmix) or PMI-2
		// (exec/pmi2) to its tasks when this names it; the tasks see
		// it, as under Slurm.
		spec.Env = append(slices.DeleteFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, "SLURM_MPI_TYPE=") }),
			"SLURM_MPI_TYPE="+opts.MPI)
	}
	spec.WorkDir = opts.ChDir
	if spec.WorkDir == "" {
		spec.WorkDir, _ = os.Getwd()
	}
	spec.Container = request.ContainerPath(opts.Container, spec.WorkDir)
	if err := checkInputFile(cmp.Or(spec.Input, localInput(opts)), spec.WorkDir); err != nil {
		return spec, err
	}
	return spec, nil
}

// stepHints are the warnings of options a step takes as hints, as
// Slurm's srun inside an allocation runs them: --dependency (a job's;
// Slurm's srun ignores it for a step). A step's --exclusive (the
// pre-20.11 way of running steps side by side) is --exact, as in Slurm
// 20.11+.
func stepHints(opts slurm.Options) []string {
	var w []string
	if opts.Set["dependency"] {
		w = append(w, "--dependency for a step: ignored, as Slurm's srun ignores it inside an allocation")
	}
	return w
}

// checkInputFile opens srun's --input file, when its name is a plain one
// (no %-sequence, which only the step's node can expand), as Slurm's srun
// opens such a file itself before it starts the step: one srun cannot
// read is refused with Slurm's words, not left to fail every task.
func checkInputFile(input, workDir string) error {
	if input == "" || input == "none" || strings.ContainsAny(input, `%\`) {
		return nil
	}
	if !filepath.IsAbs(input) {
		input = filepath.Join(workDir, input)
	}
	f, err := os.Open(input)
	if err != nil {
		return stdinFileError(err)
	}
	return f.Close()
}

// stdinFileError is Slurm's srun's refusal of an --input file it cannot
// open.
func stdinFileError(err error) error {
	msg := err.Error()
	if errno := syscall.Errno(0); errors.As(err, &errno) {
		msg = errno.Error()
		msg = strings.ToUpper(msg[:1]) + msg[1:] // strerror's "No such file or directory"
	}
	return fmt.Errorf("Could not open stdin file: %s", msg)
}

// stepInput is StepSpec.Input for srun's -i/--input: "none", or a
// filename pattern of a task's own (%t, %n, %N) each task opens on its
// node; "" (no file) when not given, "all", a task's number, or a file
// srun reads itself (localInput), which srun relays instead
// (stdinRelay).
func stepInput(opts slurm.Options) string {
	if !opts.Set["input"] {
		return ""
	}
	switch in := parseInput(opts); in.Kind {
	case slurm.InputNone:
		return "none"
	case slurm.InputFile:
		if localInput(opts) == "" {
			return in.Pattern
		}
	}
	return ""
}

// followStep streams a step's output until it ends, and returns its exit
// code. Ctrl-C (ctx ending) cancels the step and waits for it to stop.
// Step ids start again at 0 when a job is requeued, so it reads only the
// output and state of started's incarnation, and a step whose run was
// requeued under it ended with that run.
func followStep(ctx context.Context, c *api.Client, job uint64, started api.StepResponse, fo followOpts, stdout, stderr io.Writer) (int, error) {
	step := started.Step
	out := newStreamer(fo.Label, stdout, stderr)
	var firstEnd time.Time    // srun -W: when a node's tasks were first seen ended
	waited := false           // -W ended the step
	told := map[string]bool{} // lost nodes srun has told of
	out.only(started.Incarnation)
	bg := context.Background()
	cancelled := false
	var deadline time.Time
	for {
		if ctx.Err() != nil && !cancelled {
			cancelled = true
			deadline = time.Now().Add(srunCancelWait)
			fmt.Fprintf(stderr, "srun: interrupted: cancelling step %d.%d\n", job, step)
			cctx, cancel := context.WithTimeout(bg, 5*time.Second)
			if err := c.CancelStep(cctx, job, step); err != nil {
				fmt.Fprintf(stderr, "srun: cancel step %d.%d: %v\n", job, step, err)
			}
			cancel()
		}
		rctx, cancel := context.WithTimeout(bg, 10*time.Second)
		chunks, err := c.StepLogs(rctx, job, step, out.offsets)
		if err == nil {
			out.write(chunks)
		}
		j, jerr := c.Job(rctx, job)
		cancel()
		if jerr == nil && j.Incarnation != started.Incarnation {
			out.flush()
			return 1, fmt.Errorf("job %d was requeued: step %d ended with its run", job, step)
		}
		if jerr == nil {
			if st, ok := findStep(j, step); ok && st.State != string(cluster.StepRunning) {
				// One last read: output written just before the end.
				rctx, cancel := context.WithTimeout(bg, 10*time.Second)
				if chunks, err := c.StepLogs(rctx, job, step, out.offsets); err == nil {
					out.write(chunks)
				}
				cancel()
				out.flush()
				if waited {
					// The worst code: the tasks -W ended got SIGTERM (143),
					// as scancel's; Slurm's srun SIGKILLs them (137).
					return st.ExitCode, nil
				}
				if st.State == string(cluster.StepCancelled) && st.ExitCode == 0 {
					return 130, nil
				}
				if st.State == string(cluster.StepFailed) && st.ExitCode == 0 {
					// Tasks died with a lost node (a --no-kill step's):
					// they have no code, and the step did not succeed.
					return 1, nil
				}
				return st.ExitCode, nil
			}
			if st, ok := findStep(j, step); ok && fo.Wait > 0 && !cancelled {
				p := planWait(fo.Wait, firstEnd, job, step, st.NodeTasks, time.Now())
				firstEnd = p.FirstEnd
				if p.Terminate {
					out.flush()
					for _, l := range p.Lines {
						fmt.Fprintln(stderr, "srun: "+l)
					}
					cancelled, waited = true, true
					deadline = time.Now().Add(srunCancelWait)
					cctx, cancel := context.WithTimeout(bg, 5*time.Second)
					if err := c.CancelStep(cctx, job, step); err != nil {
						fmt.Fprintf(stderr, "srun: cancel step %d.%d: %v\n", job, step, err)
					}
					cancel()
				}
			}
			if st, ok := findStep(j, step); ok && !cancelled {
				p := planNodeFail(fo.NoKill, job, step, st.NodeTasks, told)
				for _, n := range p.Told {
					told[n] = true
				}
				for _, l := range p.Lines {
					fmt.Fprintln(stderr, "srun: "+l)
				}
				if p.Terminate {
					cancelled = true
					deadline = time.Now().Add(srunCancelWait)
					cctx, cancel := context.WithTimeout(bg, 5*time.Second)
					if err := c.CancelStep(cctx, job, step); err != nil {
						fmt.Fprintf(stderr, "srun: cancel step %d.%d: %v\n", job, step, err)
					}
					cancel()
				}
			}
			if _, ok := findStep(j, step); !ok && j.State != "RUNNING" {
				out.flush()
				return 1, fmt.Errorf("job %d is %s: step %d ended with it", job, j.State, step)
			}
		}
		if cancelled && time.Now().After(deadline) {
			out.flush()
			return 1, fmt.Errorf("step %d.%d still running %s after it was cancelled", job, step, srunCancelWait)
		}
		time.Sleep(srunPoll)
	}
}

// followOpts are what srun's options ask of followStep: -l labels each
// line with its task; -W ends the other tasks that long after the first
// ended (0: never); -k keeps them running when a node of the step fails
// (planNodeFail).
type followOpts struct {
	Label  bool
	Wait   time.Duration
	NoKill bool
}

func followOptsOf(opts slurm.Options) followOpts {
	return followOpts{Label: opts.Label, Wait: opts.WaitTime, NoKill: opts.NoKill}
}

func findStep(j api.Job, id int) (api.Step, bool) {
	for _, s := range j.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return api.Step{}, false
}

// streamer writes rank output as it arrives, keeping each stream's offset,
// a rank's lines whole (see wholeLines) and, with label, prefixing each
// line with the rank ("0: ...").
type streamer struct {
	label bool
	// incarnation, when one is set, is the only run whose output is
	// written.
	incarnation    uint64
	oneIncarnation bool
	stdout         io.Writer
	stderr         io.Writer
	offsets        map[string]int64
	partial        map[string][]byte // what is held of each stream's last line
	rank           map[string]int
	isErr          map[string]bool
}

func newStreamer(label bool, stdout, stderr io.Writer) *streamer {
	return &streamer{label: label, stdout: stdout, stderr: stderr,
		offsets: map[string]int64{}, partial: map[string][]byte{}, rank: map[string]int{}, isErr: map[string]bool{}}
}

// only makes s write the output of the job's run inc alone.
func (s *streamer) only(inc uint64) { s.incarnation, s.oneIncarnation = inc, true }

func (s *streamer) write(chunks []api.LogChunk) {
	for _, ch := range chunks {
		if s.oneIncarnation && ch.Incarnation != s.incarnation {
			continue // an earlier run's step of the same id
		}
		if ch.Error != "" {
			continue // that node did not answer this time; its output comes on a later read
		}
		key := api.LogKey(ch)
		if ch.Offset > s.offsets[key] {
			// The node could not serve what we asked for (a file cut to
			// its tail): say so rather than splice silently.
			fmt.Fprintf(s.stderr, "srun: %d bytes of rank %d's %s skipped\n", ch.Offset-s.offsets[key], ch.Rank, ch.Stream)
		}
		s.offsets[key] = ch.Size
		s.rank[key] = ch.Rank
		s.isErr[key] = ch.Stream == "stderr"
		w := s.writer(key)
		buf := append(s.partial[key], ch.Data...)
		if !s.label {
			send, hold := wholeLines(buf)
			w.Write(send)
			s.partial[key] = bytes.Clone(hold)
			continue
		}
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			fmt.Fprintf(w, "%d: %s\n", ch.Rank, buf[:i])
			buf = buf[i+1:]
		}
		s.partial[key] = buf
	}
}

func (s *streamer) writer(key string) io.Writer {
	if s.isErr[key] {
		return s.stderr
	}
	return s.stdout
}

// flush writes what is held of unterminated lines, once the step has
// ended (a labelled one gets its newline), each to its own stream.
func (s *streamer) flush() {
	for _, key := range slices.Sorted(maps.Keys(s.partial)) {
		rest := s.partial[key]
		switch {
		case len(rest) == 0:
		case s.label:
			fmt.Fprintf(s.writer(key), "%d: %s\n", s.rank[key], rest)
		default:
			s.writer(key).Write(rest)
		}
		delete(s.partial, key)
	}
}

// maxHeldLine is how much of a line still without its newline srun holds
// before it writes it anyway: slurmstepd's MAX_MSG_LEN.
const maxHeldLine = 1024

// wholeLines splits buf, what a rank's stream has that srun has not
// written, into what srun writes now and what it holds back: every whole
// line, and of an unfinished last line only whole maxHeldLine pieces. So
// ranks' lines never mix, even from a program that writes a line in
// several writes (Python's print, unbuffered, writes the text then the
// newline): slurmstepd, too, sends a task's output line by line unless
// srun -u, and a line longer than MAX_MSG_LEN in pieces. A rank's held
// rest is written when the step ends (slurmstepd writes it when that
// task's stream ends).
func wholeLines(buf []byte) (send, hold []byte) {
	i := bytes.LastIndexByte(buf, '\n') + 1
	i += (len(buf) - i) / maxHeldLine * maxHeldLine
	return buf[:i], buf[i:]
}

// RunOwnJob is srun outside an allocation: it allocates, runs the command
// on every node of a job of its own, streams the output and returns the
// job's exit code.
func RunOwnJob(ctx context.Context, connect Connect, opts slurm.Options, command []string, stdout, stderr io.Writer) (int, error) {
	opts, line, err := request.LimitNodeList(slurm.Srun, opts)
	if err != nil {
		return 1, err
	}
	if line != "" {
		fmt.Fprintln(stderr, "srun: error: "+line) // Slurm's words: it runs on
	}
	if opts.Pty && !opts.TestOnly {
		return srunPty(ctx, connect, opts, command, 0, 0, stdout, stderr)
	}
	if needsOwnStep(opts) && !opts.TestOnly {
		return runOwnJobAsStep(ctx, connect, opts, command, stdout, stderr)
	}
	req, warnings, err := request.FromOptions(opts)
	if err != nil {
		return 1, err
	}
	request.PrintWarnings("srun", warnings)
	req.Command = withTaskHooks(opts, command)
	req.Stdin = withoutNullStdin(stdinRelay(opts))
	if req.Name == "" {
		req.Name = filepath.Base(command[0])
	}
	c, err := connect()
	if err != nil {
		return 1, err
	}
	if opts.TestOnly {
		if err := testOnly(ctx, c, "srun", req, stderr); err != nil {
			return 1, err
		}
		return 0, nil
	}
	res, err := c.Submit(ctx, req, request.SubmitRetry)
	if err != nil && req.Stdin != "" && olderCluster(err) {
		fmt.Fprintln(stderr, "srun: warning: the cluster's older agents cannot relay srun's stdin: the tasks read /dev/null")
		req.Stdin = ""
		res, err = c.Submit(ctx, req, request.SubmitRetry)
	}
	if err != nil {
		return 1, err
	}
	request.PrintWarnings("srun", res.Warnings)
	if req.Stdin != "" {
		stop := startStdinRelay(ctx, c, res.ID, task.NoStep, stderr)
		defer stop()
	}
	submitted := time.Now()
	out := newStreamer(opts.Label, stdout, stderr)
	bg := context.Background()
	pending := newPendingLine(stderr, res.ID)
	var firstEnd time.Time // -W: when a node's tasks were first seen ended
	waited := false        // -W ended the job
	for {
		if ctx.Err() != nil {
			cctx, cancel := context.WithTimeout(bg, 5*time.Second)
			_ = c.Cancel(cctx, res.ID)
			cancel()
			fmt.Fprintf(stderr, "srun: interrupted: job %d cancelled\n", res.ID)
			return 130, nil
		}
		rctx, cancel := context.WithTimeout(bg, 10*time.Second)
		if chunks, err := c.StepLogs(rctx, res.ID, -1, out.offsets); err == nil {
			out.write(chunks)
		}
		j, jerr := c.Job(rctx, res.ID)
		cancel()
		if jerr == nil {
			pending.show(j)
			if immediateExpired(opts.Immediate, submitted, time.Now(), j.State) {
				pending.done()
				return giveUpImmediate(c, "srun", res.ID, stderr), nil
			}
			if opts.WaitTime > 0 && !waited && j.State == "RUNNING" {
				p := planWait(opts.WaitTime, firstEnd, res.ID, 0, jobNodeTasks(j), time.Now())
				firstEnd = p.FirstEnd
				if p.Terminate {
					waited = true
					out.flush()
					for _, l := range p.Lines {
						fmt.Fprintln(stderr, "srun: "+l)
					}
					cctx, cancel := context.WithTimeout(bg, 5*time.Second)
					if err := c.Cancel(cctx, res.ID); err != nil {
						fmt.Fprintf(stderr, "srun: cancel job %d: %v\n", res.ID, err)
					}
					cancel()
				}
			}
		}
		if jerr == nil && cluster.JobState(j.State).Terminal() {
			rctx, cancel := context.WithTimeout(bg, 10*time.Second)
			if chunks, err := c.StepLogs(rctx, res.ID, -1, out.offsets); err == nil {
				out.write(chunks)
			}
			cancel()
			out.flush()
			if waited {
				// The worst task's code, as a step's above (a cancelled
				// job's own is 0).
				code := j.ExitCode
				for _, t := range j.Tasks {
					code = max(code, t.ExitCode)
				}
				return code, nil
			}
			if j.State != "COMPLETED" && j.ExitCode == 0 {
				fmt.Fprintf(stderr, "srun: job %d ended %s (%s)\n", res.ID, j.State, j.Reason)
				return 1, nil
			}
			return j.ExitCode, nil
		}
		time.Sleep(srunPoll)
	}
}

// pendingLine tells the user, while srun waits, whether its job is still
// pending and why, the way srun's "job N queued and waiting for resources"
// does: on a terminal one line rewritten in place, elsewhere a line per
// change.
type pendingLine struct {
	w      io.Writer
	job    uint64
	tty    bool
	last   string
	active bool
}

func newPendingLine(w io.Writer, job uint64) *pendingLine {
	p := &pendingLine{w: w, job: job}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *pendingLine) show(j api.Job) {
	var line string
	switch j.State {
	case "PENDING", "REQUEUED":
		line = fmt.Sprintf("srun: job %d queued and waiting for resources (%s)", p.job, orNone(j.Reason))
	default:
		line = fmt.Sprintf("srun: job %d has been allocated resources: %s", p.job, slurm.CompressHostlist(j.Nodes))
	}
	if line == p.last {
		return
	}
	p.last = line
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.active = true
		if j.State != "PENDING" && j.State != "REQUEUED" {
			fmt.Fprintln(p.w)
			p.active = false
		}
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends a line left open on a terminal, before srun writes another.
func (p *pendingLine) done() {
	if p.active {
		fmt.Fprintln(p.w)
		p.active = false
	}
}

// preserveEnv is srun -E: the node and task counts not given on the
// command line come from SLURM_NNODES and SLURM_NTASKS, as Slurm's srun
// takes them; without -E it does nothing.
func preserveEnv(opts *slurm.Options, getenv func(string) string) {
	if !opts.Set["preserve-env"] {
		return
	}
	if n, err := strconv.Atoi(getenv("SLURM_NNODES")); err == nil && n > 0 && !opts.Set["nodes"] {
		opts.Nodes = slurm.Nodes{Min: n, Max: n}
		opts.Set["nodes"] = true
	}
	if n, err := strconv.Atoi(getenv("SLURM_NTASKS")); err == nil && n > 0 && !opts.Set["ntasks"] && !opts.Set["ntasks-per-node"] {
		opts.NTasks = n
		opts.Set["ntasks"] = true
	}
}

// multiProgCommand is srun --multi-prog's command: a /bin/sh script made
// of the configuration file conf that execs each task's program.
func multiProgCommand(conf string) ([]string, error) {
	f, err := os.Open(conf)
	if err != nil {
		return nil, fmt.Errorf("--multi-prog: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, fmt.Errorf("--multi-prog %s: %w", conf, err)
	}
	script, err := slurm.MultiProgScript(string(data))
	if err != nil {
		return nil, fmt.Errorf("--multi-prog %s: %w", conf, err)
	}
	return []string{"/bin/sh", "-c", script, "srun-multi-prog"}, nil
}
