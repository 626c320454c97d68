//go:build failpoint_diverge

package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// failpointDiverge: see failpoint_diverge_off.go. Test builds only.
const failpointDiverge = true

// failpointDivergeFile is the file whose appearance diverges the replica.
const failpointDivergeFile = "failpoint-diverge"

// failpointDivergeLoop waits for failpointDivergeFile and then marks the
// replica diverged: applying an entry at an index already applied is the
// one refusal the FSM has for a log that went back.
func (a *Agent) failpointDivergeLoop(ctx context.Context) {
	path := filepath.Join(a.core.cfg.DataDir, failpointDivergeFile)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		res := a.core.state.Apply(a.core.state.Index(), nil)
		a.core.log.Error("failpoint: replica diverged on purpose", "err", res.Err)
		return
	}
}
