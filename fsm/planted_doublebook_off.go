//go:build !planted_doublebook

package fsm

// plantedDoubleBook is a bug planted on purpose, for the chaos checker's
// own test (test/chaos TestPlantedBugsAreCaught): a checker that has never
// failed proves nothing. Built with -tags planted_doublebook, the resource
// index says no GPU is held, so Allocate's double-booking check
// (checkDecision) and the index's own guard (hold) accept a decision that
// puts two jobs on one GPU (DESIGN invariant 1). Without the tag it is the
// constant false and the compiler drops the planted branch.
const plantedDoubleBook = false
