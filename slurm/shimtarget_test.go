package slurm

import (
	"os"
	"path/filepath"
	"testing"
)

// TestShimTarget: links point at shoal-slurm beside the running binary
// when it is an executable file there, else at the binary itself.
func TestShimTarget(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "shoal")
	shim := filepath.Join(dir, ShimBinary)
	if got := ShimTarget(self); got != self {
		t.Errorf("no %s: ShimTarget = %s, want %s", ShimBinary, got, self)
	}
	if err := os.WriteFile(shim, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ShimTarget(self); got != self {
		t.Errorf("%s not executable: ShimTarget = %s, want %s", ShimBinary, got, self)
	}
	if err := os.Chmod(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := ShimTarget(self); got != shim {
		t.Errorf("ShimTarget = %s, want %s", got, shim)
	}
	if err := os.Remove(shim); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := ShimTarget(self); got != self {
		t.Errorf("%s a directory: ShimTarget = %s, want %s", ShimBinary, got, self)
	}
}
