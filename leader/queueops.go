package leader

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/slurm"
)

// Queue operations: what the leader proposes when a caller cancels,
// holds, releases, requeues, signals or updates jobs, or starts or
// cancels a step, and what the FSM's refusals mean to the caller. The
// plans read the view and the caller (as the agent proved and looked them
// up); the agent proposes each Proposal in order, stamped with the time
// it proposes it, and asks the plan what a refusal means.

// Caller is who asks, as the agent proved them, with what the agent
// looked up about them.
type Caller struct {
	cluster.Identity
	// InOperatorGroup: the caller's user belongs to one of the policy's
	// operator groups, in the user database of the node that decides (as
	// Slurm resolves groups on the controller).
	InOperatorGroup bool
}

// IsOperator reports whether c is root or one of policy p's operators, by
// name or as a member of an operator group.
func IsOperator(p *cluster.Policy, c Caller) bool {
	if !c.Proven {
		return false
	}
	return c.UID == 0 || p.IsOperator(c.User) || (len(p.OperatorGroups()) > 0 && c.InOperatorGroup)
}

// MayTouch is the one rule for acting on a job (cancel, signal, hold,
// release, requeue, update, read its output): its owner, root, or an
// operator the policy names. verb names the act in the refusal.
func MayTouch(p *cluster.Policy, verb string, j *cluster.Job, c Caller) error {
	if c.Proven && (c.UID == j.Spec.UID || IsOperator(p, c)) {
		return nil
	}
	return cluster.Mark(cluster.ErrForbidden, fmt.Errorf("%s job %d: %w: it belongs to %s, and only its owner, root or an operator may", verb, j.ID, cluster.ErrForbidden, j.Spec.User))
}

// MaySee reports whether c may see job j: always, unless the policy keeps
// jobs private (then its owner, root and operators).
func MaySee(p *cluster.Policy, j *cluster.Job, c Caller) bool {
	return p == nil || !p.PrivateJobs || (c.Proven && c.UID == j.Spec.UID) || IsOperator(p, c)
}

// Resolve returns the jobs r names, in ascending ID order: all of an
// array's elements for its bare id.
func Resolve(v *fsm.View, r cluster.JobRef) ([]*cluster.Job, error) {
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

// Proposal is one command of a plan, for one job.
type Proposal struct {
	Job cluster.JobID
	// Refused, when set, ends the request here with this error, the
	// proposals before it made (a release of root's hold by a user).
	Refused error
	Type    fsm.CmdType
	// Cmd is the command with its time left zero: Stamp sets it.
	Cmd any
}

// Stamp is p's command with its time set to now, when the agent proposes
// it.
func (p Proposal) Stamp(now time.Time) any {
	switch c := p.Cmd.(type) {
	case fsm.CancelJob:
		c.Time = now
		return c
	case fsm.SetHold:
		c.Time = now
		return c
	case fsm.RequeueJob:
		c.Time = now
		return c
	case fsm.SetJobPriority:
		c.Time = now
		return c
	case fsm.UpdateJob:
		c.Time = now
		return c
	case fsm.SignalJob:
		c.Time = now
		return c
	case fsm.StartStep:
		c.Time = now
		return c
	case fsm.CancelStep:
		c.Time = now
		return c
	case fsm.SetDrain:
		c.Time = now
		return c
	case fsm.SetPolicy:
		c.Time = now
		return c
	case fsm.ReportSwitch:
		c.Time = now
		return c
	}
	return p.Cmd
}

// opKind is which operation a plan carries out: it says what the FSM's
// refusals mean.
type opKind int

const (
	opCancel opKind = iota + 1
	opHold          // hold, release and requeue
	opPriority
	opUpdate
	opSignal
	opStartStep
	opCancelStep
	opAdmin // every refusal an invalid request
)

// QueuePlan is what to propose for one request: the proposals in order,
// and the id the answer names.
type QueuePlan struct {
	ID        uint64
	Proposals []Proposal
	// RequestID is the client's request id the plan's one proposal
	// carries (carryRequestID); "" where it carries none.
	RequestID string
	op        opKind
	several   bool // the reference named several jobs (an array)
}

// carryRequestID puts requestID in the plan's proposals (set returns
// the command with an id) and records it in RequestID: as it is where the
// reference named one job, else, with elementIDs (every server speaks
// ElementIDsProtocol), each element's own (ElementRequestID), as the FSM
// keeps one job's request per id; without, a request to several jobs
// carries none.
func (p *QueuePlan) carryRequestID(requestID string, elementIDs bool, set func(cmd any, rid string) any) {
	if requestID == "" || p.several && !elementIDs {
		return
	}
	for i, q := range p.Proposals {
		rid := requestID
		if p.several {
			rid = ElementRequestID(requestID, q.Job)
		}
		p.Proposals[i].Cmd = set(q.Cmd, rid)
	}
	p.RequestID = requestID
}

// ElementRequestID is the request id of array element job's write within
// a request with id rid that names several jobs: derived from both, so a
// second copy of the request derives the same ids and the FSM answers
// each element's as the first. It has no "/", which every scoped client
// id has (httpapi.ScopedRequestID), so it never names a request of one
// job; a hash keeps it within cluster.MaxRequestIDBytes however long rid
// is.
func ElementRequestID(rid string, job cluster.JobID) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", rid, job))
	return "e" + hex.EncodeToString(sum[:20])
}

