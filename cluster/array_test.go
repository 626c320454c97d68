package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestIndexList(t *testing.T) {
	for _, tc := range []struct {
		in       []int
		throttle int
		want     string
	}{
		{[]int{0, 1, 2, 3}, 0, "0-3"},
		{[]int{0, 1, 2, 3}, 4, "0-3%4"},
		{[]int{5}, 0, "5"},
		{[]int{5, 7}, 0, "5,7"},
		{[]int{1, 3, 5, 7}, 0, "1-7:2"},
		{[]int{0, 1, 2, 5, 9, 10}, 2, "0-2,5,9-10%2"},
		{[]int{1, 2}, 0, "1-2"},
	} {
		if got := IndexList(tc.in, tc.throttle); got != tc.want {
			t.Errorf("IndexList(%v, %d) = %q, want %q", tc.in, tc.throttle, got, tc.want)
		}
	}
}

func TestArrayElements(t *testing.T) {
	a := &ArraySpec{Indices: []int{3, 5, 7}, Throttle: 2}
	els := a.Elements(40)
	if len(els) != 3 {
		t.Fatalf("%d elements, want 3", len(els))
	}
	want := ArrayTask{JobID: 40, TaskID: 5, Count: 3, Min: 3, Max: 7, Step: 2, Throttle: 2}
	if els[1] != want {
		t.Errorf("element 1 = %+v, want %+v", els[1], want)
	}
	if got := els[2].Name(); got != "40_7" {
		t.Errorf("Name = %q, want 40_7", got)
	}
	if step := (&ArraySpec{Indices: []int{1, 2, 4}}).Elements(1)[0].Step; step != 0 {
		t.Errorf("irregular indices: step %d, want 0", step)
	}
	if step := (&ArraySpec{Indices: []int{4}}).Elements(1)[0].Step; step != 1 {
		t.Errorf("one index: step %d, want 1 (as Slurm's SLURM_ARRAY_TASK_STEP)", step)
	}
}

func TestQueueFieldsValidate(t *testing.T) {
	base := Spec{Command: []string{"true"}, Request: Request{Nodes: 1, TasksPerNode: 1}}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string // "" for valid
	}{
		{"array ok", func(s *Spec) { s.Array = &ArraySpec{Indices: []int{0, 1}, Throttle: 1} }, ""},
		{"array empty", func(s *Spec) { s.Array = &ArraySpec{} }, "array: no indices"},
		{"array unsorted", func(s *Spec) { s.Array = &ArraySpec{Indices: []int{2, 1}} }, "want ascending and distinct"},
		{"array index", func(s *Spec) { s.Array = &ArraySpec{Indices: []int{1001}} }, "array index 1001"},
		{"array throttle", func(s *Spec) { s.Array = &ArraySpec{Indices: []int{1}, Throttle: -1} }, "array throttle -1"},
		{"array too big in all", func(s *Spec) {
			s.Command = []string{strings.Repeat("x", 100<<10)}
			s.Array = &ArraySpec{Indices: make([]int, 1000)}
			for i := range s.Array.Indices {
				s.Array.Indices[i] = i
			}
		}, "bytes in all"},
		{"dep ok", func(s *Spec) {
			s.Dependency = &Dependency{Conditions: []DepCondition{{Type: DepAfter, Jobs: []DepJob{{ID: 1, Task: -1, Delay: time.Minute}}}}}
		}, ""},
		{"dep type", func(s *Spec) {
			s.Dependency = &Dependency{Conditions: []DepCondition{{Type: "before", Jobs: []DepJob{{ID: 1, Task: -1}}}}}
		}, `type "before" unknown`},
		{"dep no jobs", func(s *Spec) { s.Dependency = &Dependency{Conditions: []DepCondition{{Type: DepAfterOK}}} }, "names no job"},
		{"dep job 0", func(s *Spec) {
			s.Dependency = &Dependency{Conditions: []DepCondition{{Type: DepAfterOK, Jobs: []DepJob{{Task: -1}}}}}
		}, "job id 0"},
		{"dep delay on afterok", func(s *Spec) {
			s.Dependency = &Dependency{Conditions: []DepCondition{{Type: DepAfterOK, Jobs: []DepJob{{ID: 2, Task: -1, Delay: time.Minute}}}}}
		}, "+MINUTES is for after only"},
		{"dep none", func(s *Spec) { s.Dependency = &Dependency{} }, "no conditions"},
		{"singleton with job", func(s *Spec) {
			s.Dependency = &Dependency{Conditions: []DepCondition{{Type: DepSingleton, Jobs: []DepJob{{ID: 1}}}}}
		}, "singleton names no jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.edit(&s)
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDependencyString(t *testing.T) {
	d := &Dependency{Any: true, Conditions: []DepCondition{
		{Type: DepAfter, Jobs: []DepJob{{ID: 3, Task: -1, Delay: 2 * time.Minute}}},
		{Type: DepAfterOK, Jobs: []DepJob{{ID: 4, Task: 2}, {ID: 5, Task: -1}}},
		{Type: DepSingleton},
	}}
	if got, want := d.String(), "after:3+2?afterok:4_2:5?singleton"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	c := d.Clone()
	c.Conditions[1].Jobs[0].ID = 99
	if d.Conditions[1].Jobs[0].ID != 4 {
		t.Error("Clone shares the jobs slice")
	}
}
