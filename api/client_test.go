package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestDoRetriesNoLeader: a write answered "no raft leader yet" is sent
// again until a leader answers; a read, and any other 503, is not.
func TestDoRetriesNoLeader(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
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
