package consensus

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
)

// newForwarder starts forwardLeadership on a bare Raft and returns its
// input and a stop function that waits for it to return.
func newForwarder(t *testing.T) (*Raft, chan bool, func()) {
	t.Helper()
	r := &Raft{
		log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		leaderCh: make(chan bool),
		stopFwd:  make(chan struct{}),
		fwdDone:  make(chan struct{}),
	}
	in := make(chan bool)
	go r.forwardLeadership(in)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(r.stopFwd)
			<-r.fwdDone
		}
	}
	t.Cleanup(stop)
	return r, in, stop
}

// send delivers v as raft would, failing if the forwarder blocks it.
func send(t *testing.T, in chan<- bool, v bool) {
	t.Helper()
	select {
	case in <- v:
	case <-time.After(5 * time.Second):
		t.Fatalf("forwarder blocked raft's notification")
	}
}

func drain(t *testing.T, r *Raft, n int) []bool {
	t.Helper()
	var got []bool
	for range n {
		select {
		case v := <-r.leaderCh:
			got = append(got, v)
		case <-time.After(5 * time.Second):
			t.Fatalf("LeaderCh gave %d values; want %d", len(got), n)
		}
	}
	return got
}

func TestLeaderChForwarder(t *testing.T) {
	tests := []struct {
		name string
		in   []bool
		want []bool
	}{
		{"in order while the reader is away", []bool{true, false, true}, []bool{true, false, true}},
		{"a full backlog collapses to the latest", append(make([]bool, leaderBacklog), true), []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, in, _ := newForwarder(t)
			for _, v := range tt.in {
				send(t, in, v)
			}
			if diff := cmp.Diff(tt.want, drain(t, r, len(tt.want))); diff != "" {
				t.Errorf("LeaderCh -want +got:\n%s", diff)
			}
			select {
			case v := <-r.leaderCh:
				t.Errorf("LeaderCh gave an extra %v", v)
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

func TestLeaderChClosedOnStop(t *testing.T) {
	r, in, stop := newForwarder(t)
	send(t, in, true) // pending, never read
	stop()
	if _, ok := <-r.leaderCh; ok {
		t.Errorf("LeaderCh delivered after stop; want it closed")
	}
}

// TestHclogAdapter checks raft's log calls land in slog with levels,
// names and implied arguments intact, and that slog's level filters them.
func TestHclogAdapter(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var l hclog.Logger = newHclogAdapter(base)
	l = l.Named("raft").With("peer", "n2").Named("net")

	l.Trace("dropped: below debug")
	l.Debug("dbg", "k", 1)
	l.Info("inf")
	l.Warn("wrn", "err", "boom")
	l.Error("err")
	l.Log(hclog.Off, "never")
	l.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}).Print("std")

	type line struct {
		Level, Msg, Subsystem, Peer string
	}
	var got []line
	for _, s := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("bad JSON line %q: %v", s, err)
		}
		got = append(got, line{Level: m["level"].(string), Msg: m["msg"].(string),
			Subsystem: str(m["subsystem"]), Peer: str(m["peer"])})
	}
	want := []line{
		{"DEBUG", "dbg", "raft.net", "n2"},
		{"INFO", "inf", "raft.net", "n2"},
		{"WARN", "wrn", "raft.net", "n2"},
		{"ERROR", "err", "raft.net", "n2"},
		{"WARN", "std", "raft.net", "n2"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines -want +got:\n%s", diff)
	}

	if !l.IsDebug() || l.IsTrace() {
		t.Errorf("IsDebug, IsTrace = %v, %v; want true, false (handler at debug)", l.IsDebug(), l.IsTrace())
	}
	l.SetLevel(hclog.Warn)
	if l.IsInfo() || !l.IsWarn() || l.GetLevel() != hclog.Warn {
		t.Errorf("after SetLevel(Warn): IsInfo %v IsWarn %v GetLevel %v", l.IsInfo(), l.IsWarn(), l.GetLevel())
	}
	if got := l.Name(); got != "raft.net" {
		t.Errorf("Name() = %q; want raft.net", got)
	}
	if got := l.ResetNamed("x").Name(); got != "x" {
		t.Errorf("ResetNamed(x).Name() = %q; want x", got)
	}
	if got := l.ImpliedArgs(); len(got) != 2 || got[0] != "peer" {
		t.Errorf("ImpliedArgs() = %v; want [peer n2]", got)
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
