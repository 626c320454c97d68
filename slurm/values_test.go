package slurm

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseArray(t *testing.T) {
	tests := []struct {
		in       string
		want     []int
		throttle int
		str      string
	}{
		{"0-15%4", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 4, "0-15%4"},
		{"1,3,5-7:2", []int{1, 3, 5, 7}, 0, "1,3,5,7"},
		{"0-7:2%2", []int{0, 2, 4, 6}, 2, "0,2,4,6%2"},
		{"7,3,3,1-2", []int{1, 2, 3, 7}, 0, "1-3,7"},
		{"1000", []int{1000}, 0, "1000"},
		{"0-15:4", []int{0, 4, 8, 12}, 0, "0,4,8,12"},
		{"5-5", []int{5}, 0, "5"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseArray(tt.in)
			if err != nil || !slices.Equal(got.Indices, tt.want) || got.Throttle != tt.throttle {
				t.Fatalf("ParseArray(%q) = %v, %v; want %v%%%d", tt.in, got, err, tt.want, tt.throttle)
			}
			if s := got.String(); s != tt.str {
				t.Errorf("ParseArray(%q).String() = %q; want %q", tt.in, s, tt.str)
			}
		})
	}
}

func TestParseArrayErrors(t *testing.T) {
	tests := []struct{ in, why string }{
		{"", `bad item ""; `},
		{"0-x", `bad item "0-x"; `},
		{"1001", "index 1001 is above 1000 (MaxArraySize 1001); "},
		{"5-1", `item "5-1": the range ends below its start; `},
		{"1:2", `item "1:2": a :STEP needs a range N-M; `},
		{"0-4:0", `item "0-4:0": the step must be a positive number; `},
		{"0-4%0", "the %LIMIT must be a positive number; "},
		{"0-4%", "the %LIMIT must be a positive number; "},
		{"-1", `bad item "-1"; `},
		{"1,,2", `bad item ""; `},
		{" 1", `bad item " 1"; `},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseArray(tt.in)
			want := `--array "` + tt.in + `": ` + tt.why + arrayForms
			if err == nil || err.Error() != want {
				t.Errorf("ParseArray(%q) error = %v; want %q", tt.in, err, want)
			}
		})
	}
}

func FuzzParseArray(f *testing.F) {
	for _, s := range []string{"0-15%4", "1,3,5-7:2", "0-7:2%2", "1000", "0-1000:999", "3-1", "%", "1:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseArray(s)
		if err != nil {
			if !strings.Contains(err.Error(), arrayForms) {
				t.Fatalf("ParseArray(%q) error %q does not quote the accepted forms", s, err)
			}
			return
		}
		if !slices.IsSorted(a.Indices) || len(slices.Compact(slices.Clone(a.Indices))) != len(a.Indices) {
			t.Fatalf("ParseArray(%q) = %v: not sorted and unique", s, a.Indices)
		}
		for _, i := range a.Indices {
			if i < 0 || i >= MaxArraySize {
				t.Fatalf("ParseArray(%q) gave index %d", s, i)
			}
		}
		b, err := ParseArray(a.String())
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("ParseArray(%q) = %v, %v; want %v (round trip of %q)", a.String(), b, err, a, s)
		}
	})
}

func TestParseDependency(t *testing.T) {
	job := func(id uint64) DepJob { return DepJob{ID: id, Task: -1} }
	tests := []struct {
		in   string
		want Dependency
		str  string
	}{
		{"afterok:20:21,afterany:23", Dependency{Conditions: []DepCondition{
			{Type: DepAfterOK, Jobs: []DepJob{job(20), job(21)}}, {Type: DepAfterAny, Jobs: []DepJob{job(23)}}}},
			"afterok:20:21,afterany:23"},
		{"afterok:20:21?afterany:23", Dependency{Any: true, Conditions: []DepCondition{
			{Type: DepAfterOK, Jobs: []DepJob{job(20), job(21)}}, {Type: DepAfterAny, Jobs: []DepJob{job(23)}}}},
			"afterok:20:21?afterany:23"},
		{"after:5+10:6", Dependency{Conditions: []DepCondition{
			{Type: DepAfter, Jobs: []DepJob{{ID: 5, Task: -1, Delay: 10 * time.Minute}, job(6)}}}}, "after:5+10:6"},
		{"afternotok:123_4:123_*", Dependency{Conditions: []DepCondition{
			{Type: DepAfterNotOK, Jobs: []DepJob{{ID: 123, Task: 4}, {ID: 123, Task: -1, AllTasks: true}}}}}, "afternotok:123_4:123_*"},
		{"singleton", Dependency{Conditions: []DepCondition{{Type: DepSingleton}}}, "singleton"},
		{"AfterOK:1,SINGLETON", Dependency{Conditions: []DepCondition{{Type: DepAfterOK, Jobs: []DepJob{job(1)}}, {Type: DepSingleton}}}, "afterok:1,singleton"},
		{"12:13", Dependency{Conditions: []DepCondition{{Type: DepAfterAny, Jobs: []DepJob{job(12), job(13)}}}}, "afterany:12:13"},
		{"aftercorr:7", Dependency{Conditions: []DepCondition{{Type: DepAfterCorr, Jobs: []DepJob{job(7)}}}}, "aftercorr:7"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDependency(tt.in)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseDependency(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if s := got.String(); s != tt.str {
				t.Errorf("ParseDependency(%q).String() = %q; want %q", tt.in, s, tt.str)
			}
		})
	}
}

