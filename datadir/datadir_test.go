package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDataDir(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, "n1")
	if err != nil {
		t.Fatal(err)
	}
	// A second agent on the same dir is refused while the first holds it.
	if _, err := Open(dir, "n1"); !errors.Is(err, ErrLocked) {
		t.Errorf("second open = %v; want ErrLocked", err)
	}
	d.Close()
	// Another name on the same dir is refused even when unlocked.
	if _, err := Open(dir, "n2"); err == nil || !strings.Contains(err.Error(), `belongs to node "n1"`) {
		t.Errorf("open as n2 = %v; want it refused naming n1", err)
	}
	d2, err := Open(dir, "n1")
	if err != nil {
		t.Fatalf("reopen as n1: %v", err)
	}
	d2.Close()
	// A path under a regular file cannot be a data dir.
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "sub"), "n1"); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("open under a file = %v; want a --data-dir error", err)
	}
}
