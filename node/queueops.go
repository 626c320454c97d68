package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/slurm"
)

// resolve returns the jobs ref names, in ascending ID order: all of an
// array's elements for its bare id.
func resolve(v *fsm.View, r cluster.JobRef) ([]*cluster.Job, error) {
	rid := cluster.JobID(r.ID)
	head, ok := v.Job(rid)
	if !ok {
		return nil, notFound(fmt.Errorf("job %s: %w", r.Raw, fsm.ErrUnknownJob))
	}
	if head.Array == nil || head.Array.JobID != rid {
		if r.Tasks != nil {
			return nil, notFound(fmt.Errorf("job %s: job %d is not an array", r.Raw, rid))
		}
		return []*cluster.Job{head}, nil
	}
	var out []*cluster.Job
	for id := rid; ; id++ {
		e, ok := v.Job(id)
		if !ok || e.Array == nil || e.Array.JobID != rid {
			break
		}
		if r.Tasks == nil || slices.Contains(r.Tasks, e.Array.TaskID) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, notFound(fmt.Errorf("job %s: array %d has no such element", r.Raw, rid))
	}
	return out, nil
}

// jobsOf resolves the job reference id, as a request gave it, against the
// current state.
func (a *Agent) jobsOf(id string) ([]*cluster.Job, error) {
	ref, err := cluster.ParseJobRef(id)
	if err != nil {
		return nil, err
	}
	return resolve(a.state.View(), ref)
}

// mayTouch is the one rule for acting on a job (cancel, signal, hold,
// release, requeue, update, read its output): its owner, root, or an
// operator the policy names.
func mayTouch(v *fsm.View, verb string, j *cluster.Job, who cluster.Identity) error {
	if who.Proven && (who.UID == j.Spec.UID || isOperator(v, who)) {
		return nil
	}
	return forbidden(fmt.Errorf("%s job %d: %w: it belongs to %s, and only its owner, root or an operator may", verb, j.ID, ErrForbidden, j.Spec.User))
}

// isOperator reports whether who is root or one of the policy's operators,
// by name or as a member of an operator group (looked up in this node's
// user database, as Slurm resolves groups on the controller).
func isOperator(v *fsm.View, who cluster.Identity) bool {
	if !who.Proven {
		return false
	}
	if who.UID == 0 || v.Policy().IsOperator(who.User) {
		return true
	}
	groups := v.Policy().OperatorGroups()
	if len(groups) == 0 {
		return false
	}
	u, err := user.LookupId(strconv.Itoa(who.UID))
	if err != nil {
		return false
	}
	gids, err := u.GroupIds()
	if err != nil {
		return false
	}
	for _, name := range groups {
		if g, err := user.LookupGroup(name); err == nil && slices.Contains(gids, g.Gid) {
			return true
		}
	}
	return false
}

// maySee reports whether who may see job j: always, unless the policy
// keeps jobs private (then its owner, root and operators).
func maySee(v *fsm.View, j *cluster.Job, who cluster.Identity) bool {
	p := v.Policy()
	return p == nil || !p.PrivateJobs || (who.Proven && who.UID == j.Spec.UID) || isOperator(v, who)
}

// eachJob applies op to every job ref names, in order, for who. Jobs op
// refuses as not in the right state are skipped when the reference names
// several (an array's finished elements), and reported when it names one.
func (a *Agent) eachJob(ctx context.Context, ref cluster.JobRef, who cluster.Identity, verb string, op func(context.Context, *cluster.Job) (fsm.Result, error)) (api.JobsChanged, error) {
	jobs, err := resolve(a.state.View(), ref)
	if err != nil {
		return api.JobsChanged{}, err
	}
	for _, j := range jobs {
		if err := mayTouch(a.state.View(), verb, j, who); err != nil {
			return api.JobsChanged{}, err
		}
	}
	ids := []uint64{}
	for _, j := range jobs {
		res, err := op(ctx, j)
		if err != nil {
			return api.JobsChanged{}, err
		}
		if res.Err != nil {
			if len(jobs) > 1 && (errors.Is(res.Err, fsm.ErrWrongState) || errors.Is(res.Err, fsm.ErrJobFinished)) {
				continue
			}
			if errors.Is(res.Err, fsm.ErrWrongState) || errors.Is(res.Err, fsm.ErrJobFinished) {
				return api.JobsChanged{}, conflict(res.Err)
			}
			return api.JobsChanged{}, invalid(res.Err)
		}
		ids = append(ids, uint64(j.ID))
	}
	return api.JobsChanged{ID: uint64(jobs[0].ID), IDs: ids}, nil
}

