package leader

import (
	"testing"

	"github.com/shoal-sched/shoal/internal/purity"
)

// TestPurity keeps the leader's decisions pure (STYLE.md section 1): no
// clock, no I/O, no goroutines; only the domain types, the FSM's read
// view and placement from outside the standard library.
func TestPurity(t *testing.T) {
	allowed := []string{"github.com/shoal-sched/shoal/cluster", "github.com/shoal-sched/shoal/fsm", "github.com/shoal-sched/shoal/placement", "github.com/shoal-sched/shoal/slurm"}
	bad, files, err := purity.Check(".", allowed)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if files < 4 {
		t.Fatalf("checked %d files; want the whole package", files)
	}
}
