package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// working is the Cluster of an agent outside the raft configuration
// whose leader answers at leaderURL; its own replica must never be read.
type working struct {
	leading
	leaderURL string
}

func (working) Outside() bool { return true }
func (working) Readable() error {
	panic("a worker's replica was read")
}

// secure is the Authority of an agent that runs TLS.
type secure struct{ Authority }

func (secure) Secure() bool { return true }

// following is the Info of a server that answers a follow query with
// what it was asked, and no state.
type following struct{ Info }

func (following) Follow(_ context.Context, node string, index uint64, digest string, lease uint64, wait time.Duration) (api.FollowReply, error) {
	return api.FollowReply{Leader: "s1", Index: index + lease, Digest: digest + node + wait.String()}, nil
}
func (b working) LeaderClient() (*api.Client, error) {
	c, err := api.NewClient(b.leaderURL)
	if err != nil {
		return nil, err
	}
	return c.WithHeader(api.HeaderForwardedBy, "w1"), nil
}

// A read through a worker (DESIGN "Membership and roles": workers keep
// no replica current) is answered by the leader, with the caller's
// identity and the leader's index; the internal follow query is answered
// by the node asked, whatever it is.
func TestWorkerReadsGoToTheLeader(t *testing.T) {
	var gotPath, gotUser, gotBy string
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotUser, gotBy = r.URL.RequestURI(), r.Header.Get(api.HeaderUser), r.Header.Get(api.HeaderForwardedBy)
		w.Header().Set(api.HeaderIndex, "77")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"id":5}]`))
	}))
	defer leader.Close()
	b := Roles{Cluster: working{leaderURL: leader.URL}, Auth: secure{}, Info: following{}}
	w, body := serve(t, b, "GET", "/v1/jobs?all=1", "")
	if w.Code != http.StatusOK || body != `[{"id":5}]` || w.Header().Get(api.HeaderIndex) != "77" {
		t.Errorf("GET /v1/jobs through a worker = %d %s index %q; want the leader's answer at 77", w.Code, body, w.Header().Get(api.HeaderIndex))
	}
	if gotPath != "/v1/jobs?all=1" || gotUser != ada.User || gotBy != "w1" {
		t.Errorf("leader got %q as %q forwarded by %q; want /v1/jobs?all=1 as %q by w1", gotPath, gotUser, gotBy, ada.User)
	}
	gotPath = ""
	r := WithCaller(httptest.NewRequest("GET", "/v1/internal/follow?node=w1&index=3&lease=4&digest=d&wait=2s", nil),
		Caller{Node: "w1", Proven: true, How: "node certificate"})
	rec := httptest.NewRecorder()
	NewServer(b, slog.New(slog.DiscardHandler)).Routes(Handlers{Metrics: http.NotFoundHandler(), UI: http.NotFoundHandler()}).ServeHTTP(rec, r)
	w, body = rec, strings.TrimSpace(rec.Body.String())
	if w.Code != http.StatusOK || gotPath != "" || body != `{"server":false,"member":false,"index":7,"digest":"dw12s","leader":"s1"}` {
		t.Errorf("follow on a worker = %d %s (leader got %q); want its own hints", w.Code, body, gotPath)
	}
}
