package slurm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// timeForms is the accepted --time syntax, quoted in every ParseTime error.
const timeForms = "want MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED"

// maxTimeField bounds each number of a --time value so the sum cannot
// overflow a time.Duration (about 292 years).
const maxTimeField = 1_000_000_000

// ParseTime parses a Slurm --time value: MM, MM:SS, HH:MM:SS, D-HH,
// D-HH:MM or D-HH:MM:SS, each field a decimal number. "UNLIMITED",
// "INFINITE" (any case) and "-1" mean no limit and give 0, and so does a
// value of zero ("0", "0:00"), as in Slurm. Like Slurm it does not insist
// that minutes and seconds be below 60 ("1:90" is 2m30s); unlike Slurm
// (which rounds a limit up to whole minutes) it keeps the seconds.
func ParseTime(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf("--time %q: %s", clip(s), timeForms)
	}
	switch strings.ToUpper(s) {
	case "UNLIMITED", "INFINITE", "-1":
		return 0, nil
	}
	days := int64(0)
	rest := s
	hasDays := false
	if d, r, ok := strings.Cut(s, "-"); ok {
		v, ok := timeField(d)
		if !ok {
			return bad()
		}
		days, rest, hasDays = v, r, true
	}
	fields := strings.Split(rest, ":")
	if len(fields) > 3 {
		return bad()
	}
	vals := make([]int64, len(fields))
	for i, f := range fields {
		v, ok := timeField(f)
		if !ok {
			return bad()
		}
		vals[i] = v
	}
	var h, m, sec int64
	switch {
	case hasDays: // D-HH, D-HH:MM, D-HH:MM:SS
		h = vals[0]
		if len(vals) > 1 {
			m = vals[1]
		}
		if len(vals) > 2 {
			sec = vals[2]
		}
	case len(vals) == 1: // MM
		m = vals[0]
	case len(vals) == 2: // MM:SS
		m, sec = vals[0], vals[1]
	default: // HH:MM:SS
		h, m, sec = vals[0], vals[1], vals[2]
	}
	total := ((days*24+h)*60+m)*60 + sec // each field < 1e9: fits int64
	if total > int64(math.MaxInt64/time.Second) {
		return 0, fmt.Errorf("--time %q: more than %s; %s", clip(s), FormatTime(math.MaxInt64/time.Second*time.Second), timeForms)
	}
	return time.Duration(total) * time.Second, nil
}

// timeField parses one decimal field of a --time value.
func timeField(f string) (int64, bool) {
	if f == "" || len(f) > 9 {
		return 0, false
	}
	for i := 0; i < len(f); i++ {
		if f[i] < '0' || f[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(f, 10, 64)
	return v, err == nil && v < maxTimeField
}

// FormatTime formats a time limit as squeue's TIME_LIMIT column does:
// M:SS, H:MM:SS or D-HH:MM:SS, and "UNLIMITED" for 0 (no limit).
// Fractions of a second are dropped; a negative limit is "INVALID".
func FormatTime(d time.Duration) string {
	if d == 0 {
		return "UNLIMITED"
	}
	return FormatElapsed(d)
}

// FormatElapsed formats a duration as squeue's TIME column does (Slurm's
// secs2time_str): M:SS, H:MM:SS or D-HH:MM:SS, so 0 is "0:00". Fractions
// of a second are dropped; a negative duration is "INVALID".
func FormatElapsed(d time.Duration) string {
	if d < 0 {
		return "INVALID"
	}
	t := int64(d / time.Second)
	sec, min, hour, days := t%60, t/60%60, t/3600%24, t/86400
	switch {
	case days > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, hour, min, sec)
	case hour > 0:
		return fmt.Sprintf("%d:%02d:%02d", hour, min, sec)
	default:
		return fmt.Sprintf("%d:%02d", min, sec)
	}
}

// FormatCPUTime writes a CPU time as sacct's TotalCPU, UserCPU and
// SystemCPU do (Slurm's _elapsed_time): D-HH:MM:SS from a
// day, HH:MM:SS from an hour, else MM:SS.mmm (00:MM:SS when there are no
// milliseconds).
func FormatCPUTime(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	secs := int64(d / time.Second)
	ms := int64(d%time.Second) / int64(time.Millisecond)
	s, m, h, days := secs%60, secs/60%60, secs/3600%24, secs/86400
	switch {
	case days > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	case h > 0:
		return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
	case ms > 0:
		return fmt.Sprintf("%02d:%02d.%03d", m, s, ms)
	}
	return fmt.Sprintf("00:%02d:%02d", m, s)
}

// FormatHMS formats a duration as scontrol show job's RunTime and
// TimeLimit (Slurm's secs2time_str there): HH:MM:SS, or D-HH:MM:SS from a
// day. Fractions of a second are dropped; a negative duration is
// "INVALID".
func FormatHMS(d time.Duration) string {
	if d < 0 {
		return "INVALID"
	}
	t := int64(d / time.Second)
	sec, min, hour, days := t%60, t/60%60, t/3600%24, t/86400
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, hour, min, sec)
	}
	return fmt.Sprintf("%02d:%02d:%02d", hour, min, sec)
}
