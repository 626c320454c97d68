package stepd

import (
	osexec "os/exec"
	"slices"
	"testing"
)

// TestViaTaskExec: a rank's command goes through the shim with its path
// and argv intact, its environment untouched; no shim leaves it alone.
func TestViaTaskExec(t *testing.T) {
	cmd := &osexec.Cmd{Path: "/usr/bin/python3", Args: []string{"python3", "train.py"}, Env: []string{"A=1"}}
	viaTaskExec(cmd, nil)
	if cmd.Path != "/usr/bin/python3" || !slices.Equal(cmd.Args, []string{"python3", "train.py"}) {
		t.Fatalf("no shim: %s %q; want it unchanged", cmd.Path, cmd.Args)
	}
	viaTaskExec(cmd, []string{"/usr/bin/shoal", TaskExecCommand})
	want := []string{"/usr/bin/shoal", TaskExecCommand, "--", "/usr/bin/python3", "python3", "train.py"}
	if cmd.Path != "/usr/bin/shoal" || !slices.Equal(cmd.Args, want) || !slices.Equal(cmd.Env, []string{"A=1"}) {
		t.Errorf("shim: %s %q env %q; want /usr/bin/shoal %q env [A=1]", cmd.Path, cmd.Args, cmd.Env, want)
	}
}
