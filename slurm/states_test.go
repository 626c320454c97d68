package slurm

import "testing"

func TestJobStates(t *testing.T) {
	for in, want := range map[string]string{"PD": "PENDING", "pd": "PENDING", "Running": "RUNNING", "oom": "OUT_OF_MEMORY", "CD": "COMPLETED"} {
		if got, ok := ParseJobState(in); !ok || got != want {
			t.Errorf("ParseJobState(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := ParseJobState("done"); ok {
		t.Errorf("ParseJobState(done) = %q; want unknown", got)
	}
	for name, want := range map[string]string{"PENDING": "PD", "OUT_OF_MEMORY": "OOM", "NODE_FAIL": "NF", "WEIRD": "WEIRD"} {
		if got := JobStateCode(name); got != want {
			t.Errorf("JobStateCode(%q) = %q; want %q", name, got, want)
		}
	}
	names := JobStateNames()
	if len(names) != len(jobStates) || names[0] != "BOOT_FAIL" {
		t.Errorf("JobStateNames() = %v", names)
	}
}
