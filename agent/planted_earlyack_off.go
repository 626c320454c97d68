//go:build !planted_earlyack

package agent

import (
	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// plantedEarlyAck is a bug planted on purpose, for the chaos checker's own
// test (test/chaos TestPlantedBugsAreCaught): a checker that has never
// failed proves nothing. Built with -tags planted_earlyack, the leader
// answers a submit at once with the job id it expects the entry to get
// and commits it afterwards, in the background: an acknowledged submit can
// be lost (the leader loses its quorum or dies first) or answered with
// another request's job (two submits in flight expect the same id) —
// DESIGN invariant 2. Without the tag it is the constant false and the
// compiler drops the planted branch.
const plantedEarlyAck = false

// plantedAckEarly is never called without the tag.
func (l *leaderSide) plantedAckEarly(string, cluster.Spec) api.SubmitResponse {
	return api.SubmitResponse{}
}
