package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Queue is the job queue: submits (and sbatch --test-only), the changes
// to jobs the leader carries out for a caller, and the jobs a caller may
// see. Writes reach it only through AcceptWrite (proven caller, decoded
// body, a follower forwards) and the leader decides who may do what;
// reads come once the replica is readable (WaitIndex), each from one
// consistent view.
type Queue interface {
	// Submit queues a job; TestOnly checks it as a submit would and
	// says when and where it could start, without queueing it.
	Submit(ctx context.Context, req api.SubmitRequest, who cluster.Identity) (api.SubmitResponse, error)
	TestOnly(req api.SubmitRequest, who cluster.Identity) (api.TestOnlyResponse, error)
	// Cancel, Hold, Release and Requeue act on every job ref names (an
	// array's live elements for its bare id).
	Cancel(ctx context.Context, ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error)
	Hold(ctx context.Context, ref cluster.JobRef, userHold bool, who cluster.Identity) (api.JobsChanged, error)
	Release(ctx context.Context, ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error)
	Requeue(ctx context.Context, ref cluster.JobRef, hold bool, requestID string, who cluster.Identity) (api.JobsChanged, error)
	// SetPriority and Update take the job reference as given: the leader
	// refuses the caller or the fields before it parses the reference.
	SetPriority(ctx context.Context, id string, req api.PriorityRequest, who cluster.Identity) (api.JobsChanged, error)
	Update(ctx context.Context, id string, req api.UpdateRequest, who cluster.Identity) (api.JobsChanged, error)
	// StartStep starts an srun step in job id and returns its step id.
	StartStep(ctx context.Context, id cluster.JobID, req api.StepRequest, who cluster.Identity) (api.StepResponse, error)
	CancelStep(ctx context.Context, id cluster.JobID, step int, who cluster.Identity) error
	// Signal asks the nodes running job id to signal its tasks.
	Signal(ctx context.Context, id cluster.JobID, req api.SignalRequest, who cluster.Identity) error
	// Jobs are the jobs who may see: the live ones, or with all the
	// finished and archived ones too (sacct); index is the view's.
	Jobs(who cluster.Identity, all bool) (jobs []*cluster.Job, index uint64)
	// Job is the job ref names (one array element at most), if who may
	// see it.
	Job(ref cluster.JobRef, who cluster.Identity) (JobRecord, error)
}

// JobRecord is one job with what its rendering needs.
type JobRecord struct {
	Job *cluster.Job
	// ReasonDetail says what a job pending for resources lacks.
	ReasonDetail string
	Index        uint64
}

// PathJobID is the {id} of a path that names one job.
func PathJobID(r *http.Request) (cluster.JobID, error) {
	id, err := slurm.ParseJobID(r.PathValue("id"))
	if err != nil {
		return 0, cluster.Mark(cluster.ErrInvalid, err)
	}
	return cluster.JobID(id), nil
}

// HandleSubmit is POST /v1/jobs (?test_only=1: sbatch --test-only).
func (s *Server) HandleSubmit(w http.ResponseWriter, r *http.Request) {
	var req api.SubmitRequest
	who, here := s.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	var out any
	var err error
	if r.URL.Query().Get("test_only") != "" {
		out, err = s.Queue.TestOnly(req, who.Who())
	} else {
		out, err = s.Queue.Submit(r.Context(), req, who.Who())
	}
	s.writeResult(w, out, err)
}

// writeResult answers a write the leader carried out: its error, or out
// at the replica's index.
func (s *Server) writeResult(w http.ResponseWriter, out any, err error) {
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, s.Cluster.Index(), out)
}

// bodyWrite is the front of a write whose body is a Req: AcceptWrite
// (proven caller, decoded body, a follower forwards), then do for the
// caller, answered at the replica's index.
func bodyWrite[Req, Resp any](s *Server, w http.ResponseWriter, r *http.Request, do func(context.Context, Req, cluster.Identity) (Resp, error)) {
	var req Req
	who, here := s.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	out, err := do(r.Context(), req, who.Who())
	s.writeResult(w, out, err)
}

// noAnswer makes a write that returns only an error answer {}.
func noAnswer[Req any](do func(context.Context, Req, cluster.Identity) error) func(context.Context, Req, cluster.Identity) (struct{}, error) {
	return func(ctx context.Context, req Req, who cluster.Identity) (struct{}, error) {
		return struct{}{}, do(ctx, req, who)
	}
}

// readableRead is the front of a read of the replica: once it is readable
// (WaitReadable), read's answer at the index read gives.
func readableRead[T any](s *Server, w http.ResponseWriter, r *http.Request, read func() (T, uint64)) {
	if err := s.WaitReadable(r.Context()); err != nil {
		WriteError(w, err)
		return
	}
	out, index := read()
	WriteJSON(w, http.StatusOK, index, out)
}

// HandleCancel is DELETE /v1/jobs/{id} and POST /v1/jobs/{id}/cancel: a
// job, an array element, or every live element of an array (its bare id,
// as scancel does).
func (s *Server) HandleCancel(w http.ResponseWriter, r *http.Request) {
	ref, err := cluster.ParseJobRef(r.PathValue("id"))
	if err != nil {
		WriteError(w, err)
		return
	}
	who, here := s.AcceptWrite(w, r, nil)
	if !here {
		return
	}
	out, err := s.Queue.Cancel(r.Context(), ref, who.Who())
	s.writeResult(w, out, err)
}

