package stepd

import (
	"context"
	"io"
	"log/slog"

	"github.com/shoal-sched/shoal/api"
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
	f, err := pmix.NewFencer(job, dial, log)
	if err != nil {
		return nil, err
	}
	srv, err := pmix.Start(pmix.Config{Job: job, UID: l.Spec.UID, GID: l.Spec.GID, Fencer: f, Log: log})
	if err != nil {
		f.Close()
		return nil, err
	}
	return srv, nil
}