func TestParseDependencyErrors(t *testing.T) {
	tests := []struct{ in, part, why string }{
		{"afterok", "afterok", "is not a job id"},
		{"afterok:", "", "is not a job id"},
		{"afterok:x", "x", "is not a job id"},
		{"afterfoo:1", "afterfoo:1", "has an unknown type"},
		{"afterok:1+5", "1+5", "is not a job id"},
		{"after:1+x", "1+x", "is not a job id"},
		{"afterok:1_x", "1_x", "is not a job id"},
		{"afterok:0", "0", "is not a job id"},
		{"afterok:1,,afterok:2", "", "is not a job id"},
		{"singleton:1", "singleton:1", "has an unknown type"},
		{"afterok:1?afterok:2,afterok:3", "afterok:1?afterok:2,afterok:3", "mixes ',' and '?' (Slurm allows one kind of separator)"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseDependency(tt.in)
			want := `--dependency "` + tt.in + `": "` + tt.part + `" ` + tt.why + "; " + dependencyForms
			if err == nil || err.Error() != want {
				t.Errorf("ParseDependency(%q) error = %v; want %q", tt.in, err, want)
			}
		})
	}
}

func FuzzParseDependency(f *testing.F) {
	for _, s := range []string{"afterok:20:21,afterany:23", "afterok:1?after:2+5", "singleton", "12:13", "afternotok:3_4:3_*", "after:1+", "?", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDependency(s)
		if err != nil {
			return
		}
		again, err := ParseDependency(d.String())
		if err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("ParseDependency(%q) = %+v, %v; want %+v (round trip of %q)", d.String(), again, err, d, s)
		}
	})
}

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in   string
		want Signal
	}{
		{"USR1", Signal{Name: "USR1", Number: 10, Seconds: 60}},
		{"sigterm@30", Signal{Name: "TERM", Number: 15, Seconds: 30}},
		{"B:SIGUSR2@0", Signal{Name: "USR2", Number: 12, Seconds: 0, BatchOnly: true}},
		{"10@600", Signal{Name: "USR1", Number: 10, Seconds: 600}},
		{"R:INT", Signal{Name: "INT", Number: 2, Seconds: 60}},
		{"RB:2", Signal{Name: "INT", Number: 2, Seconds: 60, BatchOnly: true}},
		{"40", Signal{Number: 40, Seconds: 60}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSignal(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("ParseSignal(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			again, err := ParseSignal(got.String())
			if err != nil || again != got {
				t.Errorf("ParseSignal(%q) = %+v, %v; want %+v", got.String(), again, err, got)
			}
		})
	}
	for _, in := range []string{"", "FOO", "0", "65", "USR1@", "USR1@65536", "X:USR1", "USR1@-1", "USR1@1s", "B:"} {
		t.Run("bad "+in, func(t *testing.T) {
			_, err := ParseSignal(in)
			want := `--signal "` + in + `": ` + signalForms
			if err == nil || err.Error() != want {
				t.Errorf("ParseSignal(%q) error = %v; want %q", in, err, want)
			}
		})
	}
}

