package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/slurm"
)

// srunAttachWait bounds how long srun --pty waits for a started step's
// terminal to appear (the step's ranks starting on their node).
const srunAttachWait = time.Minute

// srunPty is srun --pty: rank 0 of the step (inside an allocation, job
// set) or of a job of its own runs on a terminal that srun attaches this
// one to, raw, until the rank's terminal ends; srun then returns the
// step's or job's exit code. A job of its own has srun's usual one task;
// a step is one task on one node unless its options ask for more
// (ptyStepSpec). Only rank 0 has the terminal; the other ranks run
// without input.
func srunPty(ctx context.Context, connect Connect, opts slurm.Options, command []string, job, inc uint64, stdout, stderr io.Writer) (int, error) {
	if job == 0 && opts.Set["bcast"] {
		return 1, errBcastOutside
	}
	c, err := connect()
	if err != nil {
		return 1, err
	}
	if job == 0 {
		req, warnings, err := request.FromOptions(opts)
		if err != nil {
			return 1, err
		}
		request.PrintWarnings("srun", warnings)
		req.Command, req.Pty = command, true
		if req.Name == "" {
			req.Name = filepath.Base(command[0])
		}
		res, err := c.Submit(ctx, req, request.SubmitRetry)
		if err != nil {
			return 1, err
		}
		request.PrintWarnings("srun", res.Warnings)
		if err := session(ctx, c, res.ID, task.NoStep, stdout, stderr); err != nil {
			cancelOwnJob(c, res.ID, stderr)
			return 1, err
		}
		return waitOwnJob(ctx, c, res.ID, newStreamer(opts.Label, stdout, stderr), stderr)
	}
	spec, err := ptyStepSpec(opts, command)
	if err != nil {
		return 1, err
	}
	if spec, err = stepExclude(ctx, c, job, opts, spec); err != nil {
		return 1, err
	}
	if spec.Command, err = bcastCommand(ctx, c, job, opts, spec.Command, spec.WorkDir); err != nil {
		return 1, err
	}
	req := api.StepRequest{Incarnation: inc, Spec: spec, RequestID: request.NewID()}
	step, err := startStepWaiting(ctx, c, job, opts.Immediate, stderr, func() (api.StepResponse, error) {
		return c.StartStep(ctx, job, req)
	})
	if errors.Is(err, exitcode.Code(1)) {
		return 1, err
	}
	if err != nil {
		return 1, fmt.Errorf("start step in job %d: %w", job, err)
	}
	if err := session(ctx, c, job, step.Step, stdout, stderr); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.CancelStep(cctx, job, step.Step)
		cancel()
		return 1, err
	}
	// The terminal ended: the step's exit code, and the other ranks'
	// output, as srun without --pty gives them.
	return followStep(ctx, c, job, step, followOpts{Label: opts.Label, NoKill: opts.NoKill}, stdout, stderr)
}

// ptyStepSpec is the step srun --pty's options ask for: one task, on
// one node, unless -n, --ntasks-per-node, -N or -w ask for more (then as
// srun without --pty: only task 0 has the terminal). An interactive shell
// in a many-node allocation is what `srun --pty bash` is for.
func ptyStepSpec(opts slurm.Options, command []string) (cluster.StepSpec, error) {
	request.PrintWarnings("srun", stepHints(opts))
	spec, err := stepSpec(opts, command)
	if err != nil {
		return spec, err
	}
	spec.Pty, spec.Stdin = true, "" // rank 0 reads the terminal, the others nothing
	if !opts.Set["ntasks"] && !opts.Set["ntasks-per-node"] && !opts.Set["nodes"] && len(spec.NodeList) == 0 {
		spec.NTasks, spec.TasksPerNode, spec.Nodes = 1, 0, 1
	}
	return spec, nil
}

