package stepd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"syscall"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/exec/pmi2"
	"github.com/shoal-sched/shoal/exec/pmix"
)

// startPMIx starts the PMIx server of a step's ranks on this node (srun
// --mpi=pmix): the namespace of the whole step, and the fences with the
// step's other nodes, which reach the first node's supervisor through
// their agents (see package pmix).
func (s *supervisor) startPMIx(log *slog.Logger) (*pmix.Server, error) {
	l := s.cfg.Launch
	job, err := pmix.JobOf(l)
	if err != nil {
		return nil, err
	}
	f, err := s.fencer(job, log)
	if err != nil {
		return nil, err
	}
	srv, err := pmix.Start(pmix.Config{Job: job, UID: l.Spec.UID, GID: l.Spec.GID, Fencer: f, Log: log,
		OnFail: func(err error) { s.pmixFailed(log, err) }})
	if err != nil {
		f.Close()
		return nil, err
	}
	return srv, nil
}

// startPMI2 starts the PMI-2 (and PMI-1) server of a step's ranks on
// this node (srun --mpi=pmi2), whose fences travel as PMIx's do.
func (s *supervisor) startPMI2(log *slog.Logger) (*pmi2.Server, error) {
	job, err := pmi2.JobOf(s.cfg.Launch)
	if err != nil {
		return nil, err
	}
	f, err := s.fencer(job.Job, log)
	if err != nil {
		return nil, err
	}
	srv, err := pmi2.Start(pmi2.Config{Job: job, Fencer: f, Log: log,
		OnFail: func(err error) { s.pmixFailed(log, err) }})
	if err != nil {
		f.Close()
		return nil, err
	}
	return srv, nil
}

// fencer is the fence exchange of job's node with the step's other
// nodes, which reach the first node's supervisor through their agents.
func (s *supervisor) fencer(job pmix.Job, log *slog.Logger) (pmix.Fencer, error) {
	l := s.cfg.Launch
	var dial pmix.Dial
	if sock := s.cfg.AgentSocket; sock != "" {
		step := s.key.Step
		dial = func(ctx context.Context) (io.ReadWriteCloser, error) {
			c, err := api.NewClient("unix://" + sock)
			if err != nil {
				return nil, err
			}
			return c.AttachPMIx(ctx, uint64(l.Job), step)
		}
	}
	return pmix.NewFencer(job, dial, log)
}

// tellRanks writes why the ranks could not start to rank's stderr, where
// srun shows it (as slurmstepd's errors reach the tasks' stderr).
func (s *supervisor) tellRanks(rank int, cred *syscall.Credential, why error) {
	stdout, stderr, err := s.openOutput(rank, cred)
	if err != nil {
		return
	}
	fmt.Fprintf(stderr, "shoal stepd: error: %s: %v\n", s.cfg.NodeName, why)
	stdout.Close()
	if stderr != stdout {
		stderr.Close()
	}
}

// pmixFailed kills this node's ranks of a PMIx or PMI-2 step whose
// fences failed or one of whose ranks aborted: they cannot go on, and the step fails
// with their deaths. Ranks not recorded yet are killed as run records
// them (pmixKill).
func (s *supervisor) pmixFailed(log *slog.Logger, err error) {
	s.mu.Lock()
	first := !s.pmixKill
	s.pmixKill = true
	pgids := s.pgids
	s.mu.Unlock()
	if first {
		log.Error("PMI server failed (PMIx or PMI-2): killing the step's ranks on this node", "err", err)
	}
	if len(pgids) > 0 {
		_ = signalGroups(pgids, syscall.SIGKILL, false)
	}
}
