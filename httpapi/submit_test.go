package httpapi

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// TestSpecOfDefaults: a submit's zero fields take Slurm's defaults, its
// times are RFC 3339 in UTC, and what does not parse is refused naming
// the field.
func TestSpecOfDefaults(t *testing.T) {
	s, err := SpecOf(api.SubmitRequest{Command: []string{"/usr/bin/python3", "x.py"}, TimeLimitS: 60, Begin: "2026-11-25T15:00:00+01:00"},
		cluster.Identity{User: "ada", UID: 1000, GID: 100, Proven: true})
	if err != nil || !s.Begin.Equal(time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)) {
		t.Errorf("SpecOf: begin %v, err %v; want 14:00 UTC", s.Begin, err)
	}
	if s.Name != "python3" || s.Request.Nodes != 1 || s.Request.TasksPerNode != 1 || s.Request.CPUsPerTask != 1 ||
		s.Request.TimeLimit != time.Minute || s.User != "ada" || s.UID != 1000 {
		t.Errorf("SpecOf = %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("defaulted spec invalid: %v", err)
	}
	if _, err := SpecOf(api.SubmitRequest{Command: []string{"x"}, Begin: "tomorrow"}, cluster.Identity{}); err == nil || !strings.Contains(err.Error(), "begin") {
		t.Errorf("begin tomorrow: %v; want refused naming begin", err)
	}
	if _, err := SpecOf(api.SubmitRequest{Command: []string{"x"}, Deadline: "friday"}, cluster.Identity{}); !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), `deadline "friday": want an RFC 3339 time`) {
		t.Errorf("deadline friday: %v; want invalid naming deadline", err)
	}
	if s, err := SpecOf(api.SubmitRequest{Command: []string{"x"}, Deadline: "2026-11-25T15:00:00+01:00"}, cluster.Identity{}); err != nil || !s.Deadline.Equal(time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)) || s.Deadline.Location() != time.UTC {
		t.Errorf("deadline: %v, %v; want 14:00 UTC", s.Deadline, err)
	}
	neg, _ := SpecOf(api.SubmitRequest{Command: []string{"x"}, Nodes: -1}, cluster.Identity{})
	if err := neg.Validate(); err == nil || !strings.Contains(err.Error(), "nodes -1") {
		t.Errorf("negative nodes: Validate = %v; want an error naming nodes", err)
	}
}

// TestCheckSubmitRequest: a request id too long to scope and a negative
// time limit are refused as invalid, naming the field; the scope makes a
// client's id the caller's own.
func TestCheckSubmitRequest(t *testing.T) {
	long := strings.Repeat("r", MaxClientRequestID+1)
	for _, tt := range []struct {
		req  api.SubmitRequest
		says string
	}{
		{api.SubmitRequest{RequestID: strings.Repeat("r", MaxClientRequestID)}, ""},
		{api.SubmitRequest{RequestID: long}, "request_id: "},
		{api.SubmitRequest{TimeLimitS: -1}, "time_limit_s -1"},
	} {
		err := CheckSubmitRequest(tt.req)
		if (tt.says == "") != (err == nil) || (err != nil && (!errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), tt.says))) {
			t.Errorf("CheckSubmitRequest(%d bytes id, limit %d) = %v; want %q", len(tt.req.RequestID), tt.req.TimeLimitS, err, tt.says)
		}
	}
	if a, b := ScopedRequestID(cluster.Identity{UID: 1000}, "x"), ScopedRequestID(cluster.Identity{UID: 1001}, "x"); a == b || a != "u1000/x" {
		t.Errorf("ScopedRequestID = %q and %q; want u1000/x and another", a, b)
	}
	if got := ScopedRequestID(cluster.Identity{UID: 1000}, ""); got != "" {
		t.Errorf("ScopedRequestID of no id = %q; want none", got)
	}
	// The longest id a client may send, in every scope, for the largest
	// uid, fits what the FSM takes; the scopes keep kinds apart.
	longest, root := strings.Repeat("r", MaxClientRequestID), cluster.Identity{UID: math.MaxUint32}
	seen := map[string]bool{}
	for _, scoped := range []string{ScopedRequestID(root, longest), ScopedWriteRequestID(ScopeStep, root, longest), ScopedWriteRequestID(ScopeSignal, root, longest), ScopedWriteRequestID(ScopeRequeue, root, longest),
		ScopedWriteRequestID(ScopeUpdate, root, longest)} {
		if len(scoped) > cluster.MaxRequestIDBytes || seen[scoped] {
			t.Errorf("scoped id %.24q...: %d bytes (want at most %d), or in a scope already used", scoped, len(scoped), cluster.MaxRequestIDBytes)
		}
		seen[scoped] = true
	}
}