// Refusal says what the FSM's refusal err of one of the plan's proposals
// means: a job passed over (skip; an array's element already finished or
// in the wrong state), or the request's error, marked with its kind.
func (p QueuePlan) Refusal(err error) (skip bool, marked error) {
	finished := errors.Is(err, fsm.ErrJobFinished)
	switch p.op {
	case opCancel:
		switch {
		case p.several && finished:
			return true, nil
		case finished:
			return false, conflict(err)
		case errors.Is(err, fsm.ErrUnknownJob): // gone since the plan
			return false, notFound(err)
		}
	case opHold:
		wrong := finished || errors.Is(err, fsm.ErrWrongState)
		switch {
		case p.several && wrong:
			return true, nil
		case wrong:
			return false, conflict(err)
		}
	case opPriority, opSignal:
		if finished {
			return false, conflict(err)
		}
	case opUpdate:
		switch {
		case errors.Is(err, fsm.ErrUpdateAccessDenied):
			return false, forbidden(err)
		case errors.Is(err, fsm.ErrUpdateNotPending), errors.Is(err, fsm.ErrUpdateNotSupported), errors.Is(err, fsm.ErrUpdateFinished):
			return false, conflict(err)
		}
	case opStartStep:
		switch {
		case errors.Is(err, fsm.ErrUnknownJob):
			return false, notFound(err)
		case errors.Is(err, fsm.ErrStepBusy):
			// Other steps hold what it asks for: srun waits for one to
			// end (api.IsStepBusy).
			return false, conflict(err)
		}
	case opCancelStep:
		return false, conflict(err)
	}
	return false, invalid(err)
}

// PlanCancel cancels a job, an array element, or every live element of an
// array (its bare id, as scancel does). Each job is checked against
// MayTouch where it comes: a refusal ends the request there.
func PlanCancel(v *fsm.View, ref cluster.JobRef, c Caller) (QueuePlan, error) {
	jobs, err := Resolve(v, ref)
	if err != nil {
		return QueuePlan{}, err
	}
	plan := QueuePlan{ID: ref.ID, op: opCancel, several: len(jobs) > 1}
	for _, j := range jobs {
		if plan.several && j.State.Terminal() {
			continue // an array's finished elements
		}
		p := Proposal{Job: j.ID, Type: fsm.CmdCancelJob, Cmd: fsm.CancelJob{Job: j.ID}}
		p.Refused = MayTouch(v.Policy(), "cancel", j, c)
		plan.Proposals = append(plan.Proposals, p)
	}
	return plan, nil
}

// eachJob plans one command per job ref names, once c may verb every one
// of them; refused may refuse a job where it comes.
func eachJob(v *fsm.View, ref cluster.JobRef, c Caller, verb string, cmd func(*cluster.Job) Proposal) (QueuePlan, error) {
	jobs, err := Resolve(v, ref)
	if err != nil {
		return QueuePlan{}, err
	}
	for _, j := range jobs {
		if err := MayTouch(v.Policy(), verb, j, c); err != nil {
			return QueuePlan{}, err
		}
	}
	plan := QueuePlan{ID: uint64(jobs[0].ID), op: opHold, several: len(jobs) > 1}
	for _, j := range jobs {
		plan.Proposals = append(plan.Proposals, cmd(j))
	}
	return plan, nil
}

// PlanHold holds pending jobs (scontrol hold): a user hold when their
// owner asks or userHold (scontrol uhold), an administrator's when root
// does.
func PlanHold(v *fsm.View, ref cluster.JobRef, userHold bool, c Caller) (QueuePlan, error) {
	hold := cluster.HoldUser
	if c.UID == 0 && !userHold {
		hold = cluster.HoldAdmin
	}
	return eachJob(v, ref, c, "hold", func(j *cluster.Job) Proposal {
		return Proposal{Job: j.ID, Type: fsm.CmdSetHold, Cmd: fsm.SetHold{Job: j.ID, Hold: hold}}
	})
}