// Hold holds pending jobs (scontrol hold): a user hold when their owner
// asks or userHold (scontrol uhold), an administrator's when root does.
func (b apiBackend) Hold(ctx context.Context, ref cluster.JobRef, userHold bool, who cluster.Identity) (api.JobsChanged, error) {
	hold := cluster.HoldUser
	if who.UID == 0 && !userHold {
		hold = cluster.HoldAdmin
	}
	return b.a.eachJob(ctx, ref, who, "hold", func(ctx context.Context, j *cluster.Job) (fsm.Result, error) {
		return b.a.apply(ctx, fsm.CmdSetHold, fsm.SetHold{Job: j.ID, Hold: hold, Time: time.Now()})
	})
}

// Release releases held jobs; only root releases an administrator's hold.
func (b apiBackend) Release(ctx context.Context, ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error) {
	admin := who.UID == 0
	return b.a.eachJob(ctx, ref, who, "release", func(ctx context.Context, j *cluster.Job) (fsm.Result, error) {
		if j.Hold == cluster.HoldAdmin && !admin {
			return fsm.Result{}, forbidden(fmt.Errorf("release job %d: %w: it was held by root, and only root may release it", j.ID, ErrForbidden))
		}
		return b.a.apply(ctx, fsm.CmdSetHold, fsm.SetHold{Job: j.ID, Time: time.Now()})
	})
}

// Requeue requeues running or ended jobs (scontrol requeue; with hold,
// requeuehold: held by the user, or by the administrator when root asks).
func (b apiBackend) Requeue(ctx context.Context, ref cluster.JobRef, held bool, who cluster.Identity) (api.JobsChanged, error) {
	hold := cluster.HoldNone
	if held {
		hold = cluster.HoldUser
		if who.UID == 0 {
			hold = cluster.HoldAdmin
		}
	}
	return b.a.eachJob(ctx, ref, who, "requeue", func(ctx context.Context, j *cluster.Job) (fsm.Result, error) {
		return b.a.apply(ctx, fsm.CmdRequeueJob, fsm.RequeueJob{Job: j.ID, Hold: hold, Time: time.Now()})
	})
}

// SetPriority is `scontrol update JobId=N Priority=P`: root sets an
// absolute priority on live jobs (0 returns them to the multifactor
// priority), as Slurm lets only an administrator raise one.
func (b apiBackend) SetPriority(ctx context.Context, id string, req api.PriorityRequest, who cluster.Identity) (api.JobsChanged, error) {
	if who.UID != 0 {
		return api.JobsChanged{}, forbidden(fmt.Errorf("set priority of job %s: %w: only root may", id, ErrForbidden))
	}
	return b.a.eachLiveJob(ctx, id, func(ctx context.Context, j *cluster.Job) (fsm.Result, error) {
		return b.a.apply(ctx, fsm.CmdSetJobPriority, fsm.SetJobPriority{Job: j.ID, Priority: req.Priority, Time: time.Now()})
	}, func(err error) error {
		if errors.Is(err, fsm.ErrJobFinished) {
			return conflict(err)
		}
		return invalid(err)
	})
}

