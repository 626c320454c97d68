package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
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

// StartStep starts an srun step for its job's owner (or root) (leader:
// leader.PlanStartStep). Its tasks are dealt over the job's CPUs, as
// Slurm's srun, when every server speaks the protocol that records it;
// its request id is kept (and a repeat answered with the step the id
// started) when every server speaks the protocol that deduplicates it.
func (b apiBackend) StartStep(ctx context.Context, id cluster.JobID, req api.StepRequest, who cluster.Identity) (api.StepResponse, error) {
	if err := httpapi.CheckRequestID(req.RequestID); err != nil {
		return api.StepResponse{}, err
	}
	rid := httpapi.ScopedWriteRequestID(httpapi.ScopeStep, who, req.RequestID)
	v := b.state.View()
	if out, ok := stepOfRequest(v, id, rid); ok {
		return out, nil
	}
	dealt := req.Spec
	dealt.Dealt = true
	gate := b.gate(ctx)
	asked := rid
	rid = keptRequestID(rid, fsm.CmdStartStep, fsm.StartStep{Job: id, RequestID: rid}, gate)
	plan, err := leader.PlanStartStep(v, id, req.Incarnation, req.Spec,
		gate(fsm.CmdStartStep, fsm.Needs(fsm.CmdStartStep, fsm.StartStep{Job: id, Spec: dealt})) == nil, rid, callerOf(v.Policy(), who))
	if err != nil {
		return api.StepResponse{}, err
	}
	_, res, err := b.lead.propose(ctx, plan)
	if err != nil {
		return api.StepResponse{}, droppedOutcome(err, asked != rid, httpapi.StepWrite)
	}
	if res.Duplicate {
		// A copy that reached the log while this one was planned.
		if out, ok := stepOfRequest(b.state.View(), id, rid); ok {
			return out, nil
		}
	}
	inc := plan.Proposals[0].Cmd.(fsm.StartStep).Incarnation
	b.log.Info("step started", "job", uint64(id), "step", res.StepID, "by", who.User)
	return api.StepResponse{Step: res.StepID, Incarnation: inc}, nil
}

// stepOfRequest answers a step request whose id (scoped) already started
// a step of job id: that step. An id another request used is left to the
// FSM, which refuses it.
func stepOfRequest(v *fsm.View, id cluster.JobID, rid string) (api.StepResponse, bool) {
	job, inc, step, ok := v.StepByRequestID(rid)
	if !ok || job != id {
		return api.StepResponse{}, false
	}
	return api.StepResponse{Step: step, Incarnation: inc}, true
}

// CancelStep cancels step of job id for who (leader:
// leader.PlanCancelStep).
func (b apiBackend) CancelStep(ctx context.Context, id cluster.JobID, step int, who cluster.Identity) error {
	v := b.state.View()
	plan, err := leader.PlanCancelStep(v, id, step, callerOf(v.Policy(), who))
	_, err = b.lead.proposeOr(ctx, plan, err)
	return err
}