// PlanRelease releases held jobs; only root releases an administrator's
// hold.
func PlanRelease(v *fsm.View, ref cluster.JobRef, c Caller) (QueuePlan, error) {
	admin := c.UID == 0
	return eachJob(v, ref, c, "release", func(j *cluster.Job) Proposal {
		p := Proposal{Job: j.ID, Type: fsm.CmdSetHold, Cmd: fsm.SetHold{Job: j.ID}}
		if j.Hold == cluster.HoldAdmin && !admin {
			p.Refused = forbidden(fmt.Errorf("release job %d: %w: it was held by root, and only root may release it", j.ID, cluster.ErrForbidden))
		}
		return p
	})
}

// PlanRequeue requeues running or ended jobs (scontrol requeue; with
// held, requeuehold: held by the user, or by the administrator when root
// asks). requestID is as PlanStartStep's; with a reference to several
// jobs each element's proposal carries its own (ElementRequestID) where
// elementIDs (every server speaks ElementIDsProtocol), else none.
func PlanRequeue(v *fsm.View, ref cluster.JobRef, held bool, requestID string, elementIDs bool, c Caller) (QueuePlan, error) {
	hold := cluster.HoldNone
	if held {
		hold = cluster.HoldUser
		if c.UID == 0 {
			hold = cluster.HoldAdmin
		}
	}
	plan, err := eachJob(v, ref, c, "requeue", func(j *cluster.Job) Proposal {
		return Proposal{Job: j.ID, Type: fsm.CmdRequeueJob, Cmd: fsm.RequeueJob{Job: j.ID, Hold: hold}}
	})
	plan.carryRequestID(requestID, elementIDs, func(cmd any, rid string) any {
		c := cmd.(fsm.RequeueJob)
		c.RequestID = rid
		return c
	})
	return plan, err
}

// eachLiveJob plans one command per job the reference id names, passing
// over an array's finished elements.
func eachLiveJob(v *fsm.View, id string, op opKind, cmd func(*cluster.Job) Proposal) (QueuePlan, error) {
	ref, err := cluster.ParseJobRef(id)
	if err != nil {
		return QueuePlan{}, err
	}
	jobs, err := Resolve(v, ref)
	if err != nil {
		return QueuePlan{}, err
	}
	plan := QueuePlan{ID: uint64(jobs[0].ID), op: op, several: len(jobs) > 1}
	for _, j := range jobs {
		if plan.several && j.State.Terminal() {
			continue
		}
		plan.Proposals = append(plan.Proposals, cmd(j))
	}
	return plan, nil
}

// PlanSetPriority is `scontrol update JobId=N Priority=P`: root sets an
// absolute priority on live jobs (0 returns them to the multifactor
// priority), as Slurm lets only an administrator raise one.
func PlanSetPriority(v *fsm.View, id string, priority int64, c Caller) (QueuePlan, error) {
	if c.UID != 0 {
		return QueuePlan{}, forbidden(fmt.Errorf("set priority of job %s: %w: only root may", id, cluster.ErrForbidden))
	}
	return eachLiveJob(v, id, opPriority, func(j *cluster.Job) Proposal {
		return Proposal{Job: j.ID, Type: fsm.CmdSetJobPriority, Cmd: fsm.SetJobPriority{Job: j.ID, Priority: priority}}
	})
}

// JobUpdate is a `scontrol update JobId=N Field=Value ...` as the request
// gave it: the plain fields, and those the plan checks and converts.
type JobUpdate struct {
	Fields        fsm.JobUpdate // all but the time limits and the dependency
	TimeLimitS    *int64
	TimeLimitAddS *int64
	Dependency    *string // "" drops the dependency
	// RequestID and ElementIDs are as PlanRequeue's requestID and
	// elementIDs.
	RequestID  string
	ElementIDs bool
}

// PlanUpdate is `scontrol update JobId=N Field=Value ...`: the FSM decides
// (fsm.PlanJobUpdate), with Slurm's refusals; the plan checks the time
// limits, parses the dependency and says whether the caller is root.
func PlanUpdate(v *fsm.View, id string, u JobUpdate, c Caller) (QueuePlan, error) {
	f := u.Fields
	if u.TimeLimitS != nil {
		d := time.Duration(*u.TimeLimitS) * time.Second
		if *u.TimeLimitS < 0 || *u.TimeLimitS > int64(math.MaxInt64/time.Second) {
			return QueuePlan{}, invalid(fmt.Errorf("update job %s: %w: time_limit_s %d", id, fsm.ErrUpdateTimeLimit, *u.TimeLimitS))
		}
		f.TimeLimit = &d
	}
	if u.TimeLimitAddS != nil {
		d := time.Duration(*u.TimeLimitAddS) * time.Second
		if d/time.Second != time.Duration(*u.TimeLimitAddS) {
			return QueuePlan{}, invalid(fmt.Errorf("update job %s: %w: time_limit_add_s %d", id, fsm.ErrUpdateTimeLimit, *u.TimeLimitAddS))
		}
		f.TimeLimitAdd = &d
	}
	if u.Dependency != nil {
		if *u.Dependency == "" {
			f.NoDependency = true
		} else {
			d, err := slurm.ParseDependency(*u.Dependency)
			if err != nil {
				return QueuePlan{}, invalid(fmt.Errorf("update job %s: %w: %w", id, fsm.ErrUpdateDependency, err))
			}
			f.Dependency = cluster.DependencyFromSlurm(d)
		}
	}
	plan, err := eachLiveJob(v, id, opUpdate, func(j *cluster.Job) Proposal {
		return Proposal{Job: j.ID, Type: fsm.CmdUpdateJob, Cmd: fsm.UpdateJob{Job: j.ID, UID: c.UID, Admin: c.UID == 0, Fields: f}}
	})
	plan.carryRequestID(u.RequestID, u.ElementIDs, func(cmd any, rid string) any {
		c := cmd.(fsm.UpdateJob)
		c.RequestID = rid
		return c
	})
	return plan, err
}

