package main

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLinksNoAgent: shoal-slurm starts fast because it links none of the
// agent's packages; an import that drags one in shows here, by name,
// rather than as a slower sbatch.
func TestLinksNoAgent(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	heavy := []string{
		"github.com/prometheus/client_golang/prometheus",
		"github.com/hashicorp/raft",
		"github.com/hashicorp/memberlist",
		"gonum.org/v1/plot",
		"github.com/spf13/cobra",
		"github.com/NVIDIA/go-nvml/pkg/nvml",
		"github.com/shoal-sched/shoal/agent",
		"github.com/shoal-sched/shoal/fsm",
		"github.com/shoal-sched/shoal/metrics",
	}
	for _, h := range heavy {
		if slices.Contains(deps, h) {
			t.Errorf("shoal-slurm links %s", h)
		}
	}
	if !slices.Contains(deps, "github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli") {
		t.Errorf("go list -deps: no slurmcli among %d packages; the list is not this binary's", len(deps))
	}
}

// TestRunUsage: under its own name it wants a Slurm command first.
func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		code int
	}{
		{[]string{"shoal-slurm"}, 1},
		{[]string{"shoal-slurm", "--help"}, 0},
		{[]string{"shoal-slurm", "sattach"}, 1},
		{[]string{"shoal-slurm", "--data-dir"}, 1},
		{[]string{"shoal-slurm", "--data-dir", "/nonexistent", "sbatch", "--version"}, 0},
		{[]string{"/opt/shims/sbatch", "--usage"}, 0},
	} {
		if got := run(context.Background(), tc.argv); got != tc.code {
			t.Errorf("run(%q) = %d, want %d", tc.argv, got, tc.code)
		}
	}
}