// jobsWrite is the front of a write to the jobs the path's {id} names.
func (s *Server) jobsWrite(w http.ResponseWriter, r *http.Request, do func(context.Context, cluster.JobRef, cluster.Identity) (api.JobsChanged, error)) {
	who, here := s.AcceptWrite(w, r, nil)
	if !here {
		return
	}
	ref, err := cluster.ParseJobRef(r.PathValue("id"))
	if err != nil {
		WriteError(w, err)
		return
	}
	out, err := do(r.Context(), ref, who.Who())
	s.writeResult(w, out, err)
}

// HandleHold is POST /v1/jobs/{id}/hold (scontrol hold; ?kind=user:
// uhold).
func (s *Server) HandleHold(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("kind") == "user"
	s.jobsWrite(w, r, func(ctx context.Context, ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error) {
		return s.Queue.Hold(ctx, ref, user, who)
	})
}

// HandleRelease is POST /v1/jobs/{id}/release.
func (s *Server) HandleRelease(w http.ResponseWriter, r *http.Request) {
	s.jobsWrite(w, r, s.Queue.Release)
}

// HandleRequeue is POST /v1/jobs/{id}/requeue (?hold=1: requeuehold;
// ?request_id=R: the client's request id).
func (s *Server) HandleRequeue(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	hold, rid := q.Get("hold") != "", q.Get("request_id")
	s.jobsWrite(w, withIDWrite(r, RequeueWrite), func(ctx context.Context, ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error) {
		return s.Queue.Requeue(ctx, ref, hold, rid, who)
	})
}

// HandleSetPriority is POST /v1/jobs/{id}/priority.
func (s *Server) HandleSetPriority(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, func(ctx context.Context, req api.PriorityRequest, who cluster.Identity) (api.JobsChanged, error) {
		return s.Queue.SetPriority(ctx, r.PathValue("id"), req, who)
	})
}

// HandleUpdate is POST /v1/jobs/{id}/update (scontrol update JobId=).
func (s *Server) HandleUpdate(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, withIDWrite(r, UpdateWrite), func(ctx context.Context, req api.UpdateRequest, who cluster.Identity) (api.JobsChanged, error) {
		return s.Queue.Update(ctx, r.PathValue("id"), req, who)
	})
}

// HandleStartStep is POST /v1/jobs/{id}/steps.
func (s *Server) HandleStartStep(w http.ResponseWriter, r *http.Request) {
	id, err := PathJobID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	bodyWrite(s, w, withIDWrite(r, StepWrite), func(ctx context.Context, req api.StepRequest, who cluster.Identity) (api.StepResponse, error) {
		return s.Queue.StartStep(ctx, id, req, who)
	})
}

// HandleCancelStep is POST /v1/jobs/{id}/steps/{step}/cancel.
func (s *Server) HandleCancelStep(w http.ResponseWriter, r *http.Request) {
	id, err := PathJobID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	step, err := strconv.Atoi(r.PathValue("step"))
	if err != nil || step < 0 {
		WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("step %q: want a step id (0, 1, ...)", r.PathValue("step"))))
		return
	}
	who, here := s.AcceptWrite(w, r, nil)
	if !here {
		return
	}
	s.writeResult(w, struct{}{}, s.Queue.CancelStep(r.Context(), id, step, who.Who()))
}

// HandleSignal is POST /v1/jobs/{id}/signal: a signal to a running job's
// tasks without stopping them (scancel --signal).
func (s *Server) HandleSignal(w http.ResponseWriter, r *http.Request) {
	id, err := PathJobID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	bodyWrite(s, w, withIDWrite(r, SignalWrite), func(ctx context.Context, req api.SignalRequest, who cluster.Identity) (struct{}, error) {
		return struct{}{}, s.Queue.Signal(ctx, id, req, who)
	})
}

// HandleJob is GET /v1/jobs/{id}: one job, by its id or an array element
// as N_TASK; a blocking read (?index=&wait=).
func (s *Server) HandleJob(w http.ResponseWriter, r *http.Request) {
	ref, err := cluster.ParseJobRef(r.PathValue("id"))
	if err != nil {
		WriteError(w, err)
		return
	}
	if len(ref.Tasks) > 1 {
		WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("job id %q: names several array elements, want one", ref.Raw)))
		return
	}
	if err := s.WaitIndex(r); err != nil {
		WriteError(w, err)
		return
	}
	rec, err := s.Queue.Job(ref, CallerOf(r).Who())
	if err != nil {
		WriteError(w, err)
		return
	}
	out := JobOf(rec.Job)
	out.ReasonDetail = rec.ReasonDetail
	WriteJSON(w, http.StatusOK, rec.Index, out)
}

// HandleJobs is GET /v1/jobs[?all=1]: a blocking query.
func (s *Server) HandleJobs(w http.ResponseWriter, r *http.Request) {
	if err := s.WaitIndex(r); err != nil {
		WriteError(w, err)
		return
	}
	jobs, index := s.Queue.Jobs(CallerOf(r).Who(), r.URL.Query().Get("all") != "")
	out := []api.Job{}
	for _, j := range jobs {
		out = append(out, JobOf(j))
	}
	WriteJSON(w, http.StatusOK, index, out)
}
