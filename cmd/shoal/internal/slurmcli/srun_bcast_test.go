package slurmcli

import (
	"io"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// TestSrunBcastOutside: srun --bcast outside an allocation is refused
// before any connection: its job's tasks start as soon as it has nodes.
func TestSrunBcastOutside(t *testing.T) {
	for _, env := range []string{"SLURM_JOB_ID", "SHOAL_JOB_ID"} {
		t.Setenv(env, "")
	}
	connect := func() (*api.Client, error) {
		t.Fatal("connected")
		return nil, nil
	}
	for _, args := range [][]string{{"--bcast", "prog"}, {"--bcast=/tmp/x", "--pty", "prog"}} {
		code, err := Srun(t.Context(), connect, args, io.Discard, io.Discard)
		if code != 1 || err == nil || !strings.Contains(err.Error(), "--bcast: not supported by Shoal for srun outside an allocation") {
			t.Errorf("%v: %d, %v; want the refusal", args, code, err)
		}
	}
}