// session attaches this terminal to the remote one until the command
// ends. A connection that ends while the command still runs (an agent on
// the way restarting: the supervisor holds the terminal) is made again.
func session(ctx context.Context, c *api.Client, job uint64, step int, stdout, stderr io.Writer) error {
	var deadline time.Time // a job of its own waits in the queue as long as it pends
	if step != task.NoStep {
		deadline = time.Now().Add(srunAttachWait)
	}
	var local *localTerm // raw from the first connection to the end
	defer func() {
		if local != nil {
			local.close()
		}
	}()
	for again := false; ; again = true {
		if again {
			deadline = time.Now().Add(srunAttachWait)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(srunPoll):
			}
		}
		conn, err := attachPty(ctx, c, job, step, stderr, deadline, again)
		if errors.Is(err, errTerminalGone) {
			return nil
		}
		if err != nil {
			return err
		}
		if local == nil {
			if local, err = openLocal(); err != nil {
				conn.Close()
				return err
			}
		}
		if err := relayTerminal(ctx, conn, local, stdout); err != nil {
			return err
		}
	}
}

// errTerminalGone: the command ended before srun could attach to its
// terminal (a quick one); its exit code is still srun's.
var errTerminalGone = errors.New("the command ended before its terminal was attached")

// attachPty connects to the terminal of job's rank 0 (of step, or of the
// job's own task for task.NoStep) once it is there: while the agent
// answers 503 (pending, starting) it asks again, until deadline (none
// when zero). again (a connection made again) also retries an agent that
// does not answer (restarting). It returns errTerminalGone once the
// command has ended.
func attachPty(ctx context.Context, c *api.Client, job uint64, step int, stderr io.Writer, deadline time.Time, again bool) (io.ReadWriteCloser, error) {
	pending := newPendingLine(stderr, job)
	for {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		conn, err := c.AttachPty(actx, job, step)
		cancel()
		if err == nil {
			if pending.active {
				fmt.Fprintln(stderr)
			}
			return conn, nil
		}
		var se *api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusConflict && step != task.NoStep {
			return nil, errTerminalGone // the step ended
		}
		if !retryPty(err, again) {
			return nil, fmt.Errorf("attach to the terminal of job %d: %w", job, err)
		}
		if step == task.NoStep {
			j, jerr := readJob(ctx, c, job)
			if jerr == nil {
				if !again {
					pending.show(j)
				}
				if cluster.JobState(j.State).Terminal() {
					return nil, errTerminalGone
				}
			}
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return nil, fmt.Errorf("attach to the terminal of job %d: %w", job, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(srunPoll):
		}
	}
}

// retryPty says whether an attach that failed with err is tried again: a
// terminal not there yet (503) always; while a connection is made again
// (again) also no answer, or any answer but a refusal of the request
// itself (400, 401, 403): the agent of the rank's node restarting
// answers through srun's as 502, and an agent just restarted may not
// know the job yet (404).
func retryPty(err error, again bool) bool {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return again
	}
	switch {
	case se.Code == http.StatusServiceUnavailable:
		return true
	case !again:
		return false
	}
	switch se.Code {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict:
		return false
	}
	return true
}

// localTerm is this side of a session: stdin, in raw mode when it is a
// terminal, read by one reader for the whole session (through a
// non-blocking descriptor, so that close can stop it with a deadline; a
// second one would not be pollable). What is typed while no connection
// takes it (one made again) waits, and goes first on the next.
type localTerm struct {
	fd     int
	isTerm bool
	in     *os.File
	undo   []func()
	// keys are the reader's chunks, in order; closed at the input's end.
	keys chan []byte
	quit chan struct{}
	wg   sync.WaitGroup
	// pending are frames a connection that broke did not take; ended
	// once the input's end has been queued (its ^D).
	pending []byte
	ended   bool
}

func openLocal() (*localTerm, error) {
	l := &localTerm{fd: int(os.Stdin.Fd()), in: os.Stdin, keys: make(chan []byte), quit: make(chan struct{})}
	l.isTerm = term.IsTerminal(l.fd)
	if l.isTerm {
		old, err := term.MakeRaw(l.fd)
		if err != nil {
			return nil, fmt.Errorf("terminal: raw mode: %w", err)
		}
		l.undo = append(l.undo, func() { _ = term.Restore(l.fd, old) })
	}
	pollable := false
	if err := syscall.SetNonblock(l.fd, true); err == nil {
		pollable = true
		l.in = os.NewFile(uintptr(l.fd), "stdin")
		l.undo = append(l.undo, func() { _ = syscall.SetNonblock(l.fd, false) })
	}
	read := func() { // owned by close: it ends with the deadline or quit
		defer close(l.keys)
		for {
			buf := make([]byte, 4096)
			n, err := l.in.Read(buf)
			if n > 0 {
				select {
				case l.keys <- buf[:n]:
				case <-l.quit:
					return
				}
			}
			if err != nil {
				return // EOF, or the deadline of close
			}
		}
	}
	if pollable {
		l.wg.Go(read)
	} else {
		go read() // a file: its reads end by themselves
	}
	return l, nil
}

