package slurmcli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// immediateExpired is --immediate's decision: the job still waits once
// the time it was given since its submission has passed. Pure.
func immediateExpired(limit time.Duration, submitted, now time.Time, state string) bool {
	return limit > 0 && now.Sub(submitted) >= limit && (state == "PENDING" || state == "REQUEUED")
}

// giveUpImmediate cancels job id and says so as Slurm's srun and salloc do
// when --immediate runs out (ESLURM_NODES_BUSY's words); it returns their
// exit code.
func giveUpImmediate(c *api.Client, cmd string, id uint64, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.CancelRef(ctx, strconv.FormatUint(id, 10)); err != nil {
		fmt.Fprintf(stderr, "%s: error: cancel job %d: %v\n", cmd, id, err)
	}
	fmt.Fprintf(stderr, "%s: error: Unable to allocate resources: Requested nodes are busy\n", cmd)
	return 1
}
