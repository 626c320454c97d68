package cluster

import (
	"strings"
	"testing"
)

// TestValidateContainer: a --container bundle reaches the log absolute
// and clean, or not at all (the FSM checks what every replica applies).
func TestValidateContainer(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"", ""},
		{"/home/ada/bundle", ""},
		{"bundle", `container "bundle": want an absolute, clean path to an OCI bundle`},
		{"/home/ada/../bundle", `container "/home/ada/../bundle": want an absolute, clean path to an OCI bundle`},
		{"/b/", `container "/b/": want an absolute, clean path to an OCI bundle`},
		{"/b\nc", `container "/b\nc": want a path without control characters`},
		{"/" + strings.Repeat("a", MaxContainerBytes), "container: 4097 bytes, want at most 4096"},
	} {
		err := ValidateContainer(tc.path)
		if got := errString(err); got != tc.want {
			t.Errorf("ValidateContainer(%.20q) = %q; want %q", tc.path, got, tc.want)
		}
	}
	spec := Spec{Command: []string{"true"}, Request: Request{Nodes: 1, TasksPerNode: 1, CPUsPerTask: 1}}
	if err := spec.Validate(); err != nil {
		t.Fatalf("Validate() of a plain spec = %v", err)
	}
	spec.Container = "rel"
	if err := spec.Validate(); err == nil || !strings.HasPrefix(err.Error(), `container "rel"`) {
		t.Errorf("Validate() of a spec with a relative bundle = %v; want the container refused", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
