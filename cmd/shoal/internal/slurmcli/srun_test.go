package slurmcli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

func TestWholeLines(t *testing.T) {
	long := strings.Repeat("x", maxHeldLine)
	for _, tc := range []struct {
		in, send, hold string
	}{
		{"", "", ""},
		{"abc", "", "abc"},
		{"abc\n", "abc\n", ""},
		{"a\nb\nc", "a\nb\n", "c"},
		{"a\n\n", "a\n\n", ""},
		{long[1:], "", long[1:]},
		{long, long, ""},
		{"a\n" + long + long + "b", "a\n" + long + long, "b"},
		{long + "b\nc", long + "b\n", "c"},
	} {
		send, hold := wholeLines([]byte(tc.in))
		if string(send) != tc.send || string(hold) != tc.hold {
			t.Errorf("wholeLines(%.20q): %.20q, %.20q; want %.20q, %.20q", tc.in, send, hold, tc.send, tc.hold)
		}
	}
}

// TestStreamerLines: two ranks whose lines arrive in pieces (the text,
// then the newline, as an unbuffered Python print writes them) come out
// as whole lines, each on its own stream; what is left when the step ends
// is written then.
func TestStreamerLines(t *testing.T) {
	chunk := func(rank int, stream, data string) api.LogChunk {
		return api.LogChunk{Node: "n1", Rank: rank, Stream: stream, Data: data}
	}
	for _, label := range []bool{false, true} {
		var out, errb bytes.Buffer
		s := newStreamer(label, &out, &errb)
		s.write([]api.LogChunk{chunk(0, "stdout", "rank 0"), chunk(1, "stdout", "rank 1")})
		s.write([]api.LogChunk{chunk(1, "stdout", "\n"), chunk(0, "stdout", " says\nnext"), chunk(1, "stderr", "warn")})
		if out.Len() == 0 || errb.Len() != 0 {
			t.Errorf("label %v: before the end: stdout %q stderr %q; want rank 1's line, no stderr", label, out.String(), errb.String())
		}
		s.write([]api.LogChunk{chunk(0, "stdout", " and more")})
		s.flush()
		want, wantErr := "rank 1\nrank 0 says\nnext and more", "warn"
		if label {
			want, wantErr = "1: rank 1\n0: rank 0 says\n0: next and more\n", "1: warn\n"
		}
		if out.String() != want || errb.String() != wantErr {
			t.Errorf("label %v: stdout %q stderr %q; want %q and %q", label, out.String(), errb.String(), want, wantErr)
		}
	}
}

// TestStreamerOneIncarnation: step ids start again at 0 when a job is
// requeued, so the logs of step 0 hold every run's; srun following the
// step of run 2 writes run 2's output only.
func TestStreamerOneIncarnation(t *testing.T) {
	var out, errb bytes.Buffer
	s := newStreamer(false, &out, &errb)
	s.only(2)
	s.write([]api.LogChunk{
		{Node: "n1", Incarnation: 1, Step: 0, Stream: "stdout", Data: "old run\n", Size: 8},
		{Node: "n1", Incarnation: 2, Step: 0, Stream: "stdout", Data: "this run\n", Size: 9},
	})
	s.flush()
	if out.String() != "this run\n" || errb.Len() != 0 {
		t.Errorf("stdout %q stderr %q; want only run 2's line", out.String(), errb.String())
	}
}
