package slurm

import "testing"

func TestParseInput(t *testing.T) {
	for _, tt := range []struct {
		value  string
		ntasks int
		want   Input
	}{
		{"", 4, Input{Kind: InputAll}},
		{"all", 4, Input{Kind: InputAll}},
		{"ALL", 4, Input{Kind: InputAll}},
		{"allfoo", 4, Input{Kind: InputAll}}, // Slurm compares the first three letters
		{"-", 4, Input{Kind: InputAll}},
		{"none", 4, Input{Kind: InputNone}},
		{"NoNe", 4, Input{Kind: InputNone}},
		{"0", 4, Input{Kind: InputTask, Task: 0}},
		{"3", 4, Input{Kind: InputTask, Task: 3}},
		{"4", 4, Input{Kind: InputFile, Pattern: "4"}}, // not a task of 4: a file
		{"7", 0, Input{Kind: InputTask, Task: 7}},      // count unknown
		{"al", 4, Input{Kind: InputFile, Pattern: "al"}},
		{"in.txt", 4, Input{Kind: InputFile, Pattern: "in.txt"}},
		{"in-%t.%j", 4, Input{Kind: InputFile, Pattern: "in-%t.%j"}},
		{"/data/none", 4, Input{Kind: InputFile, Pattern: "/data/none"}},
		{"99999999999999999999", 0, Input{Kind: InputFile, Pattern: "99999999999999999999"}},
	} {
		if got := ParseInput(tt.value, tt.ntasks); got != tt.want {
			t.Errorf("ParseInput(%q, %d) = %+v; want %+v", tt.value, tt.ntasks, got, tt.want)
		}
	}
}

func FuzzParseInput(f *testing.F) {
	for _, s := range []string{"", "all", "none", "0", "12", "in-%t", "-x"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, value string, ntasks int) {
		in := ParseInput(value, ntasks)
		switch in.Kind {
		case InputTask:
			if in.Task < 0 || ntasks > 0 && in.Task >= ntasks {
				t.Errorf("ParseInput(%q, %d) = task %d: out of range", value, ntasks, in.Task)
			}
		case InputFile:
			if in.Pattern != value || value == "" {
				t.Errorf("ParseInput(%q, %d) = file %q", value, ntasks, in.Pattern)
			}
		}
	})
}

func TestPerTaskPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    bool
	}{
		{"in.txt", false},
		{"in-%j.%s.txt", false},
		{"/d/%u/%x-%A_%a-%J", false},
		{"in-%t.txt", true},
		{"in-%4n", true},
		{"%N.in", true},
		{"100%%t", false}, // %% then a t
		{`in-\%t`, false}, // a backslash: not expanded
		{"trailing%", false},
		{"width%12", false},
	} {
		if got := PerTaskPattern(tc.pattern); got != tc.want {
			t.Errorf("PerTaskPattern(%q) = %v; want %v", tc.pattern, got, tc.want)
		}
	}
}

// FuzzPerTaskPattern: a pattern is per task exactly when two tasks of
// different ranks, on nodes of different indexes and names, expand it to
// different names.
func FuzzPerTaskPattern(f *testing.F) {
	for _, p := range []string{"in-%t", "in-%j.%s", "%%n", "%3N", `a\%t`, "%"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		a := ExpandOutputPattern(p, PatternFields{JobID: 7, StepID: "1", NodeName: "na", NodeID: 0, TaskID: 0})
		b := ExpandOutputPattern(p, PatternFields{JobID: 7, StepID: "1", NodeName: "nb", NodeID: 1, TaskID: 1})
		if got, want := PerTaskPattern(p), a != b; got != want {
			t.Fatalf("PerTaskPattern(%q) = %v; expansions %q and %q", p, got, a, b)
		}
	})
}
