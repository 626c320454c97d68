package slurm

import (
	"slices"
	"strings"
)

// jobStates are Slurm 22.05's job states, compact code (squeue %t) and
// long name (%T), in Slurm's order. Shoal's jobs only ever reach the
// first eight, DEADLINE and OUT_OF_MEMORY; the others are accepted where Slurm's
// commands accept them (squeue -t, sacct -s) and match no job.
var jobStates = [...]struct{ code, name string }{
	{"PD", "PENDING"}, {"R", "RUNNING"}, {"CD", "COMPLETED"}, {"CA", "CANCELLED"},
	{"F", "FAILED"}, {"TO", "TIMEOUT"}, {"NF", "NODE_FAIL"}, {"RQ", "REQUEUED"},
	{"S", "SUSPENDED"}, {"PR", "PREEMPTED"}, {"BF", "BOOT_FAIL"}, {"DL", "DEADLINE"},
	{"OOM", "OUT_OF_MEMORY"}, {"CG", "COMPLETING"}, {"CF", "CONFIGURING"},
	{"RS", "RESIZING"}, {"RD", "RESV_DEL_HOLD"}, {"RF", "REQUEUE_FED"},
	{"RH", "REQUEUE_HOLD"}, {"RV", "REVOKED"}, {"SI", "SIGNALING"},
	{"SE", "SPECIAL_EXIT"}, {"SO", "STAGE_OUT"}, {"ST", "STOPPED"},
}

// JobStateCode is the compact code squeue prints for a long job state
// name ("PD" for PENDING); a name Slurm does not know is returned as is.
func JobStateCode(name string) string {
	for _, st := range jobStates {
		if st.name == name {
			return st.code
		}
	}
	return name
}

// ParseJobState reads one job state as squeue -t, sacct -s and scancel -t
// take it: a compact code or a long name, in any case. It returns the
// long name.
func ParseJobState(s string) (string, bool) {
	for _, st := range jobStates {
		if strings.EqualFold(s, st.code) || strings.EqualFold(s, st.name) {
			return st.name, true
		}
	}
	return "", false
}

// JobStateNames are the long names of every job state, sorted, as
// squeue lists them after "Valid job states include:".
func JobStateNames() []string {
	names := make([]string, len(jobStates))
	for i, st := range jobStates {
		names[i] = st.name
	}
	slices.Sort(names)
	return names
}
