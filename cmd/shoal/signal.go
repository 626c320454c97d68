package main

import (
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// jobSignal is a parsed --signal=[B:]SIG[@SECONDS] as the job records it,
// or nil when none was given. Shoal keeps seconds (Slurm's resolution is
// about a minute).
func jobSignal(s *slurm.Signal) *cluster.JobSignal {
	if s == nil {
		return nil
	}
	return &cluster.JobSignal{Number: s.Number, Before: time.Duration(s.Seconds) * time.Second, BatchOnly: s.BatchOnly}
}
