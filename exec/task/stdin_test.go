package task

import (
	"bytes"
	"errors"
	"io"
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

func TestStdinFrames(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxStdinData+3)
	b := AppendStdinEnd(AppendStdinData(nil, big))
	r := bytes.NewReader(b)
	buf := make([]byte, MaxStdinData)
	var got []byte
	for {
		f, err := ReadStdinFrame(r, buf)
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == StdinEnd {
			break
		}
		got = append(got, f.Data...)
	}
	if !bytes.Equal(got, big) {
		t.Errorf("data frames carried %d bytes; want %d", len(got), len(big))
	}
	if _, err := ReadStdinFrame(r, buf); err != io.EOF {
		t.Errorf("after the end: %v; want io.EOF", err)
	}
	n, err := ReadStdinCount(bytes.NewReader(AppendStdinCount(nil, 1<<40+5)))
	if err != nil || n != 1<<40+5 {
		t.Errorf("count = %d, %v", n, err)
	}
}

func TestStdinFrameMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"unknown type", []byte{'x', 0, 0, 0, 1, 'a'}},
		{"empty data", []byte{'d', 0, 0, 0, 0}},
		{"data too long", []byte{'d', 0, 1, 0, 1}},
		{"end with length", []byte{'e', 0, 0, 0, 1, 0}},
		{"header cut", []byte{'d', 0, 0}},
		{"payload cut", []byte{'d', 0, 0, 0, 4, 'a'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadStdinFrame(bytes.NewReader(tc.in), make([]byte, MaxStdinData))
			if !errors.Is(err, ErrStdinFrame) {
				t.Fatalf("err = %v, want ErrStdinFrame", err)
			}
		})
	}
}

// FuzzReadStdinFrame: any bytes decode to frames or an error, never a
// panic, and a decoded frame encodes back to the bytes it came from.
func FuzzReadStdinFrame(f *testing.F) {
	f.Add(AppendStdinEnd(AppendStdinData(nil, []byte("hello\n"))))
	f.Add([]byte{'d', 0, 0, 0, 0})
	f.Add([]byte{'e', 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		buf := make([]byte, MaxStdinData)
		checkFramesRoundTrip(t, in, func(r io.Reader, again []byte) ([]byte, error) {
			fr, err := ReadStdinFrame(r, buf)
			if err != nil {
				return nil, err
			}
			if fr.Type == StdinEnd {
				return AppendStdinEnd(again), nil
			}
			return AppendStdinData(again, fr.Data), nil
		})
	})
}