// PlanSignal records a signal request in a running job (scancel
// --signal), for its owner, root or an operator. requestID is as
// PlanStartStep's.
func PlanSignal(v *fsm.View, id cluster.JobID, signal int, batchOnly bool, requestID string, c Caller) (QueuePlan, error) {
	j, ok := v.Job(id)
	if !ok {
		return QueuePlan{}, notFound(fmt.Errorf("job %d: %w", id, fsm.ErrUnknownJob))
	}
	if err := MayTouch(v.Policy(), "signal", j, c); err != nil {
		return QueuePlan{}, err
	}
	return QueuePlan{ID: uint64(id), op: opSignal, Proposals: []Proposal{{Job: id, Type: fsm.CmdSignalJob,
		Cmd: fsm.SignalJob{Job: id, Signal: signal, BatchOnly: batchOnly, RequestID: requestID}}}}, nil
}

// PlanStartStep starts an srun step for its job's owner (or root): in
// the job's incarnation the caller names, else its current one, its
// tasks dealt over the job's CPUs as Slurm's srun, and holding the GPUs
// and CPUs it asks for unless --overlap, when dealt (every server speaks
// the protocol that records both), else laid out evenly and sharing the
// allocation. requestID, when set, is the client's (scoped) request id the
// FSM deduplicates by; the caller leaves it empty unless every server
// speaks the protocol that knows it (fsm.Needs of a StartStep carrying
// it, through ProtocolGate).
func PlanStartStep(v *fsm.View, id cluster.JobID, incarnation uint64, spec cluster.StepSpec, dealt bool, requestID string, c Caller) (QueuePlan, error) {
	j, ok := v.Job(id)
	if !ok {
		return QueuePlan{}, notFound(fmt.Errorf("job %d: no such job", id))
	}
	if c.UID != 0 && c.UID != j.Spec.UID {
		return QueuePlan{}, forbidden(fmt.Errorf("start a step in job %d: %w: it belongs to %s", id, cluster.ErrForbidden, j.Spec.User))
	}
	if incarnation == 0 {
		incarnation = j.Incarnation // a caller outside the job's environment: its current run
	}
	spec.Dealt = dealt
	if !dealt {
		// A server of an earlier protocol would lay the tasks out
		// evenly and start every step at once, sharing the allocation
		// (as --overlap): the step holds nothing of its own.
		spec.Exclusive, spec.GPUs, spec.GPUsPerNode, spec.Exact, spec.CPUsPerTask = false, 0, 0, false, 0
	}
	return QueuePlan{ID: uint64(id), op: opStartStep, Proposals: []Proposal{{Job: id, Type: fsm.CmdStartStep,
		Cmd: fsm.StartStep{Job: id, Incarnation: incarnation, Spec: spec, RequestID: requestID}}}}, nil
}

// PlanCancelStep cancels step of job id, for its owner, root or an
// operator.
func PlanCancelStep(v *fsm.View, id cluster.JobID, step int, c Caller) (QueuePlan, error) {
	j, ok := v.Job(id)
	if !ok {
		return QueuePlan{}, notFound(fmt.Errorf("job %d: no such job", id))
	}
	if err := MayTouch(v.Policy(), fmt.Sprintf("cancel step %d of", step), j, c); err != nil {
		return QueuePlan{}, err
	}
	return QueuePlan{ID: uint64(id), op: opCancelStep, Proposals: []Proposal{{Job: id, Type: fsm.CmdCancelStep,
		Cmd: fsm.CancelStep{Job: id, Step: step}}}}, nil
}

// Refusals, marked with their kind for the HTTP API's status table.
func invalid(err error) error   { return cluster.Mark(cluster.ErrInvalid, err) }
func forbidden(err error) error { return cluster.Mark(cluster.ErrForbidden, err) }
func notFound(err error) error  { return cluster.Mark(cluster.ErrNotFound, err) }
func conflict(err error) error  { return cluster.Mark(cluster.ErrConflict, err) }