// Update is `scontrol update JobId=N Field=Value ...`: the FSM decides
// (fsm.PlanJobUpdate), with Slurm's refusals; the agent parses the
// dependency and says whether the caller is root.
func (b apiBackend) Update(ctx context.Context, id string, req api.UpdateRequest, who cluster.Identity) (api.JobsChanged, error) {
	f := fsm.JobUpdate{Nodes: req.Nodes, Partition: req.Partition, QoS: req.QoS, Name: req.Name, Comment: req.Comment, Nice: req.Nice}
	if req.TimeLimitS != nil {
		d := time.Duration(*req.TimeLimitS) * time.Second
		if *req.TimeLimitS < 0 || *req.TimeLimitS > int64(math.MaxInt64/time.Second) {
			return api.JobsChanged{}, invalid(fmt.Errorf("update job %s: %w: time_limit_s %d", id, fsm.ErrUpdateTimeLimit, *req.TimeLimitS))
		}
		f.TimeLimit = &d
	}
	if req.TimeLimitAddS != nil {
		d := time.Duration(*req.TimeLimitAddS) * time.Second
		if d/time.Second != time.Duration(*req.TimeLimitAddS) {
			return api.JobsChanged{}, invalid(fmt.Errorf("update job %s: %w: time_limit_add_s %d", id, fsm.ErrUpdateTimeLimit, *req.TimeLimitAddS))
		}
		f.TimeLimitAdd = &d
	}
	if req.Dependency != nil {
		if *req.Dependency == "" {
			f.NoDependency = true
		} else {
			d, err := slurm.ParseDependency(*req.Dependency)
			if err != nil {
				return api.JobsChanged{}, invalid(fmt.Errorf("update job %s: %w: %w", id, fsm.ErrUpdateDependency, err))
			}
			f.Dependency = cluster.DependencyFromSlurm(d)
		}
	}
	return b.a.eachLiveJob(ctx, id, func(ctx context.Context, j *cluster.Job) (fsm.Result, error) {
		return b.a.apply(ctx, fsm.CmdUpdateJob, fsm.UpdateJob{Job: j.ID, UID: who.UID, Admin: who.UID == 0, Fields: f, Time: time.Now()})
	}, func(err error) error {
		switch {
		case errors.Is(err, fsm.ErrUpdateAccessDenied):
			return forbidden(err)
		case errors.Is(err, fsm.ErrUpdateNotPending), errors.Is(err, fsm.ErrUpdateNotSupported), errors.Is(err, fsm.ErrUpdateFinished):
			return conflict(err)
		}
		return invalid(err)
	})
}

// eachLiveJob applies op to the jobs the reference id names (passing over
// an array's finished elements); the first refusal of the FSM ends it,
// marked by refusal.
func (a *Agent) eachLiveJob(ctx context.Context, id string, op func(context.Context, *cluster.Job) (fsm.Result, error), refusal func(error) error) (api.JobsChanged, error) {
	jobs, err := a.jobsOf(id)
	if err != nil {
		return api.JobsChanged{}, err
	}
	ids := []uint64{}
	for _, j := range jobs {
		if len(jobs) > 1 && j.State.Terminal() {
			continue
		}
		res, err := op(ctx, j)
		if err != nil {
			return api.JobsChanged{}, err
		}
		if res.Err != nil {
			return api.JobsChanged{}, refusal(res.Err)
		}
		ids = append(ids, uint64(j.ID))
	}
	return api.JobsChanged{ID: uint64(jobs[0].ID), IDs: ids}, nil
}

// spreadGPUs turns --gpus G without --nodes into the fewest nodes that can
// hold G evenly: n nodes of G/n GPUs, the smallest n for which G/n is a
// whole number no node's GPU count is below on n nodes. A G no such split
// fits is left on one node, for the submit check to refuse with its
// reason.
func (a *Agent) spreadGPUs(req *api.SubmitRequest) error {
	g := req.GPUsTotal
	if g < 0 || g > cluster.MaxNodesPerJob*cluster.MaxGPUsPerNode {
		return invalid(fmt.Errorf("gpus_total %d: want 1 to %d", g, cluster.MaxNodesPerJob*cluster.MaxGPUsPerNode))
	}
	var sizes []int
	for _, n := range a.knownNodes(a.state.View()) {
		if n.Status != cluster.NodeLeft {
			sizes = append(sizes, len(n.GPUs))
		}
	}
	req.Nodes, req.GPUsPerNode = 1, g
	for n := 1; n <= min(g, len(sizes)); n++ {
		if g%n != 0 {
			continue
		}
		per, enough := g/n, 0
		for _, s := range sizes {
			if s >= per {
				enough++
			}
		}
		if enough >= n {
			req.Nodes, req.GPUsPerNode = n, per
			return nil
		}
	}
	return nil
}
