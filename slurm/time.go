package slurm

import (
	"fmt"
	"math"
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
	if len(f) > 9 {
		return 0, false
	}
	v, ok := decimal(f)
	return v, ok && v < maxTimeField
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

// clock splits d's whole seconds into days, hours, minutes and seconds,
// the fields of Slurm's secs2time_str.
func clock(d time.Duration) (days, hours, mins, secs int64) {
	t := int64(d / time.Second)
	return t / 86400, t / 3600 % 24, t / 60 % 60, t % 60
}

// FormatElapsed formats a duration as squeue's TIME column does (Slurm's
// secs2time_str): M:SS, H:MM:SS or D-HH:MM:SS, so 0 is "0:00". Fractions
// of a second are dropped; a negative duration is "INVALID".
func FormatElapsed(d time.Duration) string {
	if d < 0 {
		return "INVALID"
	}
	days, hour, min, sec := clock(d)
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
	days, h, m, s := clock(d)
	ms := int64(d%time.Second) / int64(time.Millisecond)
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

// dateForms is the accepted date syntax, quoted in every ParseDate error.
const dateForms = "want HH:MM[:SS][AM|PM], MMDD[YY][-HH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]], MM.DD[.YY][-HH:MM[:SS]], YYYY-MM-DD[THH:MM[:SS]], today, midnight, noon, fika, teatime, tomorrow or now[{+|-}COUNT[seconds|minutes|hours|days|weeks]]"

// ParseDate parses a point in time as Slurm's parse_time takes it (sacct
// -S/-E, sbatch --begin), in now's location: HH:MM[:SS] with an optional
// AM or PM (today), MMDD[YY], MM/DD[/YY] or MM.DD[.YY] with an optional
// -HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], "today" and "midnight" (today at
// 00:00), "noon", "fika" (15:00) and "teatime" (16:00) today, "tomorrow"
// and now[{+|-}COUNT[UNIT]] with seconds (the default), minutes, hours,
// days or weeks. A date without a year is in now's year. Names are taken
// in any case. Unlike Slurm's (which with past=0 moves a time of day that
// has passed to tomorrow) a time of day is always today's, as sacct's
// (past=1).
func ParseDate(s string, now time.Time) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, fmt.Errorf("invalid time %q: %s", clip(s), dateForms)
	}
	loc := now.Location()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	lower := strings.ToLower(strings.TrimSpace(s))
	switch lower {
	case "today", "midnight":
		return midnight, nil
	case "noon":
		return midnight.Add(12 * time.Hour), nil
	case "fika":
		return midnight.Add(15 * time.Hour), nil
	case "teatime":
		return midnight.Add(16 * time.Hour), nil
	case "tomorrow":
		return midnight.AddDate(0, 0, 1), nil
	}
	if rest, ok := strings.CutPrefix(lower, "now"); ok {
		if rest == "" {
			return now, nil
		}
		sign := int64(1)
		switch rest[0] {
		case '+':
		case '-':
			sign = -1
		default:
			return bad()
		}
		rest = strings.TrimSpace(rest[1:])
		i := digitsEnd(rest, 0)
		n, ok := timeField(rest[:i])
		if !ok {
			return bad()
		}
		unit := time.Second
		switch strings.TrimSpace(rest[i:]) {
		case "", "s", "sec", "secs", "second", "seconds":
		case "m", "min", "mins", "minute", "minutes":
			unit = time.Minute
		case "h", "hour", "hours":
			unit = time.Hour
		case "d", "day", "days":
			unit = 24 * time.Hour
		case "w", "week", "weeks":
			unit = 7 * 24 * time.Hour
		default:
			return bad()
		}
		if n > int64(math.MaxInt64/unit) {
			return bad()
		}
		return now.Add(time.Duration(sign*n) * unit), nil
	}
	// YYYY-MM-DD[THH:MM[:SS]]
	if len(lower) >= 10 && lower[4] == '-' && lower[7] == '-' {
		date, clock, hasClock := strings.Cut(lower, "t")
		y, m, d, ok := dateFields(date, "-", true)
		if !ok {
			return bad()
		}
		h, mi, sec := 0, 0, 0
		if hasClock {
			if h, mi, sec, ok = clockFields(clock); !ok {
				return bad()
			}
		}
		return civil(y, m, d, h, mi, sec, loc, bad)
	}
	// HH:MM[:SS][AM|PM]: a time of day today.
	if clock, ampm := cutAMPM(lower); strings.Contains(clock, ":") && !strings.ContainsAny(clock, "-/.") {
		h, mi, sec, ok := clockFields(strings.TrimSpace(clock))
		if !ok {
			return bad()
		}
		switch {
		case ampm != "" && (h < 1 || h > 12):
			return bad()
		case ampm == "am" && h == 12:
			h = 0
		case ampm == "pm" && h < 12:
			h += 12
		}
		return civil(now.Year(), int(now.Month()), now.Day(), h, mi, sec, loc, bad)
	}
	// MMDD[YY], MM/DD[/YY], MM.DD[.YY], each with an optional -HH:MM[:SS].
	date, clock, hasClock := strings.Cut(lower, "-")
	var y, m, d int
	ok := false
	switch {
	case strings.Contains(date, "/"):
		y, m, d, ok = dateFields(date, "/", false)
	case strings.Contains(date, "."):
		y, m, d, ok = dateFields(date, ".", false)
	case len(date) == 4 || len(date) == 6:
		parts := []string{date[0:2], date[2:4]}
		if len(date) == 6 {
			parts = append(parts, date[4:6])
		}
		y, m, d, ok = dateFields(strings.Join(parts, "/"), "/", false)
	}
	if !ok {
		return bad()
	}
	if y == 0 {
		y = now.Year()
	}
	h, mi, sec := 0, 0, 0
	if hasClock {
		if h, mi, sec, ok = clockFields(clock); !ok {
			return bad()
		}
	}
	return civil(y, m, d, h, mi, sec, loc, bad)
}

