package main

import (
	"testing"

	"github.com/shoal-sched/shoal/slurm"
)

// TestShimNames: the binary answers to every command of the one list
// (slurm.Commands), under any directory, and to nothing else.
func TestShimNames(t *testing.T) {
	for _, c := range slurm.Commands {
		if name, ok := isShim("/opt/shims/" + string(c)); !ok || name != string(c) {
			t.Errorf("isShim(%s) = %q, %v; want it played", c, name, ok)
		}
	}
	for _, n := range []string{"shoal", "sbatchx", "sattach", ""} {
		if _, ok := isShim(n); ok {
			t.Errorf("isShim(%q): played; want not", n)
		}
	}
}
