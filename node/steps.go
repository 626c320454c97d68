package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/slurm"
)

// shimNames are the names the agent puts on a batch script's and a
// step's PATH, as links to its own binary: every Slurm command Shoal
// plays (slurm.Commands), and shoal itself (for shoal step).
func shimNames() []string {
	names := []string{"shoal"}
	for _, c := range slurm.Commands {
		names = append(names, string(c))
	}
	return names
}

// makeShimDir links the Slurm command names under the data dir to the
// small shoal-slurm beside this agent's binary when it is installed
// (slurm.ShimTarget: it starts faster), else to this binary, and shoal to
// this binary, so scripts call Shoal's srun with no change.
func makeShimDir(dataDir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	dir := filepath.Join(dataDir, "shims")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("shim dir %s: %w", dir, err)
	}
	// Ranks run as their users: the dir must be searchable by them.
	_ = os.Chmod(dir, 0o755)
	shimTarget := slurm.ShimTarget(self)
	for _, n := range shimNames() {
		link := filepath.Join(dir, n)
		target := shimTarget
		if n == "shoal" {
			target = self
		}
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return "", fmt.Errorf("shim %s: %w", link, err)
		}
	}
	return dir, nil
}

// StartStep starts an srun step (leader).
func (b apiBackend) StartStep(ctx context.Context, id cluster.JobID, req api.StepRequest, who cluster.Identity) (api.StepResponse, error) {
	return b.a.leaderStartStep(ctx, id, req, who)
}

// leaderStartStep starts an srun step for its job's owner (or root).
func (a *Agent) leaderStartStep(ctx context.Context, id cluster.JobID, req api.StepRequest, who cluster.Identity) (api.StepResponse, error) {
	j, ok := a.state.View().Job(id)
	if !ok {
		return api.StepResponse{}, notFound(fmt.Errorf("job %d: no such job", id))
	}
	if who.UID != 0 && who.UID != j.Spec.UID {
		return api.StepResponse{}, forbidden(fmt.Errorf("start a step in job %d: %w: it belongs to %s", id, ErrForbidden, j.Spec.User))
	}
	inc := req.Incarnation
	if inc == 0 {
		inc = j.Incarnation // a caller outside the job's environment: its current run
	}
	cmd := fsm.StartStep{Job: id, Incarnation: inc, Spec: req.Spec, Time: time.Now()}
	cmd.Spec.Dealt = true // the step's tasks dealt over the job's CPUs, as Slurm's srun
	if a.checkProtocol(ctx, fsm.CmdStartStep, fsm.Needs(fsm.CmdStartStep, cmd)) != nil {
		cmd.Spec.Dealt = false // an older server would lay them out evenly
		// and start every step at once, sharing the allocation (as
		// --overlap): the step holds nothing of its own.
		cmd.Spec.Exclusive, cmd.Spec.GPUs, cmd.Spec.GPUsPerNode, cmd.Spec.Exact, cmd.Spec.CPUsPerTask = false, 0, 0, false, 0
	}
	res, err := a.apply(ctx, fsm.CmdStartStep, cmd)
	if err != nil {
		return api.StepResponse{}, err
	}
	if res.Err != nil {
		if errors.Is(res.Err, fsm.ErrUnknownJob) {
			return api.StepResponse{}, notFound(res.Err)
		}
		if errors.Is(res.Err, fsm.ErrStepBusy) {
			// Other steps hold what it asks for: srun waits for one to
			// end (api.IsStepBusy).
			return api.StepResponse{}, conflict(res.Err)
		}
		return api.StepResponse{}, invalid(res.Err)
	}
	a.log.Info("step started", "job", uint64(id), "step", res.StepID, "by", who.User)
	return api.StepResponse{Step: res.StepID, Incarnation: inc}, nil
}

// CancelStep cancels step of job id for who (leader).
func (b apiBackend) CancelStep(ctx context.Context, id cluster.JobID, step int, who cluster.Identity) error {
	a := b.a
	j, ok := a.state.View().Job(id)
	if !ok {
		return notFound(fmt.Errorf("job %d: no such job", id))
	}
	if err := mayTouch(a.state.View(), fmt.Sprintf("cancel step %d of", step), j, who); err != nil {
		return err
	}
	res, err := a.apply(ctx, fsm.CmdCancelStep, fsm.CancelStep{Job: id, Step: step, Time: time.Now()})
	if err == nil && res.Err != nil {
		err = conflict(res.Err)
	}
	return err
}