// cutAMPM splits a trailing "am" or "pm" off a time of day.
func cutAMPM(s string) (string, string) {
	for _, suffix := range []string{"am", "pm"} {
		if c, ok := strings.CutSuffix(s, suffix); ok {
			return c, suffix
		}
	}
	return s, ""
}

// dateFields reads Y-M-D (yearFirst) or M/D[/YY]; a missing year is 0,
// a two-digit one in 2000-2099.
func dateFields(s, sep string, yearFirst bool) (y, m, d int, ok bool) {
	f := strings.Split(s, sep)
	nums := make([]int, len(f))
	for i, x := range f {
		v, ok := timeField(x)
		if !ok || len(x) > 4 {
			return 0, 0, 0, false
		}
		nums[i] = int(v)
	}
	switch {
	case yearFirst && len(nums) == 3 && len(f[0]) == 4:
		return nums[0], nums[1], nums[2], true
	case !yearFirst && len(nums) == 2 && len(f[0]) <= 2 && len(f[1]) <= 2:
		return 0, nums[0], nums[1], true
	case !yearFirst && len(nums) == 3 && len(f[0]) <= 2 && len(f[1]) <= 2 && len(f[2]) == 2:
		return 2000 + nums[2], nums[0], nums[1], true
	case !yearFirst && len(nums) == 3 && len(f[0]) <= 2 && len(f[1]) <= 2 && len(f[2]) == 4:
		return nums[2], nums[0], nums[1], true
	}
	return 0, 0, 0, false
}

// clockFields reads HH:MM[:SS].
func clockFields(s string) (h, m, sec int, ok bool) {
	f := strings.Split(s, ":")
	if len(f) < 2 || len(f) > 3 {
		return 0, 0, 0, false
	}
	var v [3]int
	for i, x := range f {
		n, ok := timeField(x)
		if !ok || len(x) > 2 {
			return 0, 0, 0, false
		}
		v[i] = int(n)
	}
	return v[0], v[1], v[2], true
}

// civil builds a time from fields, refusing out-of-range ones (Slurm
// refuses "13/40" rather than normalising it).
func civil(y, m, d, h, mi, sec int, loc *time.Location, bad func() (time.Time, error)) (time.Time, error) {
	if m < 1 || m > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
		return bad()
	}
	t := time.Date(y, time.Month(m), d, h, mi, sec, 0, loc)
	if t.Day() != d {
		return bad() // February 30th
	}
	return t, nil
}

// ParseBegin parses sbatch/salloc/srun --begin: ParseDate's forms, except
// that a bare time of day already past today means tomorrow, as Slurm's
// parse_time with past=0 takes it ("--begin=16:00" at 17:00 is tomorrow
// at 16:00).
func ParseBegin(s string, now time.Time) (time.Time, error) {
	t, err := ParseDate(s, now)
	if err != nil {
		return t, err
	}
	if t.Before(now) && timeOfDay(s) {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// timeOfDay reports whether s is a bare HH:MM[:SS][AM|PM].
func timeOfDay(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "am"), "pm")
	return strings.Contains(s, ":") && strings.Trim(s, "0123456789:") == ""
}

// FormatHMS formats a duration as scontrol show job's RunTime and
// TimeLimit (Slurm's secs2time_str there): HH:MM:SS, or D-HH:MM:SS from a
// day. Fractions of a second are dropped; a negative duration is
// "INVALID".
func FormatHMS(d time.Duration) string {
	if d < 0 {
		return "INVALID"
	}
	days, hour, min, sec := clock(d)
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, hour, min, sec)
	}
	return fmt.Sprintf("%02d:%02d:%02d", hour, min, sec)
}
