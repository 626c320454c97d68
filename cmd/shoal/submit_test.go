package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

// runSubmit runs shoal submit's flags and returns the request it would
// send.
func runSubmit(t *testing.T, args ...string) (api.SubmitRequest, error) {
	t.Helper()
	var got api.SubmitRequest
	cmd := submitCmd(func(_ *cobra.Command, req api.SubmitRequest, _ bool) error {
		got = req
		return nil
	})
	cmd.SetArgs(append(args, "--", "true"))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return got, err
}

// TestSubmitSameRequestAsSbatch: shoal submit and sbatch read the options
// they share through one request parser, so the same words make the same
// request. sbatch -N 2-4 always started an elastic job; shoal submit
// --nodes 2-4 was refused ("invalid syntax") until they shared it, and a
// relative --chdir was made absolute by sbatch only.
func TestSubmitSameRequestAsSbatch(t *testing.T) {
	tests := []struct {
		submit, sbatch []string
		nodes, max     int
	}{
		{[]string{"--nodes", "2-4"}, []string{"-N", "2-4"}, 2, 4},
		{[]string{"-N", "2-4"}, []string{"--nodes=2-4"}, 2, 4},
		{[]string{"--nodes", "3"}, []string{"-N", "3"}, 3, 0},
		{[]string{"--nodes", "3-3"}, []string{"-N", "3-3"}, 3, 0},
		{[]string{"--nodes=2-4", "--gpus", "8"}, []string{"-N", "2-4", "--gpus", "8"}, 2, 4},
		{[]string{"--gpus", "6"}, []string{"--gpus", "6"}, 1, 0},
		{[]string{"--nodes", "2", "--chdir", "sub/dir"}, []string{"-N", "2", "--chdir", "sub/dir"}, 2, 0},
		{nil, nil, 1, 0},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.submit, " "), func(t *testing.T) {
			sub, err := runSubmit(t, tc.submit...)
			if err != nil {
				t.Fatalf("shoal submit %v: %v", tc.submit, err)
			}
			opts, _, err := slurm.ParseArgs(slurm.Sbatch, append(tc.sbatch, "--wrap", "true"))
			if err != nil {
				t.Fatalf("sbatch %v: %v", tc.sbatch, err)
			}
			sb, _, err := request.FromOptions(opts)
			if err != nil {
				t.Fatalf("sbatch %v: %v", tc.sbatch, err)
			}
			type shape struct {
				Nodes, NodesMax, GPUsPerNode, GPUsTotal, TasksPerNode, CPUsPerTask int
				GPUOption, WorkDir                                                 string
			}
			of := func(r api.SubmitRequest) shape {
				return shape{r.Nodes, r.NodesMax, r.GPUsPerNode, r.GPUsTotal, r.TasksPerNode, r.CPUsPerTask, string(r.GPUOption), r.WorkDir}
			}
			if of(sub) != of(sb) {
				t.Errorf("shoal submit %v = %+v; sbatch %v = %+v; want the same", tc.submit, of(sub), tc.sbatch, of(sb))
			}
			if sub.Nodes != tc.nodes || sub.NodesMax != tc.max {
				t.Errorf("shoal submit %v: nodes %d-%d; want %d-%d", tc.submit, sub.Nodes, sub.NodesMax, tc.nodes, tc.max)
			}
		})
	}
}

func TestSubmitNodesErrors(t *testing.T) {
	for in, want := range map[string]string{
		"0":   "--nodes 0: want at least 1",
		"-2":  "--nodes -2: want at least 1",
		"4-2": `--nodes "4-2": the maximum 2 is below the minimum 4`,
		"x":   `--nodes "x": want N or N-M`,
		"2-":  `--nodes "2-": want N or N-M`,
	} {
		if _, err := runSubmit(t, "--nodes", in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("shoal submit --nodes %s: error %v; want it to contain %q", in, err, want)
		}
	}
}
