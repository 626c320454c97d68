package slurmcli

import (
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/slurm"
)

// TestTaskHooks runs the task wrapper of --task-prolog/--task-epilog
// here: the prolog's export, unset and print lines reach the task, the
// epilog runs after it in the first environment, and the task keeps its
// exit code (as Debian's Slurm: srun -n2 --task-prolog=... exit 2 exits 2).
func TestTaskHooks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tp := write("tp.sh", "#!/bin/sh\necho 'export FOO=a=b c'\necho 'unset GONE'\necho 'print hi there'\necho 'other line'\n")
	te := write("te.sh", "#!/bin/sh\necho \"epilog FOO=$FOO GONE=$GONE\"\n")
	for _, tc := range []struct {
		prolog, epilog string
		want           string
	}{
		{tp, te, "hi there\ntask a=b c unset\nepilog FOO= GONE=here\n"},
		{tp, "", "hi there\ntask a=b c unset\n"},
		{"none", te, "task  here\nepilog FOO= GONE=here\n"},
	} {
		argv := withTaskHooks(slurm.Options{TaskProlog: tc.prolog, TaskEpilog: tc.epilog},
			[]string{"sh", "-c", `echo "task $FOO ${GONE-unset}"; exit 3`})
		cmd := osexec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "GONE=here", "FOO=")
		out, err := cmd.Output()
		var xe *osexec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != 3 || string(out) != tc.want {
			t.Errorf("prolog %q epilog %q: %q, %v; want %q and exit 3", tc.prolog, tc.epilog, out, err, tc.want)
		}
	}
	if got := withTaskHooks(slurm.Options{}, []string{"true"}); strings.Join(got, " ") != "true" {
		t.Errorf("no hooks: %q", got)
	}
}
