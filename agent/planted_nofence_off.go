//go:build !planted_nofence

package agent

// plantedNoFence is a bug planted on purpose, for the chaos checker's own
// test (test/chaos TestPlantedBugsAreCaught): a checker that has never
// failed proves nothing. Built with -tags planted_nofence, a node whose
// lease expired keeps its ranks running instead of stopping them, so a
// node cut off from the leader keeps running work the majority has taken
// back and placed again (DESIGN invariants 1 and 3). Without the tag it
// is the constant false and the compiler drops the planted branch.
const plantedNoFence = false
