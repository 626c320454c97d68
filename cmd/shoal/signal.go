package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
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

// parseSignalName parses the signal of scancel --signal and shoal cancel
// --signal: a name with or without SIG, in any case, or a number 1-64.
func parseSignalName(flag, s string) (int, error) {
	if strings.ContainsAny(s, ":@") {
		return 0, fmt.Errorf("%s %q: want a signal name (USR1, SIGTERM) or number (1-64)", flag, s)
	}
	sig, err := slurm.ParseSignal(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want a signal name (USR1, SIGTERM) or number (1-64)", flag, s)
	}
	return sig.Number, nil
}

// scancelSignal sends scancel --signal to one target: a whole job (steps
// and array elements are refused: the request goes to a job's tasks).
func scancelSignal(ctx context.Context, c *api.Client, t scancelTarget, sig api.SignalRequest) error {
	switch {
	case t.step >= 0:
		return slurmErrorf("Invalid job id %s: signalling one step is not supported by Shoal yet; signal the job", t.arg)
	case strings.Contains(t.arg, "_"):
		return slurmErrorf("Invalid job id %s: signalling array elements is not supported by Shoal yet; signal the element's own job id", t.arg)
	}
	return c.Signal(ctx, t.job, sig)
}
