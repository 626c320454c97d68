package cluster

import "testing"

// TestIndexLists: CPUList's runs and IndexCSV's plain list of the same
// indices.
func TestIndexLists(t *testing.T) {
	for _, tc := range []struct {
		in            []int
		cpus, indices string
	}{
		{nil, "", ""},
		{[]int{3}, "3", "3"},
		{[]int{0, 1, 2, 3}, "0-3", "0,1,2,3"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11", "0,1,2,3,8,10,11"},
	} {
		if got := CPUList(tc.in); got != tc.cpus {
			t.Errorf("CPUList(%v) = %q; want %q", tc.in, got, tc.cpus)
		}
		if got := IndexCSV(tc.in); got != tc.indices {
			t.Errorf("IndexCSV(%v) = %q; want %q", tc.in, got, tc.indices)
		}
	}
	// IndexCSV keeps the order it is given (GPUs as a task sees them).
	if got := IndexCSV([]int{2, 0, 1}); got != "2,0,1" {
		t.Errorf("IndexCSV([2 0 1]) = %q; want \"2,0,1\"", got)
	}
}

func TestParseCPUList(t *testing.T) {
	for _, s := range []string{"", "3", "0-3", "0-3,8,10-11"} {
		got, err := ParseCPUList(s)
		if err != nil || CPUList(got) != s {
			t.Errorf("ParseCPUList(%q) = %v, %v; want it back as written", s, got, err)
		}
	}
	for _, s := range []string{"a", "3-1", "1,1", "2,1", "-1", "0-70000", ",", "1,"} {
		if got, err := ParseCPUList(s); err == nil {
			t.Errorf("ParseCPUList(%q) = %v; want an error", s, got)
		}
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"", "0-3,8", "1-", "5-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		back, err := ParseCPUList(CPUList(cpus))
		if err != nil || len(back) != len(cpus) {
			t.Fatalf("ParseCPUList(%q) = %v; written back and read again: %v, %v", s, cpus, back, err)
		}
	})
}
