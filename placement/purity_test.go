package placement

import (
	"testing"

	"github.com/shoal-sched/shoal/internal/purity"
)

// TestPurity keeps placement pure (DESIGN: pure functions, no I/O, no
// clock, no goroutines; now is an argument) and importing nothing outside
// the standard library but the domain types.
func TestPurity(t *testing.T) {
	purity.Test(t, 3, "github.com/shoal-sched/shoal/cluster")
}
