package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// Array bounds. MaxArrayIndex is Slurm's default MaxArraySize: indices run
// from 0 to MaxArrayIndex-1. MaxArraySpecBytes bounds an array's elements
// together: each is a job record with its own copy of the spec in the log's
// snapshots, so a large script allows fewer elements.
const (
	MaxArrayIndex     = 1001
	MaxArraySpecBytes = 64 << 20
)

// ArraySpec is a submitted --array: the indices, ascending and distinct,
// and the most elements that may run at once (0: no limit).
type ArraySpec struct {
	Indices  []int `msgpack:"indices" json:"indices"`
	Throttle int   `msgpack:"throttle" json:"throttle,omitempty"`
}

// Validate checks the array and names the first bad field.
func (a *ArraySpec) Validate() error {
	switch {
	case len(a.Indices) == 0:
		return fmt.Errorf("array: no indices")
	case len(a.Indices) > MaxArrayIndex:
		return fmt.Errorf("array: %d indices, want at most %d", len(a.Indices), MaxArrayIndex)
	case a.Throttle < 0:
		return fmt.Errorf("array throttle %d: want 0 (none) or more", a.Throttle)
	}
	for i, x := range a.Indices {
		if x < 0 || x >= MaxArrayIndex {
			return fmt.Errorf("array index %d: want 0 to %d", x, MaxArrayIndex-1)
		}
		if i > 0 && x <= a.Indices[i-1] {
			return fmt.Errorf("array indices: %d after %d, want ascending and distinct", x, a.Indices[i-1])
		}
	}
	return nil
}

// Clone returns a deep copy of a.
func (a *ArraySpec) Clone() *ArraySpec {
	if a == nil {
		return nil
	}
	return &ArraySpec{Indices: append([]int(nil), a.Indices...), Throttle: a.Throttle}
}

// ArrayTask is an array element's place in its array; the environment's
// SLURM_ARRAY_* variables come from it.
type ArrayTask struct {
	// JobID is the array's id: the id of its first element. The elements'
	// own ids follow it without a gap, in index order.
	JobID JobID `msgpack:"job_id" json:"job_id"`
	// TaskID is this element's index.
	TaskID int `msgpack:"task_id" json:"task_id"`
	// Count, Min and Max describe the whole array; Step is the stride of
	// indices that form one progression, or 0 when they do not.
	Count int `msgpack:"count" json:"count"`
	Min   int `msgpack:"min" json:"min"`
	Max   int `msgpack:"max" json:"max"`
	Step  int `msgpack:"step" json:"step"`
	// Throttle is the most elements that may run at once (0: no limit).
	Throttle int `msgpack:"throttle" json:"throttle,omitempty"`
}

// Elements returns one ArrayTask per index of a valid array whose first
// element gets id first.
func (a *ArraySpec) Elements(first JobID) []ArrayTask {
	n := len(a.Indices)
	step := 0
	if n > 1 {
		step = a.Indices[1] - a.Indices[0]
		for i := 2; i < n; i++ {
			if a.Indices[i]-a.Indices[i-1] != step {
				step = 0
				break
			}
		}
	} else {
		step = 1
	}
	out := make([]ArrayTask, n)
	for i, x := range a.Indices {
		out[i] = ArrayTask{
			JobID: first, TaskID: x, Count: n,
			Min: a.Indices[0], Max: a.Indices[n-1], Step: step, Throttle: a.Throttle,
		}
	}
	return out
}

// Name is the element's Slurm name, "ARRAYID_TASK".
func (t *ArrayTask) Name() string {
	return strconv.FormatUint(uint64(t.JobID), 10) + "_" + strconv.Itoa(t.TaskID)
}

// IndexList writes ascending indices as Slurm writes an array's pending
// elements: "0-3,5,7-11:2" style ranges, with "%N" when throttled.
func IndexList(indices []int, throttle int) string {
	var b strings.Builder
	for i := 0; i < len(indices); {
		// The longest run of one stride starting at i (stride 1 preferred
		// for a pair, as Slurm prints "5,7" rather than "5-7:2").
		j := i + 1
		stride := 0
		if j < len(indices) {
			stride = indices[j] - indices[i]
			for j+1 < len(indices) && indices[j+1]-indices[j] == stride {
				j++
			}
			if stride != 1 && j == i+1 {
				j = i // a lone pair at a stride above 1: print singly
			}
		} else {
			j = i
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(indices[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(indices[j]))
			if stride != 1 {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(stride))
			}
		}
		i = j + 1
	}
	if throttle > 0 {
		b.WriteByte('%')
		b.WriteString(strconv.Itoa(throttle))
	}
	return b.String()
}
