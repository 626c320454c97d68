package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// jobRefForms are the job references ParseJobRef takes, quoted in its
// errors.
const jobRefForms = "want N, N_M (one array task), N_[a-b] or N_[a,b-c] (array tasks); N a positive job id, M from 0 to 1000"

// JobRef is a job as Slurm's commands name it (scancel, scontrol,
// squeue -j, sacct -j, sprio -j, shoal job): "12" is job 12 or, when 12
// is an array, every task of it; "12_3" is task 3 of array 12;
// "12_[1-3,7]" is some of its tasks.
type JobRef struct {
	ID uint64
	// Tasks are the array tasks named, ascending and distinct: one for
	// N_M, the list for N_[...]; nil for a bare N.
	Tasks []int
	// List is set for the bracketed form N_[...], even when it names
	// one task.
	List bool
}

// ParseJobRef parses a job reference: N, N_M, N_[a-b] or N_[a,b-c,...]
// (the list as --array writes it, without a %LIMIT). N+K, Slurm's
// component K of heterogeneous job N, is an error: Shoal has no
// heterogeneous jobs. A job step (N.S) is not a job reference; the
// commands that take one cut it off first. Errors name the reference and
// the accepted forms.
func ParseJobRef(s string) (JobRef, error) {
	bad := func(why string) (JobRef, error) {
		return JobRef{}, fmt.Errorf("job id %q: %s; %s", clip(s), why, jobRefForms)
	}
	head, task, hasTask := strings.Cut(s, "_")
	if h, k, het := strings.Cut(head, "+"); het && !hasTask && isDigits(h) && isDigits(k) {
		return bad("component +" + clip(k) + " of a heterogeneous job: " + whyHetJob)
	}
	id, err := strconv.ParseUint(head, 10, 64)
	if err != nil || id == 0 || !isDigits(head) {
		return JobRef{}, fmt.Errorf("job id %q: want a positive integer N, or N_M (one array task), N_[a-b] or N_[a,b-c] (array tasks)", clip(s))
	}
	ref := JobRef{ID: id}
	if !hasTask {
		return ref, nil
	}
	if list, ok := strings.CutPrefix(task, "["); ok {
		list, ok = strings.CutSuffix(list, "]")
		if !ok {
			return bad(fmt.Sprintf("array tasks %q: no closing ]", clip(task)))
		}
		if strings.Contains(list, "%") {
			return bad(fmt.Sprintf("array tasks %q: a %%LIMIT belongs to --array, not to a job id", clip(task)))
		}
		a, err := ParseArray(list)
		if err != nil {
			return bad(fmt.Sprintf("array tasks %q: not indices a, ranges a-b or a-b:STEP from 0 to %d joined by commas", clip(task), MaxArraySize-1))
		}
		ref.Tasks, ref.List = a.Indices, true
		return ref, nil
	}
	t, ok := decimal(task)
	if !ok || t >= MaxArraySize {
		return bad(fmt.Sprintf("array task %q: not a number from 0 to %d", clip(task), MaxArraySize-1))
	}
	ref.Tasks = []int{int(t)}
	return ref, nil
}

// ParseJobID parses a job reference that must name one job by its own
// id: N, not an array task.
func ParseJobID(s string) (uint64, error) {
	r, err := ParseJobRef(s)
	if err != nil {
		return 0, err
	}
	if r.Tasks != nil {
		return 0, fmt.Errorf("job id %q: names array tasks; want the job's own id N (each array task has one: squeue -r shows it)", clip(s))
	}
	return r.ID, nil
}

// String writes the reference as ParseJobRef reads it back.
func (r JobRef) String() string {
	id := strconv.FormatUint(r.ID, 10)
	switch {
	case r.List:
		return id + "_[" + Array{Indices: r.Tasks}.String() + "]"
	case r.Tasks != nil:
		return id + "_" + strconv.Itoa(r.Tasks[0])
	}
	return id
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
