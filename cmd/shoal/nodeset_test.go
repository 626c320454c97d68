package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/slurm"
)

func TestRequestFromOptionsNodeSet(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hosts")
	if err := os.WriteFile(file, []byte("gpu[1-2]\ngpu7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args              []string
		nodes             int
		nodelist, exclude []string
		constraint        string
		exclusive         bool
		wantErr           string
	}{
		{args: []string{"-w", "n[1-2]", "-x", "n3", "-C", "ib&(a100|h100)", "--exclusive"}, nodes: 2,
			nodelist: []string{"n1", "n2"}, exclude: []string{"n3"}, constraint: "ib&(a100|h100)", exclusive: true},
		{args: []string{"-N", "3", "--nodelist=n1"}, nodes: 3, nodelist: []string{"n1"}},
		{args: []string{"-w", file}, nodes: 3, nodelist: []string{"gpu1", "gpu2", "gpu7"}},
		{args: []string{"-C", "a*2"}, wantErr: "feature counts"},
		{args: []string{"-C", "[a|b]"}, wantErr: "brackets"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			opts, _, err := slurm.ParseArgs(slurm.Sbatch, append(tt.args, "--wrap", "true"))
			if err != nil {
				t.Fatalf("ParseArgs: %v", err)
			}
			req, _, err := requestFromOptions(opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("requestFromOptions(%v) error = %v; want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("requestFromOptions(%v): %v", tt.args, err)
			}
			if req.Nodes != tt.nodes || !slices.Equal(req.NodeList, tt.nodelist) || !slices.Equal(req.Exclude, tt.exclude) ||
				req.Constraint != tt.constraint || req.Exclusive != tt.exclusive {
				t.Errorf("requestFromOptions(%v) = nodes %d, -w %v, -x %v, -C %q, exclusive %v; want %d, %v, %v, %q, %v",
					tt.args, req.Nodes, req.NodeList, req.Exclude, req.Constraint, req.Exclusive,
					tt.nodes, tt.nodelist, tt.exclude, tt.constraint, tt.exclusive)
			}
		})
	}
}
