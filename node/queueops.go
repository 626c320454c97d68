package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/slurm"
)

// jobRef is a job as Slurm's commands name it (slurm.JobRef: "12", "12_3"
// or "12_[1-3,7]"), with the text it was given as.
type jobRef struct {
	slurm.JobRef
	raw string
}

func parseJobRef(s string) (jobRef, error) {
	r, err := slurm.ParseJobRef(s)
	if err != nil {
		return jobRef{}, invalid(err)
	}
	return jobRef{JobRef: r, raw: s}, nil
}

// resolve returns the jobs ref names, in ascending ID order: all of an
// array's elements for its bare id.
func (r jobRef) resolve(v *fsm.View) ([]*cluster.Job, error) {
	rid := cluster.JobID(r.ID)
	head, ok := v.Job(rid)
	if !ok {
		return nil, notFound(fmt.Errorf("job %s: %w", r.raw, fsm.ErrUnknownJob))
	}
	if head.Array == nil || head.Array.JobID != rid {
		if r.Tasks != nil {
			return nil, notFound(fmt.Errorf("job %s: job %d is not an array", r.raw, rid))
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
		return nil, notFound(fmt.Errorf("job %s: array %d has no such element", r.raw, rid))
	}
	return out, nil
}

// jobsOf resolves the request's {id} against the current state.
func (a *Agent) jobsOf(r *http.Request) ([]*cluster.Job, error) {
	ref, err := parseJobRef(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return ref.resolve(a.state.View())
}

// mayTouch is the one rule for acting on a job (cancel, signal, hold,
// release, requeue, update, read its output): its owner, root, or an
// operator the policy names.
func mayTouch(v *fsm.View, verb string, j *cluster.Job, who caller) error {
	if who.Proven && (who.UID == j.Spec.UID || isOperator(v, who)) {
		return nil
	}
	return forbidden(fmt.Errorf("%s job %d: %w: it belongs to %s, and only its owner, root or an operator may", verb, j.ID, ErrForbidden, j.Spec.User))
}

// isOperator reports whether who is root or one of the policy's operators,
// by name or as a member of an operator group (looked up in this node's
// user database, as Slurm resolves groups on the controller).
func isOperator(v *fsm.View, who caller) bool {
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
func maySee(v *fsm.View, j *cluster.Job, who caller) bool {
	p := v.Policy()
	return p == nil || !p.PrivateJobs || (who.Proven && who.UID == j.Spec.UID) || isOperator(v, who)
}

// eachJob applies op to every job r names, in order. Jobs op refuses as
// not in the right state are skipped when the reference names several (an
// array's finished elements), and reported when it names one.
func (a *Agent) eachJob(w http.ResponseWriter, r *http.Request, verb string, op func(context.Context, *cluster.Job) (fsm.Result, error)) {
	who, here := a.http.AcceptWrite(w, r, nil)
	if !here {
		return
	}
	jobs, err := a.jobsOf(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	for _, j := range jobs {
		if err := mayTouch(a.state.View(), verb, j, who); err != nil {
			httpapi.WriteError(w, err)
			return
		}
	}
	ids := []uint64{}
	for _, j := range jobs {
		res, err := op(r.Context(), j)
		if err != nil {
			httpapi.WriteError(w, err)
			return
		}
		if res.Err != nil {
			if len(jobs) > 1 && (errors.Is(res.Err, fsm.ErrWrongState) || errors.Is(res.Err, fsm.ErrJobFinished)) {
				continue
			}
			if errors.Is(res.Err, fsm.ErrWrongState) || errors.Is(res.Err, fsm.ErrJobFinished) {
				httpapi.WriteError(w, conflict(res.Err))
			} else {
				httpapi.WriteError(w, invalid(res.Err))
			}
			return
		}
		ids = append(ids, uint64(j.ID))
	}
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), api.JobsChanged{ID: uint64(jobs[0].ID), IDs: ids})
}

// handleHold holds pending jobs (scontrol hold): a user hold when their
// owner asks, an administrator's when root does.
func (a *Agent) handleHold(w http.ResponseWriter, r *http.Request) {
	hold := cluster.HoldUser
	if callerOf(r).UID == 0 {
		hold = cluster.HoldAdmin
	}
	if r.URL.Query().Get("kind") == "user" { // scontrol uhold
		hold = cluster.HoldUser
	}
	a.eachJob(w, r, "hold", func(ctx context.Context, j *cluster.Job) (fsm.Result, error) {
		return a.apply(ctx, fsm.CmdSetHold, fsm.SetHold{Job: j.ID, Hold: hold, Time: time.Now()})
	})
}

// handleRelease releases held jobs; only root releases an administrator's
// hold.
func (a *Agent) handleRelease(w http.ResponseWriter, r *http.Request) {
	admin := callerOf(r).UID == 0
	a.eachJob(w, r, "release", func(ctx context.Context, j *cluster.Job) (fsm.Result, error) {
		if j.Hold == cluster.HoldAdmin && !admin {
			return fsm.Result{}, forbidden(fmt.Errorf("release job %d: %w: it was held by root, and only root may release it", j.ID, ErrForbidden))
		}
		return a.apply(ctx, fsm.CmdSetHold, fsm.SetHold{Job: j.ID, Time: time.Now()})
	})
}

// handleRequeue requeues running or ended jobs (scontrol requeue, or with
// ?hold=1 requeuehold).
func (a *Agent) handleRequeue(w http.ResponseWriter, r *http.Request) {
	hold := cluster.HoldNone
	if r.URL.Query().Get("hold") != "" {
		hold = cluster.HoldUser
		if callerOf(r).UID == 0 {
			hold = cluster.HoldAdmin
		}
	}
	a.eachJob(w, r, "requeue", func(ctx context.Context, j *cluster.Job) (fsm.Result, error) {
		return a.apply(ctx, fsm.CmdRequeueJob, fsm.RequeueJob{Job: j.ID, Hold: hold, Time: time.Now()})
	})
}

// handleSetPriority is `scontrol update JobId=N Priority=P`: root sets an
// absolute priority on live jobs (0 returns them to the multifactor
// priority), as Slurm lets only an administrator raise one.
func (a *Agent) handleSetPriority(w http.ResponseWriter, r *http.Request) {
	var req api.PriorityRequest
	who, here := a.http.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	if who.UID != 0 {
		httpapi.WriteError(w, forbidden(fmt.Errorf("set priority of job %s: %w: only root may", r.PathValue("id"), ErrForbidden)))
		return
	}
	jobs, err := a.jobsOf(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	ids := []uint64{}
	for _, j := range jobs {
		if len(jobs) > 1 && j.State.Terminal() {
			continue
		}
		res, err := a.apply(r.Context(), fsm.CmdSetJobPriority, fsm.SetJobPriority{Job: j.ID, Priority: req.Priority, Time: time.Now()})
		if err != nil {
			httpapi.WriteError(w, err)
			return
		}
		if res.Err != nil {
			if errors.Is(res.Err, fsm.ErrJobFinished) {
				httpapi.WriteError(w, conflict(res.Err))
			} else {
				httpapi.WriteError(w, invalid(res.Err))
			}
			return
		}
		ids = append(ids, uint64(j.ID))
	}
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), api.JobsChanged{ID: uint64(jobs[0].ID), IDs: ids})
}

// handleUpdate is `scontrol update JobId=N Field=Value ...`: the FSM
// decides (fsm.PlanJobUpdate), with Slurm's refusals; the agent parses the
// dependency and says whether the caller is root.
func (a *Agent) handleUpdate(w http.ResponseWriter, r *http.Request) {
	var req api.UpdateRequest
	who, here := a.http.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	f := fsm.JobUpdate{Nodes: req.Nodes, Partition: req.Partition, QoS: req.QoS, Name: req.Name, Comment: req.Comment, Nice: req.Nice}
	if req.TimeLimitS != nil {
		d := time.Duration(*req.TimeLimitS) * time.Second
		if *req.TimeLimitS < 0 || *req.TimeLimitS > int64(math.MaxInt64/time.Second) {
			httpapi.WriteError(w, invalid(fmt.Errorf("update job %s: %w: time_limit_s %d", r.PathValue("id"), fsm.ErrUpdateTimeLimit, *req.TimeLimitS)))
			return
		}
		f.TimeLimit = &d
	}
	if req.TimeLimitAddS != nil {
		d := time.Duration(*req.TimeLimitAddS) * time.Second
		if d/time.Second != time.Duration(*req.TimeLimitAddS) {
			httpapi.WriteError(w, invalid(fmt.Errorf("update job %s: %w: time_limit_add_s %d", r.PathValue("id"), fsm.ErrUpdateTimeLimit, *req.TimeLimitAddS)))
			return
		}
		f.TimeLimitAdd = &d
	}
	if req.Dependency != nil {
		if *req.Dependency == "" {
			f.NoDependency = true
		} else {
			d, err := slurm.ParseDependency(*req.Dependency)
			if err != nil {
				httpapi.WriteError(w, invalid(fmt.Errorf("update job %s: %w: %w", r.PathValue("id"), fsm.ErrUpdateDependency, err)))
				return
			}
			f.Dependency = cluster.DependencyFromSlurm(d)
		}
	}
	jobs, err := a.jobsOf(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	ids := []uint64{}
	for _, j := range jobs {
		if len(jobs) > 1 && j.State.Terminal() {
			continue
		}
		res, err := a.apply(r.Context(), fsm.CmdUpdateJob, fsm.UpdateJob{Job: j.ID, UID: who.UID, Admin: who.UID == 0, Fields: f, Time: time.Now()})
		if err != nil {
			httpapi.WriteError(w, err)
			return
		}
		if res.Err != nil {
			switch {
			case errors.Is(res.Err, fsm.ErrUpdateAccessDenied):
				httpapi.WriteError(w, forbidden(res.Err))
			case errors.Is(res.Err, fsm.ErrUpdateNotPending), errors.Is(res.Err, fsm.ErrUpdateNotSupported), errors.Is(res.Err, fsm.ErrUpdateFinished):
				httpapi.WriteError(w, conflict(res.Err))
			default:
				httpapi.WriteError(w, invalid(res.Err))
			}
			return
		}
		ids = append(ids, uint64(j.ID))
	}
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), api.JobsChanged{ID: uint64(jobs[0].ID), IDs: ids})
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