func TestParseMemory(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"0", 0}, {"4000", 4000}, {"512M", 512}, {"1k", 1}, {"1025K", 2}, {"80G", 80 << 10},
		{"32GB", 32 << 10}, {"2t", 2 << 20}, {"1mb", 1},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMemory(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("ParseMemory(%q) = %d, %v; want %d, nil", tt.in, got, err, tt.want)
			}
		})
	}
	for _, in := range []string{"", "G", "1X", "1GiB", "-1", "1.5G", " 1", "99999999999T", "1G "} {
		t.Run("bad "+in, func(t *testing.T) {
			got, err := ParseMemory(in)
			want := `memory size "` + in + `": ` + memoryForms
			if err == nil || err.Error() != want {
				t.Errorf("ParseMemory(%q) = %d, %v; want error %q", in, got, err, want)
			}
		})
	}
}

func TestParseGres(t *testing.T) {
	tests := []struct {
		in   string
		want []Gres
	}{
		{"gpu", []Gres{{"gpu", "", 1}}},
		{"gpu:2", []Gres{{"gpu", "", 2}}},
		{"gpu:a100:4", []Gres{{"gpu", "a100", 4}}},
		{"gpu:a100", []Gres{{"gpu", "a100", 1}}},
		{"gpu:0", []Gres{{"gpu", "", 0}}},
		{"nic:1,gpu:tesla:2k", []Gres{{"nic", "", 1}, {"gpu", "tesla", 2048}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseGres(tt.in)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ParseGres(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
	for _, in := range []string{"", "gpu:", "gpu:a:b", "gpu:a:1:2", ":2", "gpu,", "gpu:-1", "gpu:99999999999"} {
		t.Run("bad "+in, func(t *testing.T) {
			if got, err := ParseGres(in); err == nil || !strings.HasSuffix(err.Error(), gresForms) {
				t.Errorf("ParseGres(%q) = %v, %v; want an error quoting %q", in, got, err, gresForms)
			}
		})
	}
}

func TestParseExport(t *testing.T) {
	tests := []struct {
		in   string
		want Export
		str  string
	}{
		{"ALL", Export{All: true}, "ALL"},
		{"none", Export{}, "NONE"},
		{"EDITOR,ARG1=test", Export{Vars: []ExportVar{{"EDITOR", "", false}, {"ARG1", "test", true}}}, "EDITOR,ARG1=test"},
		{"ALL,EDITOR=/bin/emacs", Export{All: true, Vars: []ExportVar{{"EDITOR", "/bin/emacs", true}}}, "ALL,EDITOR=/bin/emacs"},
		{"NONE,X=", Export{Vars: []ExportVar{{"X", "", true}}}, "X="},
		{"A=b=c", Export{Vars: []ExportVar{{"A", "b=c", true}}}, "A=b=c"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseExport(tt.in)
			if err != nil || !reflect.DeepEqual(got, tt.want) || got.String() != tt.str {
				t.Errorf("ParseExport(%q) = %+v (%q), %v; want %+v (%q)", tt.in, got, got.String(), err, tt.want, tt.str)
			}
		})
	}
	for _, in := range []string{"", "1A", "A,,B", "A-B=1", "=1"} {
		t.Run("bad "+in, func(t *testing.T) {
			if got, err := ParseExport(in); err == nil || !strings.HasSuffix(err.Error(), exportForms) {
				t.Errorf("ParseExport(%q) = %v, %v; want an error quoting %q", in, got, err, exportForms)
			}
		})
	}
}

func TestParseNodes(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi int
	}{
		{"1", 1, 1}, {"2-4", 2, 4}, {"1k", 1024, 1024}, {"2-1m", 2, 1 << 20}, {"3-3", 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			lo, hi, err := ParseNodes(tt.in)
			if err != nil || lo != tt.lo || hi != tt.hi {
				t.Errorf("ParseNodes(%q) = %d, %d, %v; want %d, %d, nil", tt.in, lo, hi, err, tt.lo, tt.hi)
			}
		})
	}
	for _, in := range []string{"", "0", "x", "2-", "-3", "1-2-3", "3-2", "1.5", "99999999999", "4096m"} {
		t.Run("bad "+in, func(t *testing.T) {
			if lo, hi, err := ParseNodes(in); err == nil || !strings.HasSuffix(err.Error(), nodesForms) {
				t.Errorf("ParseNodes(%q) = %d, %d, %v; want an error quoting %q", in, lo, hi, err, nodesForms)
			}
		})
	}
}

func TestParseSwitches(t *testing.T) {
	tests := []struct {
		in   string
		want Switches
		str  string
	}{
		{"1", Switches{Count: 1}, "1"},
		{"2@10", Switches{Count: 2, MaxWait: 10 * time.Minute}, "2@10:00"},
		{"1@1-00:00:00", Switches{Count: 1, MaxWait: 24 * time.Hour}, "1@1-00:00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSwitches(tt.in)
			if err != nil || got != tt.want || got.String() != tt.str {
				t.Errorf("ParseSwitches(%q) = %+v (%q), %v; want %+v (%q)", tt.in, got, got.String(), err, tt.want, tt.str)
			}
		})
	}
	for _, in := range []string{"", "x", "0", "2@", "2@x", "@5"} {
		t.Run("bad "+in, func(t *testing.T) {
			if got, err := ParseSwitches(in); err == nil || !strings.HasSuffix(err.Error(), switchesForms) {
				t.Errorf("ParseSwitches(%q) = %v, %v; want an error quoting %q", in, got, err, switchesForms)
			}
		})
	}
}

