package sim

import (
	"fmt"
	"math"
)

// Limits is how the replay sets each job's time limit, which backfill
// reads (and PolicyQSSF, for jobs whose user has no history yet).
type Limits string

const (
	// LimitsExact gives every job its trace duration as its limit
	// (perfect estimates), the default.
	LimitsExact Limits = "exact"
	// LimitsNoisy gives every job the trace's time_limit_s when the trace
	// has one, else a user-like estimate drawn from the seed (Noisy).
	LimitsNoisy Limits = "noisy"
)

// ParseLimits returns the limit model named s.
func ParseLimits(s string) (Limits, error) {
	switch l := Limits(s); l {
	case LimitsExact, LimitsNoisy:
		return l, nil
	case "":
		return LimitsExact, nil
	}
	return "", fmt.Errorf("limits %q: want exact or noisy", s)
}

// NoDefaultLimit is the chance that a user gives no limit and gets the
// partition's maximum (DefaultMaxLimit) under LimitsNoisy.
const NoDefaultLimit = 0.2

// DefaultMaxLimit is the limit of a job that gives none under LimitsNoisy,
// like a partition's MaxTime: 7 days (or the duration rounded up to whole
// days, for a job that ran longer).
const DefaultMaxLimit = 7 * 86400

// MaxOverestimate is the largest factor by which a user overestimates the
// run time under LimitsNoisy.
const MaxOverestimate = 10

// modal are the round values users ask for (seconds), after Tsafrir,
// Etsion and Feitelson, "Modeling user runtime estimates" (JSSPP 2005):
// requested limits cluster on a few round values.
var modal = []int64{5 * 60, 10 * 60, 15 * 60, 30 * 60, 3600, 2 * 3600, 3 * 3600, 4 * 3600, 6 * 3600,
	8 * 3600, 12 * 3600, 86400, 2 * 86400, 3 * 86400, 4 * 86400, 5 * 86400, 7 * 86400}

// Noisy is job i's limit under LimitsNoisy for seed, when the trace gives
// none: with probability NoDefaultLimit the user asks for nothing and
// gets DefaultMaxLimit; else the user overestimates the duration by a
// factor drawn log-uniformly from [1, MaxOverestimate], rounded up to the
// next modal value (whole days beyond 7 days). The limit is never below
// the duration (the job ran to its end, so its limit let it) and at least
// 1 s. It depends only on seed, i and the duration.
func Noisy(seed uint64, i int, duration int64) int64 {
	d := max(duration, 1)
	r := splitmix(seed ^ splitmix(uint64(i)+1))
	u1 := float64(r>>11) / (1 << 53)
	u2 := float64(splitmix(r)>>11) / (1 << 53)
	if u1 < NoDefaultLimit {
		return max(DefaultMaxLimit, roundDays(d))
	}
	want := int64(math.Ceil(float64(d) * math.Pow(MaxOverestimate, u2)))
	for _, m := range modal {
		if want <= m {
			return m
		}
	}
	return roundDays(want)
}

// roundDays rounds s up to whole days.
func roundDays(s int64) int64 { return (s + 86399) / 86400 * 86400 }

// splitmix is SplitMix64's output function: a fixed, well-mixed hash.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// limit is job i's time limit in seconds under o.
func (o Options) limit(i int, j Job) int64 {
	if o.Limits != LimitsNoisy {
		return max(j.Duration, 1)
	}
	if j.TimeLimit > 0 {
		return max(j.TimeLimit, 1)
	}
	return Noisy(o.Seed, i, j.Duration)
}
