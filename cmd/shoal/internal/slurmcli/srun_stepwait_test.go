package slurmcli

import (
	"errors"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// TestStepSpecHolds: a step holds its resources unless --overlap, with
// --gpus, --exact, -c and a step's --exclusive (which is --exact).
func TestStepSpecHolds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want cluster.StepSpec
	}{
		{[]string{"-n1"}, cluster.StepSpec{Exclusive: true}},
		{[]string{"--overlap", "-n1", "--gpus=1", "--exact", "-c2"}, cluster.StepSpec{}},
		{[]string{"-n1", "--gpus=1", "--exact"}, cluster.StepSpec{Exclusive: true, GPUs: 1, Exact: true}},
		{[]string{"-n1", "-c2"}, cluster.StepSpec{Exclusive: true, Exact: true, CPUsPerTask: 2}},
		{[]string{"-n1", "--gres=gpu:1"}, cluster.StepSpec{Exclusive: true, GPUsPerNode: 1}},
		{[]string{"-n1", "--gpus-per-node=2"}, cluster.StepSpec{Exclusive: true, GPUsPerNode: 2}},
		{[]string{"-n1", "--exclusive"}, cluster.StepSpec{Exclusive: true, Exact: true}},
		// --gpus-per-task sizes the step's GPUs by its tasks.
		{[]string{"-n2", "--gpus-per-task=1"}, cluster.StepSpec{Exclusive: true}},
	} {
		opts, rest, err := slurm.ParseArgs(slurm.Srun, append(tc.args, "true"))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		sp, err := stepSpec(opts, rest)
		if err != nil {
			t.Fatalf("stepSpec(%v): %v", tc.args, err)
		}
		got := cluster.StepSpec{Exclusive: sp.Exclusive, GPUs: sp.GPUs, GPUsPerNode: sp.GPUsPerNode, Exact: sp.Exact, CPUsPerTask: sp.CPUsPerTask}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("srun %v: exclusive %v gpus %d exact %v c %d; want %+v", tc.args, got.Exclusive, got.GPUs, got.Exact, got.CPUsPerTask, tc.want)
		}
	}
}

// TestBusyLine: Slurm 22.05's lines, as the peer printed them.
func TestBusyLine(t *testing.T) {
	data, err := os.ReadFile("testdata/steps/exact2.out")
	if err != nil {
		t.Fatal(err)
	}
	for _, tries := range []int{0, 1} {
		if l := busyLine(2, tries); !strings.Contains(string(data), l) {
			t.Errorf("busyLine(2, %d) = %q: not in the peer's output", tries, l)
		}
	}
	for _, l := range []string{"srun: Step created for job 2\n", "srun: error: Unable to create step for job 2: Requested nodes are busy\n",
		"srun: error: Unable to create step for job 2: Invalid generic resource (gres) specification\n",
		"srun: error: Unable to create step for job 2: More processors requested than permitted\n"} {
		if !strings.Contains(string(data), l) {
			t.Errorf("%q: not in the peer's output", l)
		}
	}
}

// TestStepsDone counts the step nodes whose tasks ended, which grows
// exactly when a step frees what it held.
func TestStepsDone(t *testing.T) {
	j := api.Job{Steps: []api.Step{
		{NodeTasks: []api.StepNodeTasks{{State: "running"}, {State: "exited"}}},
		{NodeTasks: []api.StepNodeTasks{{State: "assigned"}, {State: "lost"}}},
	}}
	if got := stepsDone(j); got != 2 {
		t.Errorf("stepsDone = %d; want 2", got)
	}
}

// TestStepTooLarge: the agent's refusal of a step larger than its job,
// in Slurm's words; other errors none.
func TestStepTooLarge(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&api.StatusError{Code: http.StatusBadRequest, Message: "start step: job 2 incarnation 1: invalid command: Invalid generic resource (gres) specification: gpus: 5 on node \"n1\", the job holds 4 there"},
			"Invalid generic resource (gres) specification"},
		{&api.StatusError{Code: http.StatusBadRequest, Message: "invalid command: More processors requested than permitted: cpus: 8"}, "More processors requested than permitted"},
		{&api.StatusError{Code: http.StatusConflict, Message: "start step: job 2 incarnation 1: requested nodes are busy"}, ""},
		{errors.New("Invalid generic resource (gres) specification"), ""},
		{nil, ""},
	} {
		if got := stepTooLarge(tc.err); got != tc.want {
			t.Errorf("stepTooLarge(%v) = %q; want %q", tc.err, got, tc.want)
		}
	}
	if !api.IsStepBusy(&api.StatusError{Code: http.StatusConflict, Message: "start step: job 2 incarnation 1: requested nodes are busy"}) {
		t.Errorf("IsStepBusy: false for the agent's busy refusal")
	}
}
