package worker

import (
	"testing"

	"github.com/shoal-sched/shoal/internal/purity"
)

// TestPurity keeps the worker's decisions pure (STYLE.md section 1): no
// clock, no I/O, no goroutines; the domain types and the task key
// key are all it may import from outside the standard library.
func TestPurity(t *testing.T) {
	purity.Test(t, 2, "github.com/shoal-sched/shoal/cluster", "github.com/shoal-sched/shoal/exec/task", "github.com/shoal-sched/shoal/fsm")
}
