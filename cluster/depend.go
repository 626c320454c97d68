package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Dependency types, as Slurm spells them in --dependency.
const (
	DepAfter         = "after"            // the job started (or ended)
	DepAfterAny      = "afterany"         // the job ended, however
	DepAfterOK       = "afterok"          // the job COMPLETED with exit 0
	DepAfterNotOK    = "afternotok"       // the job ended in any other state
	DepAfterCorr     = "aftercorr"        // the same element of another array ended OK
	DepAfterBurstBuf = "afterburstbuffer" // Shoal has no burst buffers: afterany
	DepSingleton     = "singleton"        // no earlier live job of the same name and user
)

// Dependency bounds.
const (
	MaxDepConditions = 64
	MaxDepJobs       = 1024
	maxDepDelay      = 365 * 24 * time.Hour
)

// Dependency is a job's --dependency: conditions that must all hold, or
// with Any, one of which must hold, before the job may start.
type Dependency struct {
	Any        bool           `msgpack:"any" json:"any,omitempty"`
	Conditions []DepCondition `msgpack:"conditions" json:"conditions"`
}

// DepCondition is one TYPE:ID[:ID...] item, or singleton (no Jobs).
type DepCondition struct {
	Type string   `msgpack:"type" json:"type"`
	Jobs []DepJob `msgpack:"jobs" json:"jobs,omitempty"`
}

// DepJob names the job a condition waits on.
type DepJob struct {
	// ID is a job id. When it names an array (its ArrayJobID), the
	// condition is on every element unless Task picks one.
	ID JobID `msgpack:"id" json:"id"`
	// Task is an array element's index ("123_4"), or -1: the whole job.
	Task int `msgpack:"task" json:"task"`
	// Delay is after's +MINUTES: how long after the job started.
	Delay time.Duration `msgpack:"delay" json:"delay,omitempty"`
}

// Validate checks the dependency and names the first bad part.
func (d *Dependency) Validate() error {
	if len(d.Conditions) == 0 {
		return fmt.Errorf("dependency: no conditions")
	}
	if len(d.Conditions) > MaxDepConditions {
		return fmt.Errorf("dependency: %d conditions, want at most %d", len(d.Conditions), MaxDepConditions)
	}
	jobs := 0
	for i, c := range d.Conditions {
		switch c.Type {
		case DepSingleton:
			if len(c.Jobs) != 0 {
				return fmt.Errorf("dependency condition %d: singleton names no jobs", i)
			}
			continue
		case DepAfter, DepAfterAny, DepAfterOK, DepAfterNotOK, DepAfterCorr, DepAfterBurstBuf:
		default:
			return fmt.Errorf("dependency condition %d: type %.32q unknown", i, c.Type)
		}
		if len(c.Jobs) == 0 {
			return fmt.Errorf("dependency condition %d (%s): names no job", i, c.Type)
		}
		for _, dj := range c.Jobs {
			if jobs++; jobs > MaxDepJobs {
				return fmt.Errorf("dependency: more than %d jobs", MaxDepJobs)
			}
			switch {
			case dj.ID == 0:
				return fmt.Errorf("dependency condition %d (%s): job id 0", i, c.Type)
			case dj.Task < -1 || dj.Task >= MaxArrayIndex:
				return fmt.Errorf("dependency condition %d (%s): job %d array task %d: want 0 to %d", i, c.Type, dj.ID, dj.Task, MaxArrayIndex-1)
			case dj.Delay < 0 || dj.Delay > maxDepDelay:
				return fmt.Errorf("dependency condition %d (%s): job %d delay %s: want 0 to %s", i, c.Type, dj.ID, dj.Delay, maxDepDelay)
			case dj.Delay != 0 && c.Type != DepAfter:
				return fmt.Errorf("dependency condition %d (%s): job %d: +MINUTES is for after only", i, c.Type, dj.ID)
			case c.Type == DepAfterCorr && dj.Task != -1:
				return fmt.Errorf("dependency condition %d (aftercorr): job %d: name the array, not element %d", i, dj.ID, dj.Task)
			}
		}
	}
	return nil
}

// Clone returns a deep copy of d.
func (d *Dependency) Clone() *Dependency {
	if d == nil {
		return nil
	}
	c := &Dependency{Any: d.Any, Conditions: make([]DepCondition, len(d.Conditions))}
	for i, cond := range d.Conditions {
		c.Conditions[i] = DepCondition{Type: cond.Type, Jobs: append([]DepJob(nil), cond.Jobs...)}
	}
	return c
}

// String formats d as Slurm writes a --dependency value.
func (d *Dependency) String() string {
	if d == nil {
		return ""
	}
	sep := ","
	if d.Any {
		sep = "?"
	}
	parts := make([]string, 0, len(d.Conditions))
	for _, c := range d.Conditions {
		var b strings.Builder
		b.WriteString(c.Type)
		for _, j := range c.Jobs {
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(uint64(j.ID), 10))
			if j.Task >= 0 {
				b.WriteByte('_')
				b.WriteString(strconv.Itoa(j.Task))
			}
			if j.Delay > 0 {
				fmt.Fprintf(&b, "+%d", int64(j.Delay/time.Minute))
			}
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, sep)
}
