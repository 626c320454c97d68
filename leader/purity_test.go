package leader

import (
	"testing"

	"github.com/shoal-sched/shoal/internal/purity"
)

// TestPurity keeps the leader's decisions pure (STYLE.md section 1): no
// clock, no I/O, no goroutines; only the domain types, the FSM's read
// view and placement from outside the standard library.
func TestPurity(t *testing.T) {
	purity.Test(t, 4, "github.com/shoal-sched/shoal/cluster", "github.com/shoal-sched/shoal/fsm", "github.com/shoal-sched/shoal/placement", "github.com/shoal-sched/shoal/slurm")
}
