package slurm

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	const d, h, m, s = 24 * time.Hour, time.Hour, time.Minute, time.Second
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"90", 90 * m},
		{"1:30", m + 30*s},
		{"1:90", 2*m + 30*s},
		{"02:03:04", 2*h + 3*m + 4*s},
		{"1-12", d + 12*h},
		{"1-12:30", d + 12*h + 30*m},
		{"2-00:00:05", 2*d + 5*s},
		{"0", 0},
		{"0:00", 0},
		{"UNLIMITED", 0},
		{"infinite", 0},
		{"-1", 0},
		{"99999999", 99999999 * m},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTime(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("ParseTime(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseTimeErrors(t *testing.T) {
	for _, in := range []string{
		"90x", "", " 90", "1:2:3:4", "1-2-3", "1-", "-5", "1:", ":1", "1-1:2:3:4",
		"+5", "1e3", "1234567890", "999999999", "999999-999999999:0:0", "UNLIMITEDx", "1.5",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParseTime(in)
			want := `--time "` + in + `"`
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), timeForms) {
				t.Errorf("ParseTime(%q) = %v, %v; want error %s: %s", in, got, err, want, timeForms)
			}
		})
	}
}

func TestFormatTime(t *testing.T) {
	tests := []struct {
		in            time.Duration
		limit, elapsd string
	}{
		{0, "UNLIMITED", "0:00"},
		{59 * time.Second, "0:59", "0:59"},
		{90 * time.Minute, "1:30:00", "1:30:00"},
		{61*time.Minute + 500*time.Millisecond, "1:01:00", "1:01:00"},
		{25*time.Hour + 2*time.Second, "1-01:00:02", "1-01:00:02"},
		{100 * 24 * time.Hour, "100-00:00:00", "100-00:00:00"},
		{-time.Second, "INVALID", "INVALID"},
	}
	for _, tt := range tests {
		t.Run(tt.limit, func(t *testing.T) {
			if got := FormatTime(tt.in); got != tt.limit {
				t.Errorf("FormatTime(%v) = %q; want %q", tt.in, got, tt.limit)
			}
			if got := FormatElapsed(tt.in); got != tt.elapsd {
				t.Errorf("FormatElapsed(%v) = %q; want %q", tt.in, got, tt.elapsd)
			}
		})
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"90", "1:30", "02:03:04", "1-12", "1-12:30", "2-00:00:05", "0", "UNLIMITED", "90x", "-1", "1-", "::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTime(s)
		if err != nil {
			if !strings.Contains(err.Error(), timeForms) {
				t.Fatalf("ParseTime(%q) error %q; want it to list %s", s, err, timeForms)
			}
			return
		}
		if d < 0 || d%time.Second != 0 {
			t.Fatalf("ParseTime(%q) = %v; want whole seconds, 0 or more", s, d)
		}
		// What FormatTime prints, ParseTime reads back (D-HH:MM:SS, H:MM:SS, M:SS, UNLIMITED).
		if back, err := ParseTime(FormatTime(d)); err != nil || back != d {
			t.Fatalf("ParseTime(FormatTime(%v) = %q) = %v, %v; want %v", d, FormatTime(d), back, err, d)
		}
	})
}

func TestFormatCPUTime(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "00:00:00", 1234 * time.Millisecond: "00:01.234",
		61 * time.Second: "00:01:01", 3723 * time.Second: "01:02:03", 90061 * time.Second: "1-01:01:01"} {
		if got := FormatCPUTime(d); got != want {
			t.Errorf("FormatCPUTime(%s) = %q; want %q", d, got, want)
		}
	}
}

