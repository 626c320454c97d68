package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDoRetriesNoLeader: a write answered "no raft leader yet" is sent
// again until a leader answers; a read, and any other 503, is not.
func TestDoRetriesNoLeader(t *testing.T) {
	var calls atomic.Int32
	c := testClient(t, func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch {
		case r.URL.Path == "/other":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error": "catching up"}`))
		case n <= 2:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error": "no raft leader yet: the cluster is forming or has lost its quorum; retry"}`))
		default:
			w.Write([]byte(`{"id": 7}`))
		}
	})
	var out struct{ ID int }
	if _, err := c.Do(context.Background(), http.MethodPost, "/v1/jobs/7/hold", nil, &out); err != nil || out.ID != 7 {
		t.Fatalf("Do = %v, %+v; want the third answer", err, out)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("%d calls; want 3", got)
	}
	calls.Store(0)
	if _, err := c.Do(context.Background(), http.MethodGet, "/v1/jobs", nil, nil); err == nil || calls.Load() != 1 {
		t.Errorf("GET: %v after %d calls; want the first 503 as is", err, calls.Load())
	}
	calls.Store(10)
	if _, err := c.Do(context.Background(), http.MethodPost, "/other", nil, nil); err == nil || calls.Load() != 11 {
		t.Errorf("other 503: %v after %d calls; want it once", err, calls.Load()-10)
	}
}

// TestFailoverBackoff: a write sent during a failover is retried quickly
// and then every 100 ms, never slower, so it returns within 100 ms of the
// new leader committing it.
func TestFailoverBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{0, 25 * time.Millisecond},
		{1, 25 * time.Millisecond},
		{2, 50 * time.Millisecond},
		{3, 100 * time.Millisecond},
		{4, 100 * time.Millisecond},
		{1000, 100 * time.Millisecond},
	} {
		if got := FailoverBackoff(tc.attempt); got != tc.want {
			t.Errorf("FailoverBackoff(%d) = %s; want %s", tc.attempt, got, tc.want)
		}
	}
}

// TestSubmitRetriesWithSameRequestID: a submit that meets a failover (an
// agent whose forward to the dead leader fails, then no leader) is sent
// again with the same request id until it is accepted.
func TestSubmitRetriesWithSameRequestID(t *testing.T) {
	var calls atomic.Int32
	var ids []string
	var mu sync.Mutex
	c := testClient(t, func(w http.ResponseWriter, r *http.Request) {
		var req SubmitRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decode submit: %v", err)
		}
		mu.Lock()
		ids = append(ids, req.RequestID)
		mu.Unlock()
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte(`{"error": "forward to leader: connection refused"}`))
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error": "no raft leader yet: the cluster is forming or has lost its quorum; retry"}`))
		default:
			w.Write([]byte(`{"id": 7}`))
		}
	})
	res, err := c.Submit(context.Background(), SubmitRequest{RequestID: "r1", Command: []string{"true"}}, time.Minute)
	if err != nil || res.ID != 7 {
		t.Fatalf("Submit = %+v, %v; want job 7", res, err)
	}
	if !slices.Equal(ids, []string{"r1", "r1", "r1"}) {
		t.Errorf("request ids sent = %q; want r1 three times", ids)
	}
}

// testClient is a client of a test server answering with h, closed when
// the test ends.
func testClient(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
