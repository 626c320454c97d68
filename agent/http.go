package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/ui"
)

// forwardTimeout bounds a request this agent passes on to another.
const forwardTimeout = httpapi.ForwardTimeout

// routes is the API's route table (httpapi.Server.Routes) with this
// agent's own handlers.
func (a *Agent) routes() http.Handler {
	return a.http.Routes(httpapi.Handlers{Metrics: a.core.metrics.Handler(), UI: ui.Handler()})
}

// errCatchingUp answers reads while the replica is behind the cluster.
var errCatchingUp = errors.New("this agent's replica is catching up with the cluster; retry in a moment")

// submitSpec checks a submit's request for who and returns the spec it
// asks for, and warnings for the caller.
func (b apiBackend) submitSpec(req api.SubmitRequest, who cluster.Identity) (cluster.Spec, []string, error) {
	if err := httpapi.CheckSubmitRequest(req); err != nil {
		return cluster.Spec{}, nil, err
	}
	if req.GPUsTotal > 0 {
		if err := b.lead.spreadGPUs(&req); err != nil {
			return cluster.Spec{}, nil, err
		}
	}
	spec, err := httpapi.SpecOf(req, who)
	if err != nil {
		return cluster.Spec{}, nil, err
	}
	warnings, err := leader.QueueFields(b.state.View(), spec, leader.Caller{Identity: who})
	if err != nil {
		return cluster.Spec{}, nil, err
	}
	return spec, warnings, nil
}

// Submit queues a job for who (leader).
func (b apiBackend) Submit(ctx context.Context, req api.SubmitRequest, who cluster.Identity) (api.SubmitResponse, error) {
	spec, warnings, err := b.submitSpec(req, who)
	if err != nil {
		return api.SubmitResponse{}, err
	}
	if plantedEarlyAck { // a planted bug, test builds only: see planted_earlyack_off.go
		return b.lead.plantedAckEarly(httpapi.ScopedRequestID(who, req.RequestID), spec), nil
	}
	res, err := b.lead.leaderSubmit(ctx, httpapi.ScopedRequestID(who, req.RequestID), spec)
	if err != nil {
		return api.SubmitResponse{}, err
	}
	return api.SubmitResponse{ID: uint64(res.JobID), Duplicate: res.Duplicate, Warnings: warnings}, nil
}

// TestOnly is sbatch --test-only (leader).
func (b apiBackend) TestOnly(req api.SubmitRequest, who cluster.Identity) (api.TestOnlyResponse, error) {
	spec, _, err := b.submitSpec(req, who)
	if err != nil {
		return api.TestOnlyResponse{}, err
	}
	return b.lead.leaderTestOnly(spec)
}

// Leave is `shoal leave`: this agent stops as SIGTERM stops it (with
// DrainWaitS set, draining for that long first). Only root or the agent's
// own user may ask.
func (b apiBackend) Leave(req api.LeaveRequest, who cluster.Identity) (api.LeaveResponse, error) {
	if who.UID != 0 && who.UID != os.Getuid() {
		return api.LeaveResponse{}, forbidden(fmt.Errorf("leave: %w: only root or the agent's user may stop it", ErrForbidden))
	}
	wait := time.Duration(-1)
	if req.DrainWaitS != nil {
		if *req.DrainWaitS < 0 {
			return api.LeaveResponse{}, invalid(fmt.Errorf("drain_wait_s %d: want 0 or more", *req.DrainWaitS))
		}
		wait = time.Duration(*req.DrainWaitS) * time.Second
	}
	select {
	case b.leave <- wait:
	default: // already leaving
	}
	return api.LeaveResponse{Node: b.cfg.Name, PID: os.Getpid()}, nil
}

// Job is one job, if who may see it: by its id, or an array element as
// N_TASK (leader.ShowJob).
func (b apiBackend) Job(ref cluster.JobRef, who cluster.Identity) (httpapi.JobRecord, error) {
	v := b.state.View()
	j, shortage, err := leader.ShowJob(v, ref, viewerOf(v.Policy(), who))
	if err != nil {
		return httpapi.JobRecord{}, err
	}
	return httpapi.JobRecord{Job: j, Index: v.Index, ReasonDetail: shortage}, nil
}

// raftRoles maps server IDs to leader, voter or nonvoter.
func (b apiBackend) raftRoles(ctx context.Context) map[string]string {
	roles := map[string]string{}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	servers, err := b.raft.Servers(ctx)
	if err != nil {
		return roles
	}
	leader, _ := b.raft.Leader()
	for _, s := range servers {
		roles[s.ID] = string(s.Suffrage)
		if s.ID == leader {
			roles[s.ID] = "leader"
		}
	}
	return roles
}
