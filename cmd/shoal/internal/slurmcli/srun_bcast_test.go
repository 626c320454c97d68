package slurmcli

import (
	"io"
	"strings"
	"testing"
)

// TestSrunBcastOutside: srun --pty --bcast outside an allocation is
// refused before any connection: its job's task starts as soon as it has
// nodes (without --pty, srun runs its command as a step of its own
// allocation: TestSrunOwnStep).
func TestSrunBcastOutside(t *testing.T) {
	connect := outsideJob(t)
	for _, args := range [][]string{{"--bcast=/tmp/x", "--pty", "prog"}} {
		code, err := Srun(t.Context(), connect, args, io.Discard, io.Discard)
		if code != 1 || err == nil || !strings.Contains(err.Error(), "--bcast: not supported by Shoal for srun --pty outside an allocation") {
			t.Errorf("%v: %d, %v; want the refusal", args, code, err)
		}
	}
}