// close stops the reader and restores stdin as it was.
func (l *localTerm) close() {
	close(l.quit)
	_ = l.in.SetReadDeadline(time.Now())
	l.wg.Wait()
	for i := len(l.undo) - 1; i >= 0; i-- {
		l.undo[i]()
	}
}

// relayTerminal runs one connection of the session: what local holds and
// what is typed, and its window size, sent to the remote terminal as
// frames, the remote output written to stdout, until the remote end
// closes or ctx ends. A frame the connection did not take waits in local
// for the next.
func relayTerminal(ctx context.Context, conn io.ReadWriteCloser, local *localTerm, stdout io.Writer) error {
	defer conn.Close()
	fd, isTerm := local.fd, local.isTerm
	var wmu sync.Mutex // frames from the keyboard and from SIGWINCH
	send := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := conn.Write(b)
		return err
	}
	if isTerm {
		if w, h, err := term.GetSize(fd); err == nil {
			_ = send(task.AppendPtyResize(nil, uint16(h), uint16(w)))
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		if len(local.pending) > 0 {
			if send(local.pending) != nil {
				return
			}
			local.pending = nil
		}
		keys := local.keys
		if local.ended {
			keys = nil
		}
		for {
			var frame []byte
			select {
			case <-stop:
				return
			case b, ok := <-keys:
				switch {
				case ok:
					frame = task.AppendPtyData(nil, b)
				case isTerm:
					return // the terminal went: SIGHUP ends the session
				default:
					// Input from a file or a pipe ended: the remote
					// terminal reads its end as a typed ^D would give it.
					frame, keys, local.ended = task.AppendPtyData(nil, []byte{4}), nil, true
				}
			}
			if send(frame) != nil {
				local.pending = frame
				return
			}
		}
	})
	if isTerm {
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-winch:
					if w, h, err := term.GetSize(fd); err == nil {
						_ = send(task.AppendPtyResize(nil, uint16(h), uint16(w)))
					}
				}
			}
		})
	}
	// This terminal closing (SIGHUP) ends the session as srun's own
	// interruption does; the caller then cancels the remote side.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var hungUp atomic.Bool
	wg.Go(func() {
		select {
		case <-stop:
		case <-ctx.Done():
			conn.Close() // srun signalled: end the session
		case <-hup:
			hungUp.Store(true)
			conn.Close()
		}
	})
	_, err := io.Copy(stdout, conn)
	conn.Close() // a send under way fails now, and its frame waits
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if hungUp.Load() {
		return errors.New("the terminal hung up")
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("terminal: %w", err)
	}
	return nil
}

// cancelOwnJob cancels srun's own job after its session failed.
func cancelOwnJob(c *api.Client, job uint64, stderr io.Writer) {
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Cancel(cctx, job); err == nil {
		fmt.Fprintf(stderr, "srun: job %d cancelled\n", job)
	}
}

// waitOwnJob waits for srun's own job to end once its terminal closed,
// writes the other ranks' output to out, and returns the job's exit code.
func waitOwnJob(ctx context.Context, c *api.Client, job uint64, out *streamer, stderr io.Writer) (int, error) {
	deadline := time.Now().Add(srunCancelWait)
	for {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		j, err := c.Job(rctx, job)
		// Read after the state: what a job that has ended wrote is all there.
		if chunks, lerr := c.StepLogs(rctx, job, task.NoStep, out.offsets); lerr == nil {
			out.write(chunks)
		}
		cancel()
		if err == nil && cluster.JobState(j.State).Terminal() {
			out.flush()
			if j.State != "COMPLETED" && j.ExitCode == 0 {
				fmt.Fprintf(stderr, "srun: job %d ended %s (%s)\n", job, j.State, j.Reason)
				return 1, nil
			}
			return j.ExitCode, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			cancelOwnJob(c, job, stderr)
			return 1, fmt.Errorf("job %d still running after its terminal closed", job)
		}
		time.Sleep(srunPoll)
	}
}