func TestCheckConstraint(t *testing.T) {
	for _, in := range []string{"intel", "intel&gpu", "intel|amd", "[rack1|rack2|rack3]", "[rack1*2&rack2*4]",
		"graphics*4", "[(knl&snc4&flat)*4&haswell*1]", "(a|b)&c", "a.b-c_d"} {
		t.Run(in, func(t *testing.T) {
			if err := checkConstraint(in); err != nil {
				t.Errorf("checkConstraint(%q) = %v; want nil", in, err)
			}
		})
	}
	for _, in := range []string{"", "a&", "&a", "a||b", "[a]&[b]", "[[a]]", "(a", "a)", "[a", "a*", "a*0", "a b", "a,b", "((((((((((((((((((a))))))))))))))))))"} {
		t.Run("bad "+in, func(t *testing.T) {
			if err := checkConstraint(in); err == nil || !strings.HasSuffix(err.Error(), constraintForms) {
				t.Errorf("checkConstraint(%q) = %v; want an error quoting %q", in, err, constraintForms)
			}
		})
	}
}

func TestExpandOutputPattern(t *testing.T) {
	job := PatternFields{JobID: 128, StepID: "0", User: "ada", JobName: "train", NodeName: "n1", NodeID: 1, TaskID: 3}
	arr := PatternFields{JobID: 130, IsArray: true, ArrayJobID: 128, ArrayTaskID: 2, StepID: "batch", User: "ada", JobName: "sweep"}
	tests := []struct {
		pattern string
		f       PatternFields
		want    string
	}{
		{"job%J.out", job, "job128.0.out"},
		{"job%4j.out", job, "job0128.out"},
		{"job%j-%2t.out", job, "job128-03.out"},
		{"%x-%u-%N-%n.log", job, "train-ada-n1-1.log"},
		{"100%%-%s", job, "100%-0"},
		{"%A_%a", job, "128_4294967294"},
		{DefaultOutput(false), job, "slurm-128.out"},
		{DefaultOutput(true), arr, "slurm-128_2.out"},
		{"%J %s %3a", arr, "130.batch batch 002"},
		{`\%j.out`, job, "%j.out"},
		{"%q%", job, "%q%"},
		{"%12", job, "%12"},
		{"%99999999999999999999j", job, strings.Repeat("0", maxPad-3) + "128"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			if got := ExpandOutputPattern(tt.pattern, tt.f); got != tt.want {
				t.Errorf("ExpandOutputPattern(%q) = %q; want %q", tt.pattern, got, tt.want)
			}
		})
	}
}

func TestWrapScript(t *testing.T) {
	s := WrapScript("hostname")
	o, rest, err := ParseBatch(s, nil)
	if err != nil || len(rest) != 0 || len(o.Set) != 0 {
		t.Errorf("ParseBatch(WrapScript) = %+v, %q, %v; want no options", o, rest, err)
	}
	if want := "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nhostname\n"; string(s) != want {
		t.Errorf("WrapScript(hostname) = %q; want %q", s, want)
	}
}

func TestDigitsEnd(t *testing.T) {
	for _, tc := range []struct {
		s    string
		i    int
		want int
	}{
		{"", 0, 0},
		{"x", 0, 0},
		{"123", 0, 3},
		{"12G", 0, 2},
		{"%12j", 1, 3},
		{"%j", 1, 1},
		{"*7", 1, 2},
		{"9", 1, 1},
	} {
		if got := digitsEnd(tc.s, tc.i); got != tc.want {
			t.Errorf("digitsEnd(%q, %d) = %d; want %d", tc.s, tc.i, got, tc.want)
		}
	}
}
