package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestStartCPUProfile: unset, nothing happens; set, the agent's profile
// lands in DIR/<node>.cpu.pprof and is a profile pprof can read (gzip).
func TestStartCPUProfile(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	stop, err := startCPUProfile("", "n1", log)
	if err != nil {
		t.Fatalf("startCPUProfile with no dir: %v", err)
	}
	stop()

	dir := t.TempDir()
	stop, err = startCPUProfile(dir, "n1", log)
	if err != nil {
		t.Fatalf("startCPUProfile(%s): %v", dir, err)
	}
	stop()
	b, err := os.ReadFile(filepath.Join(dir, "n1.cpu.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("n1.cpu.pprof: %d bytes, not a gzip'd profile", len(b))
	}

	if _, err := startCPUProfile(filepath.Join(dir, "missing"), "n1", log); err == nil {
		t.Errorf("startCPUProfile into a missing directory: no error")
	}
}
