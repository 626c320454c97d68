package fsm

import (
	"testing"

	"github.com/shoal-sched/shoal/internal/purity"
)

// TestPurity keeps the FSM a pure function of the log (DESIGN invariant 5:
// replicas agree): no clock, no I/O or shared randomness, no goroutines,
// and only msgpack, the domain types and wire from outside the standard
// library — never raft or memberlist.
func TestPurity(t *testing.T) {
	purity.Test(t, 5, "github.com/vmihailenco/msgpack/v5", "github.com/shoal-sched/shoal/cluster", "github.com/shoal-sched/shoal/wire")
}