func TestParseDate(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	now := time.Date(2026, 11, 25, 13, 45, 10, 0, loc)
	at := func(y int, m time.Month, d, h, mi, s int) time.Time { return time.Date(y, m, d, h, mi, s, 0, loc) }
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"now", now},
		{"NOW", now},
		{"now-3600", now.Add(-time.Hour)},
		{"now+2hours", now.Add(2 * time.Hour)},
		{"now-1days", now.Add(-24 * time.Hour)},
		{"now-2weeks", now.Add(-14 * 24 * time.Hour)},
		{"now-30minutes", now.Add(-30 * time.Minute)},
		{"today", at(2026, 11, 25, 0, 0, 0)},
		{"midnight", at(2026, 11, 25, 0, 0, 0)},
		{"noon", at(2026, 11, 25, 12, 0, 0)},
		{"fika", at(2026, 11, 25, 15, 0, 0)},
		{"teatime", at(2026, 11, 25, 16, 0, 0)},
		{"tomorrow", at(2026, 11, 26, 0, 0, 0)},
		{"08:30", at(2026, 11, 25, 8, 30, 0)},
		{"23:59:58", at(2026, 11, 25, 23, 59, 58)},
		{"8:30pm", at(2026, 11, 25, 20, 30, 0)},
		{"12:05AM", at(2026, 11, 25, 0, 5, 0)},
		{"2026-01-02", at(2026, 1, 2, 0, 0, 0)},
		{"2026-01-02T03:04", at(2026, 1, 2, 3, 4, 0)},
		{"2026-01-02T03:04:05", at(2026, 1, 2, 3, 4, 5)},
		{"0102", at(2026, 1, 2, 0, 0, 0)},
		{"010225", at(2025, 1, 2, 0, 0, 0)},
		{"01/02", at(2026, 1, 2, 0, 0, 0)},
		{"01/02/25", at(2025, 1, 2, 0, 0, 0)},
		{"1/2/2025", at(2025, 1, 2, 0, 0, 0)},
		{"01.02.25", at(2025, 1, 2, 0, 0, 0)},
		{"01/02-10:11", at(2026, 1, 2, 10, 11, 0)},
		{"0102-10:11:12", at(2026, 1, 2, 10, 11, 12)},
	} {
		got, err := ParseDate(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseDate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "yesterday", "now+", "now*3", "now+3fortnights", "25:00", "13:00pm",
		"2026-13-01", "2026-02-30", "13/01", "01/32", "2026-01-02T25:00", "1:2:3:4", "12345", "01/02/3",
		"now+99999999999weeks"} {
		if got, err := ParseDate(in, now); err == nil {
			t.Errorf("ParseDate(%q) = %v; want an error", in, got)
		}
	}
}

func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"now-3hours", "2026-01-02T03:04:05", "01/02/25-10:11", "8:30pm", "0102", "teatime"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 25, 13, 45, 10, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDate(s, now)
		if err != nil && !strings.Contains(err.Error(), "want HH:MM") {
			t.Fatalf("ParseDate(%q): error %q does not list the forms", s, err)
		}
		if err == nil && got.IsZero() {
			t.Fatalf("ParseDate(%q) = zero time without an error", s)
		}
	})
}

func TestFormatHMS(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "00:00:00"}, {3 * time.Second, "00:00:03"}, {5 * time.Minute, "00:05:00"},
		{time.Hour, "01:00:00"}, {49*time.Hour + 61*time.Second, "2-01:01:01"}, {-time.Second, "INVALID"},
	} {
		if got := FormatHMS(tt.d); got != tt.want {
			t.Errorf("FormatHMS(%v) = %q; want %q", tt.d, got, tt.want)
		}
	}
}

func TestParseBegin(t *testing.T) {
	now := time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"16:00", time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)}, // past today: tomorrow
		{"18:30", time.Date(2026, 11, 25, 18, 30, 0, 0, time.UTC)},
		{"4pm", time.Time{}}, // not a form: an error below
		{"4:00pm", time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)},
		{"now+60", now.Add(time.Minute)},
		{"now+1hour", now.Add(time.Hour)},
		{"2026-11-25T10:00", time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}, // a date in the past stays
		{"midnight", time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)},
	} {
		got, err := ParseBegin(tc.in, now)
		if tc.want.IsZero() {
			if err == nil {
				t.Errorf("ParseBegin(%q) = %v; want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseBegin(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
