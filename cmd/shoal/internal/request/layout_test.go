package request

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

// TestRequestFromOptionsLayout: -n need not divide by -N; the busiest
// node sizes TasksPerNode, and -m travels as written back.
func TestRequestFromOptionsLayout(t *testing.T) {
	tests := []struct {
		args               []string
		nodes, tpn, ntasks int
		dist, wantErr      string
	}{
		{args: []string{"-n", "5", "-N", "2"}, nodes: 2, tpn: 3, ntasks: 5},
		{args: []string{"-n", "4", "-N", "2"}, nodes: 2, tpn: 2, ntasks: 4},
		{args: []string{"-n", "5", "-N", "2", "-m", "cyclic"}, nodes: 2, tpn: 3, ntasks: 5, dist: "cyclic"},
		{args: []string{"-n", "5", "-N", "2", "-m", "plane=4"}, nodes: 2, tpn: 4, ntasks: 5, dist: "plane=4"},
		{args: []string{"-n", "3", "--mincpus=8"}, nodes: 1, tpn: 3, ntasks: 3},
		{args: []string{"-N", "2", "--ntasks-per-node=2", "-m", "cyclic:fcyclic"}, nodes: 2, tpn: 2, ntasks: 4, dist: "cyclic:fcyclic"},
		{args: []string{"-N", "2", "--ntasks-per-node=2", "-m", "block"}, nodes: 2, tpn: 2, dist: "block"},
		{args: []string{"-n", "1", "-N", "2"}, wantErr: "at least one task"},
		{args: []string{"-N", "2", "--gpus-per-node=4", "--ntasks-per-gpu=2"}, nodes: 2, tpn: 8},
		{args: []string{"-n", "4", "--ntasks-per-gpu=2"}, nodes: 1, tpn: 4, ntasks: 4},
		{args: []string{"--ntasks-per-gpu=2"}, wantErr: "give the GPUs per node"},
		{args: []string{"-n", "5", "-w", "n[1-3]"}, nodes: 3, tpn: 2, ntasks: 5},
		{args: []string{"-n", "2", "-w", "n[1-3]"}, wantErr: "at least one task"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			opts, req, ok := sbatchRequest(t, tt.args, tt.wantErr)
			if !ok {
				return
			}
			if tt.args[len(tt.args)-1] == "--ntasks-per-gpu=2" && tt.ntasks == 4 && req.GPUsPerNode != 2 {
				t.Errorf("-n 4 --ntasks-per-gpu=2: %d GPUs per node; want 2", req.GPUsPerNode)
			}
			if want := opts.MinCPUs; req.MinCPUs != want {
				t.Errorf("MinCPUs = %d; want --mincpus %d", req.MinCPUs, want)
			}
			if req.Nodes != tt.nodes || req.TasksPerNode != tt.tpn || req.NTasks != tt.ntasks || req.Distribution != tt.dist {
				t.Errorf("FromOptions(%v) = nodes %d, tasks_per_node %d, ntasks %d, distribution %q; want %d, %d, %d, %q",
					tt.args, req.Nodes, req.TasksPerNode, req.NTasks, req.Distribution, tt.nodes, tt.tpn, tt.ntasks, tt.dist)
			}
		})
	}
}

// TestExportFile: --export-file's NUL-separated definitions reach the
// job's environment; a malformed one is refused by number.
func TestExportFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "env")
	if err := os.WriteFile(good, []byte("A=1\x00B=two words\nline\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, _, err := slurm.ParseArgs(slurm.Sbatch, []string{"--export=NONE", "--export-file", good, "--wrap", "true"})
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := FromOptions(opts)
	if err != nil {
		t.Fatalf("FromOptions: %v", err)
	}
	if want := []string{"A=1", "B=two words\nline"}; !slices.Equal(req.Env, want) {
		t.Errorf("Env = %q; want %q", req.Env, want)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("A=1\x00oops\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.ExportFile = bad
	if _, _, err := FromOptions(opts); err == nil || !strings.Contains(err.Error(), "definition 2") {
		t.Errorf("malformed file: %v; want definition 2 named", err)
	}
	opts.ExportFile = "1"
	if _, _, err := FromOptions(opts); err == nil || !strings.Contains(err.Error(), "standard input and output") {
		t.Errorf("--export-file 1: %v; want it refused", err)
	}
}

// sbatchRequest parses sbatch's args (with --wrap true) and builds their
// request. With wantErr the build must fail with an error containing it,
// and ok is false.
func sbatchRequest(t *testing.T, args []string, wantErr string) (opts slurm.Options, req api.SubmitRequest, ok bool) {
	t.Helper()
	opts, _, err := slurm.ParseArgs(slurm.Sbatch, append(args, "--wrap", "true"))
	if err != nil {
		t.Fatalf("ParseArgs: %v", err)
	}
	req, _, err = FromOptions(opts)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("FromOptions(%v) error = %v; want one containing %q", args, err, wantErr)
		}
		return opts, req, false
	}
	if err != nil {
		t.Fatalf("FromOptions(%v): %v", args, err)
	}
	return opts, req, true
}
