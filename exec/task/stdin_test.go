package task

import (
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

func TestStdinPath(t *testing.T) {
	step := func(input string) Launch {
		return Launch{Job: 9, Incarnation: 1, NodeName: "n2",
			Spec: cluster.Spec{Name: "job", User: "ann"},
			Step: &cluster.Step{ID: 3, Spec: cluster.StepSpec{Input: input},
				Nodes: []cluster.StepNode{{Node: "n1", Tasks: 2}, {Node: "n2", FirstRank: 2, Tasks: 2}}}}
	}
	for _, tt := range []struct {
		name string
		l    Launch
		want string
	}{
		{"step default", step(""), ""},
		{"step none", step("none"), ""},
		{"step pattern", step("in.%J.%n.%N.%t"), "/w/in.9.3.1.n2.3"},
		{"step absolute", step("/d/%u-%x-%s"), "/d/ann-job-3"},
		{"batch", Launch{Stdin: "/d/in"}, "/d/in"},
		{"own ranks", Launch{}, ""},
	} {
		if got := tt.l.StdinPath(3, "/w"); got != tt.want {
			t.Errorf("%s: StdinPath = %q; want %q", tt.name, got, tt.want)
		}
	}
}

func TestStepOutputPaths(t *testing.T) {
	step := func(out, errp string) Launch {
		return Launch{Job: 9, Incarnation: 1, NodeName: "n2",
			Spec: cluster.Spec{Name: "job", User: "ann"},
			Step: &cluster.Step{ID: 3, Spec: cluster.StepSpec{Output: out, Error: errp},
				Nodes: []cluster.StepNode{{Node: "n1", Tasks: 2}, {Node: "n2", FirstRank: 2, Tasks: 2}}}}
	}
	for _, tt := range []struct {
		name             string
		l                Launch
		wantOut, wantErr string
	}{
		{"to srun", step("", ""), "", ""},
		{"both to -o", step("o.%t", ""), "/w/o.3", "/w/o.3"},
		{"apart", step("o.%n", "/e/%u.%t"), "/w/o.1", "/e/ann.3"},
		{"stderr only", step("", "e.%s"), "", "/w/e.3"},
		{"none", step("none", ""), DevNull, DevNull},
		{"stdout none, stderr a file", step("none", "e"), DevNull, "/w/e"},
		{"batch script", Launch{Stdout: "/d/out"}, "", ""},
	} {
		out, errp := tt.l.StepOutputPaths(3, "/w")
		if out != tt.wantOut || errp != tt.wantErr {
			t.Errorf("%s: StepOutputPaths = %q, %q; want %q, %q", tt.name, out, errp, tt.wantOut, tt.wantErr)
		}
	}
}
