package placement

import (
	"testing"

	"github.com/shoal-sched/shoal/internal/purity"
)

// TestPurity keeps placement pure (DESIGN: pure functions, no I/O, no
// clock, no goroutines; now is an argument) and importing nothing outside
// the standard library but the domain types.
func TestPurity(t *testing.T) {
	bad, files, err := purity.Check(".", []string{"github.com/shoal-sched/shoal/cluster"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if files < 3 {
		t.Fatalf("checked %d files; want every non-test file of the package", files)
	}
}
