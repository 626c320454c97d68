package rankexec

import (
	"go/build"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParseTaskNamespaceArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    NamespaceArgs
		wantErr string
	}{
		{
			name: "root rank",
			args: []string{"--hostname", "n1", "--hosts", "/d/hosts", "--env-fd", "3", "--dir", "/w", "--", "/bin/sh", "sh", "-c", "x"},
			want: NamespaceArgs{Hostname: "n1", Hosts: "/d/hosts", Dir: "/w", EnvFD: 3, Argv: []string{"/bin/sh", "sh", "-c", "x"}},
		},
		{
			name: "user rank",
			args: []string{"--hostname", "n2", "--hosts", "/h", "--uid", "1000", "--gid", "100", "--groups", "100,27",
				"--pdeathsig", "9", "--env-fd", "4", "--", "/dev/fd/3", "/dev/fd/3", "--", "a"},
			want: NamespaceArgs{Hostname: "n2", Hosts: "/h", Pdeathsig: syscall.SIGKILL, EnvFD: 4,
				Cred: &syscall.Credential{Uid: 1000, Gid: 100, Groups: []uint32{100, 27}},
				Argv: []string{"/dev/fd/3", "/dev/fd/3", "--", "a"}},
		},
		{
			name: "probe",
			args: []string{"--probe", "--hostname", "n1", "--hosts", "/etc/hosts"},
			want: NamespaceArgs{Hostname: "n1", Hosts: "/etc/hosts", Probe: true, EnvFD: -1},
		},
		// The task's environment never falls back to the helper's own.
		{name: "no env fd", args: []string{"--hostname", "n1", "--hosts", "/h", "--", "/bin/true", "true"}, wantErr: "--env-fd: missing"},
		{name: "env fd on stdio", args: []string{"--hostname", "n1", "--hosts", "/h", "--env-fd", "2", "--", "/bin/true", "true"}, wantErr: `--env-fd "2"`},
		{name: "bad env fd", args: []string{"--hostname", "n1", "--hosts", "/h", "--env-fd", "x"}, wantErr: `--env-fd "x"`},
		{name: "no hostname", args: []string{"--hosts", "/h", "--", "/bin/true", "true"}, wantErr: "--hostname: missing"},
		{name: "no hosts", args: []string{"--hostname", "n1", "--", "/bin/true", "true"}, wantErr: "--hosts: missing"},
		{name: "no program", args: []string{"--hostname", "n1", "--hosts", "/h", "--", "/bin/true"}, wantErr: "after --"},
		{name: "uid alone", args: []string{"--hostname", "n1", "--hosts", "/h", "--uid", "5", "--", "/bin/true", "true"}, wantErr: "--uid and --gid"},
		{name: "bad uid", args: []string{"--hostname", "n1", "--hosts", "/h", "--uid", "-5", "--gid", "1"}, wantErr: `--uid "-5"`},
		{name: "bad group", args: []string{"--hostname", "n1", "--hosts", "/h", "--groups", "1,x"}, wantErr: `--groups "1,x"`},
		{name: "bad signal", args: []string{"--hostname", "n1", "--hosts", "/h", "--pdeathsig", "99"}, wantErr: `--pdeathsig "99"`},
		{name: "missing value", args: []string{"--hostname"}, wantErr: "--hostname: missing value"},
		{name: "unknown", args: []string{"--mount", "x"}, wantErr: `unknown option "--mount"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseNamespaceArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v; want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Hostname != tt.want.Hostname || got.Hosts != tt.want.Hosts || got.Dir != tt.want.Dir ||
				got.Pdeathsig != tt.want.Pdeathsig || got.Probe != tt.want.Probe || got.EnvFD != tt.want.EnvFD ||
				!slices.Equal(got.Argv, tt.want.Argv) {
				t.Errorf("got %+v; want %+v", got, tt.want)
			}
			if (got.Cred == nil) != (tt.want.Cred == nil) {
				t.Fatalf("cred = %+v; want %+v", got.Cred, tt.want.Cred)
			}
			if c, w := got.Cred, tt.want.Cred; c != nil && (c.Uid != w.Uid || c.Gid != w.Gid || !slices.Equal(c.Groups, w.Groups)) {
				t.Errorf("cred = %+v; want %+v", c, w)
			}
		})
	}
}

// TestWithTaskPID: the rank's pid replaces a stale SLURM_TASK_PID.
func TestWithTaskPID(t *testing.T) {
	if got := WithTaskPID([]string{"SLURM_TASK_PID=1", "B=2"}, 42); !slices.Equal(got, []string{"B=2", "SLURM_TASK_PID=42"}) {
		t.Errorf("WithTaskPID = %q; want the stale value replaced", got)
	}
}

// TestImportsOnlyStd: every rank starts through this package's code in
// shoal-slurm; an import of one of Shoal's packages or another module
// (other than x/sys) would add its initialisation to every rank's start.
func TestImportsOnlyStd(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(imp, ".") && imp != "golang.org/x/sys/unix" {
			t.Errorf("rankexec imports %s", imp)
		}
	}
}

// TestMain: the dispatch takes this package's commands only.
func TestMainDispatch(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		ok   bool
	}{
		{[]string{"shoal"}, 0, false},
		{[]string{"shoal", "sbatch"}, 0, false},
		{[]string{"shoal", ExecCommand, "--probe"}, 0, true},
		{[]string{"shoal", ExecCommand, "x"}, 1, true},
		{[]string{"shoal", NamespaceCommand, "--unknown", "v"}, 1, true},
	} {
		if code, ok := Main(tc.args); code != tc.code || ok != tc.ok {
			t.Errorf("Main(%q) = %d, %v; want %d, %v", tc.args, code, ok, tc.code, tc.ok)
		}
	}
}
