//go:build !failpoint_diverge

package agent

import "context"

// failpointDiverge is a fault injected on purpose, for the test of a
// diverged replica's refusal to lead (test/chaos TestDivergedReplicaDoesNotLead):
// no command can make one replica alone fail to apply an entry, so a build
// with -tags failpoint_diverge marks its replica diverged once the file
// failpointDivergeFile appears in its data dir. Without the tag it is the
// constant false and the compiler drops the branch.
const failpointDiverge = false

// failpointDivergeLoop is never called without the tag.
func (a *Agent) failpointDivergeLoop(context.Context) {}
