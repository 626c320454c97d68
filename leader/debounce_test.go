package leader

import (
	"testing"
	"time"
)

// TestDebounceWait: passes start at most every ScheduleDebounce; a change
// after a quiet spell waits for nothing.
func TestDebounceWait(t *testing.T) {
	last := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		since time.Duration // from the last pass's start to the change
		want  time.Duration
	}{
		{0, ScheduleDebounce},
		{5 * time.Millisecond, ScheduleDebounce - 5*time.Millisecond},
		{ScheduleDebounce, 0},
		{time.Second, 0},
		{-time.Hour, ScheduleDebounce}, // a clock stepped back: bounded all the same
	} {
		if got := DebounceWait(last, last.Add(tc.since)); got != tc.want {
			t.Errorf("DebounceWait(last, last+%v) = %v; want %v", tc.since, got, tc.want)
		}
	}
}
