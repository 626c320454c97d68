package slurmcli

import (
	"testing"
	"time"
)

func TestImmediateExpired(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		limit time.Duration
		after time.Duration
		state string
		want  bool
	}{
		{0, time.Hour, "PENDING", false}, // no --immediate: wait
		{time.Second, 500 * time.Millisecond, "PENDING", false},
		{time.Second, time.Second, "PENDING", true},
		{time.Second, 2 * time.Second, "REQUEUED", true},
		{time.Second, 2 * time.Second, "RUNNING", false}, // it started
		{5 * time.Second, 2 * time.Second, "PENDING", false},
	} {
		if got := immediateExpired(tc.limit, t0, t0.Add(tc.after), tc.state); got != tc.want {
			t.Errorf("immediateExpired(%v, after %v, %s) = %v, want %v", tc.limit, tc.after, tc.state, got, tc.want)
		}
	}
}
