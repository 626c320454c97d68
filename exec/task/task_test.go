package task

import "testing"

func TestCgroupPaths(t *testing.T) {
	for _, tc := range []struct {
		key       Key
		job, task string
	}{
		{Key{7, 2, NoStep}, "job_7.2", "job_7.2/task"},
		{Key{7, 2, 0}, "job_7.2", "job_7.2/step_0"},
	} {
		if job, task := CgroupPaths(tc.key); job != tc.job || task != tc.task {
			t.Errorf("CgroupPaths(%v) = %q, %q; want %q, %q", tc.key, job, task, tc.job, tc.task)
		}
	}
}

func TestParseDirName(t *testing.T) {
	for name, want := range map[string]Key{
		"3.1": {3, 1, NoStep}, "3.2.0": {3, 2, 0}, "3.2.17": {3, 2, 17},
	} {
		if got, ok := ParseDirName(name); !ok || got != want {
			t.Errorf("ParseDirName(%q) = %v, %v; want %v", name, got, ok, want)
		}
		if got := want.DirName(); got != name {
			t.Errorf("%v.DirName() = %q; want %q", want, got, name)
		}
	}
	for _, name := range []string{"3", "0.1", "3.0", "3.1.-1", "3.1.x", "03.1", "3.1.01", "3.1.0.0", "3.1."} {
		if got, ok := ParseDirName(name); ok {
			t.Errorf("ParseDirName(%q) = %v; want no key", name, got)
		}
	}
}
