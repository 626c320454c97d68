package slurm

import (
	"slices"
	"strings"
	"testing"
)

func TestParseJobRef(t *testing.T) {
	tests := []struct {
		in    string
		id    uint64
		tasks []int
		list  bool
	}{
		{"12", 12, nil, false},
		{"007", 7, nil, false},
		{"18446744073709551615", 1<<64 - 1, nil, false},
		{"12_3", 12, []int{3}, false},
		{"12_0", 12, []int{0}, false},
		{"12_1000", 12, []int{1000}, false},
		{"12_[1-3]", 12, []int{1, 2, 3}, true},
		{"12_[7,1-3]", 12, []int{1, 2, 3, 7}, true},
		{"12_[4]", 12, []int{4}, true},
		{"12_[0-6:3,2]", 12, []int{0, 2, 3, 6}, true},
	}
	for _, tc := range tests {
		got, err := ParseJobRef(tc.in)
		if err != nil || got.ID != tc.id || !slices.Equal(got.Tasks, tc.tasks) || got.List != tc.list {
			t.Errorf("ParseJobRef(%q) = %+v, %v; want {%d %v %v}", tc.in, got, err, tc.id, tc.tasks, tc.list)
		}
	}
}

func TestParseJobRefErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `job id "": want a positive integer N`},
		{"abc", `job id "abc": want a positive integer N`},
		{"0", `job id "0": want a positive integer N`},
		{"-5", `job id "-5": want a positive integer N`},
		{"+5", `job id "+5": want a positive integer N`},
		{"1.2", `job id "1.2": want a positive integer N`},
		{"18446744073709551616", `want a positive integer N`},
		{"12_", `job id "12_": array task "": not a number from 0 to 1000; ` + jobRefForms},
		{"12_x", `array task "x": not a number from 0 to 1000`},
		{"12_1001", `array task "1001": not a number from 0 to 1000`},
		{"12_+3", `array task "+3"`},
		{"12_-1", `array task "-1"`},
		{"12_[1-3", `array tasks "[1-3": no closing ]`},
		{"12_[]", `array tasks "[]": not indices`},
		{"12_[3-1]", `array tasks "[3-1]": not indices`},
		{"12_[1-3%2]", `array tasks "[1-3%2]": a %LIMIT belongs to --array`},
		{"12_[1-2000]", `array tasks "[1-2000]"`},
		{"12+1", `job id "12+1": component +1 of a heterogeneous job: heterogeneous jobs are not supported by Shoal; ` + jobRefForms},
		{"12+x", `job id "12+x": want a positive integer N`},
		{"12_3.1", `array task "3.1"`},
	}
	for _, tc := range tests {
		_, err := ParseJobRef(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseJobRef(%q) error %v; want it to contain %q", tc.in, err, tc.want)
		}
	}
	if _, err := ParseJobID("12_3"); err == nil || !strings.Contains(err.Error(), `job id "12_3": names array tasks`) {
		t.Errorf("ParseJobID(12_3) error %v; want it refused as array tasks", err)
	}
	if id, err := ParseJobID("12"); id != 12 || err != nil {
		t.Errorf("ParseJobID(12) = %d, %v", id, err)
	}
}

// FuzzParseJobRef: never panics; an error names the reference ("job id")
// and what it accepts is in range and reads back the same from String.
func FuzzParseJobRef(f *testing.F) {
	for _, s := range []string{"12", "12_3", "12_[1-3,7]", "12_[0-1000:7]", "12+1", "12_[1-3%2]", "0", "12_", "1_[", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseJobRef(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "job id ") {
				t.Fatalf("ParseJobRef(%q) error %q does not name the job id", s, err)
			}
			return
		}
		if r.ID == 0 || (r.List && len(r.Tasks) == 0) || (!r.List && r.Tasks != nil && len(r.Tasks) != 1) {
			t.Fatalf("ParseJobRef(%q) = %+v", s, r)
		}
		for i, task := range r.Tasks {
			if task < 0 || task >= MaxArraySize || i > 0 && task <= r.Tasks[i-1] {
				t.Fatalf("ParseJobRef(%q) tasks %v: out of range or order", s, r.Tasks)
			}
		}
		back, err := ParseJobRef(r.String())
		if err != nil || back.ID != r.ID || back.List != r.List || !slices.Equal(back.Tasks, r.Tasks) {
			t.Fatalf("ParseJobRef(%q) = %+v, String %q reads back as %+v, %v", s, r, r.String(), back, err)
		}
	})
}
