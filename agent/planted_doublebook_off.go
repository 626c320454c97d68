//go:build !planted_doublebook

package agent

import "github.com/shoal-sched/shoal/cluster"

// plantedDoubleBook is a bug planted on purpose, for the chaos checker's
// own test (test/chaos TestPlantedBugsAreCaught): a checker that has never
// failed proves nothing. Built with -tags planted_doublebook, the leader's
// placement reads a view one allocation behind (the newest allocation's
// GPUs look free), and the FSM's double-booking check is off too
// (fsm/planted_doublebook_off.go), so the leader gives GPUs still held to
// another job (DESIGN invariant 1). Without the tag it is the constant
// false and the compiler drops the planted branch.
const plantedDoubleBook = false

// plantedHideNewest is never called without the tag.
func plantedHideNewest(jobs []*cluster.Job) []*cluster.Job { return jobs }
