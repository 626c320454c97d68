package worker

import (
	"testing"

	"github.com/shoal-sched/shoal/internal/purity"
)

// TestPurity keeps the worker's decisions pure (STYLE.md section 1): no
// clock, no I/O, no goroutines; the domain types and the task key
// key are all it may import from outside the standard library.
func TestPurity(t *testing.T) {
	allowed := []string{"github.com/shoal-sched/shoal/cluster", "github.com/shoal-sched/shoal/exec/task", "github.com/shoal-sched/shoal/fsm"}
	bad, files, err := purity.Check(".", allowed)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if files < 2 {
		t.Fatalf("checked %d files; want the whole package", files)
	}
}
