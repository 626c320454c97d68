package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// leading is the Cluster of an agent that leads and whose replica is
// readable at index 42; any other call panics (the embedded Cluster is
// nil).
type leading struct{ Cluster }

func (leading) Leads() (bool, error) { return true, nil }
func (leading) Readable() error      { return nil }
func (leading) Outside() bool        { return false }
func (leading) Index() uint64        { return 42 }
func (leading) Applied() (uint64, <-chan struct{}) {
	return 42, make(chan struct{})
}

// queue is a Queue whose test sets the calls it expects (any other
// panics: the embedded Queue is nil).
type queue struct {
	Queue
	hold   func(ref cluster.JobRef, userHold bool, who cluster.Identity) (api.JobsChanged, error)
	sig    func(id cluster.JobID, req api.SignalRequest, who cluster.Identity) error
	cancel func(ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error)
}

func (q queue) Hold(_ context.Context, ref cluster.JobRef, userHold bool, who cluster.Identity) (api.JobsChanged, error) {
	return q.hold(ref, userHold, who)
}
func (q queue) Signal(_ context.Context, id cluster.JobID, req api.SignalRequest, who cluster.Identity) error {
	return q.sig(id, req, who)
}
func (q queue) Cancel(_ context.Context, ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error) {
	return q.cancel(ref, who)
}

// outputs is a Relays whose test sets the logs it serves.
type outputs struct {
	Relays
	logs func(id cluster.JobID, f api.LogFilter, who cluster.Identity) ([]api.LogChunk, uint64, error)
}

func (r outputs) Logs(_ context.Context, id cluster.JobID, f api.LogFilter, who cluster.Identity) ([]api.LogChunk, uint64, error) {
	return r.logs(id, f, who)
}

var ada = Caller{Identity: api.Identity{User: "ada", UID: 1000, GID: 100}, Proven: true, How: "peercred", Local: true}

// serve sends one request as ada through the route table of a Server
// over roles.
func serve(t *testing.T, roles Roles, method, target, body string) (*httptest.ResponseRecorder, string) {
	t.Helper()
	h := Handlers{Metrics: http.NotFoundHandler(), UI: http.NotFoundHandler()}
	r := WithCaller(httptest.NewRequest(method, target, strings.NewReader(body)), ada)
	w := httptest.NewRecorder()
	NewServer(roles, slog.New(slog.DiscardHandler)).Routes(h).ServeHTTP(w, r)
	return w, strings.TrimSpace(w.Body.String())
}

// A write reaches the leader's side with the parsed reference and the
// caller's plain identity, and is answered at the replica's index.
func TestJobWriteReachesTheLeader(t *testing.T) {
	var got cluster.JobRef
	var gotUser bool
	var gotWho cluster.Identity
	b := Roles{Cluster: leading{}, Queue: queue{hold: func(ref cluster.JobRef, userHold bool, who cluster.Identity) (api.JobsChanged, error) {
		got, gotUser, gotWho = ref, userHold, who
		return api.JobsChanged{ID: ref.ID, IDs: []uint64{13, 14}}, nil
	}}}
	w, body := serve(t, b, "POST", "/v1/jobs/12_[1-2]/hold?kind=user", "")
	if w.Code != http.StatusOK || body != `{"id":12,"ids":[13,14]}` || w.Header().Get(api.HeaderIndex) != "42" {
		t.Errorf("hold = %d %s index %q; want 200 with the changed ids at index 42", w.Code, body, w.Header().Get(api.HeaderIndex))
	}
	if got.Raw != "12_[1-2]" || got.ID != 12 || !reflect.DeepEqual(got.Tasks, []int{1, 2}) || !gotUser {
		t.Errorf("Hold got ref %+v user hold %v", got, gotUser)
	}
	if want := (cluster.Identity{User: "ada", UID: 1000, GID: 100, Proven: true}); gotWho != want {
		t.Errorf("Hold got who %+v; want %+v", gotWho, want)
	}
}

// Refusals keep their messages, and their kind picks the status.
func TestJobRefusals(t *testing.T) {
	b := Roles{Cluster: leading{}, Queue: queue{sig: func(cluster.JobID, api.SignalRequest, cluster.Identity) error {
		return cluster.Mark(cluster.ErrForbidden, errors.New("signal job 7: forbidden"))
	}}}
	for _, tc := range []struct {
		method, target, body string
		code                 int
		msg                  string
	}{
		{"GET", "/v1/jobs/12_[1-2]", "", http.StatusBadRequest, `job id "12_[1-2]": names several array elements, want one`},
		{"POST", "/v1/jobs/1/steps/x/cancel", "", http.StatusBadRequest, `step "x": want a step id (0, 1, ...)`},
		{"GET", "/v1/jobs/1/logs?from=nocolon", "", http.StatusBadRequest, `from "nocolon": want NODE/INCARNATION/RANK/STREAM:OFFSET`},
		{"POST", "/v1/jobs/7/signal", `{"signal":10}`, http.StatusForbidden, "signal job 7: forbidden"},
	} {
		w, body := serve(t, b, tc.method, tc.target, tc.body)
		var e api.Error
		if err := json.Unmarshal([]byte(body), &e); err != nil || w.Code != tc.code || e.Error != tc.msg {
			t.Errorf("%s %s = %d %s; want %d %q", tc.method, tc.target, w.Code, body, tc.code, tc.msg)
		}
	}
}

// A job's logs come back in order of run, step, rank and stream, read
// with the filter the query gave.
func TestLogsOrderAndFilter(t *testing.T) {
	var got api.LogFilter
	b := Roles{Cluster: leading{}, Relays: outputs{logs: func(id cluster.JobID, f api.LogFilter, who cluster.Identity) ([]api.LogChunk, uint64, error) {
		got = f
		return []api.LogChunk{
			{Node: "n2", Incarnation: 2, Rank: 0, Stream: "out"},
			{Node: "n1", Incarnation: 1, Rank: 1, Stream: "out"},
			{Node: "n1", Incarnation: 1, Rank: 0, Stream: "out"},
			{Node: "n1", Incarnation: 1, Rank: 0, Stream: "err"},
		}, 40, nil
	}}}
	w, body := serve(t, b, "GET", "/v1/jobs/3/logs?step=0&from=n1/1/0/out:5", "")
	var out []api.LogChunk
	if err := json.Unmarshal([]byte(body), &out); err != nil || w.Code != http.StatusOK {
		t.Fatalf("logs = %d %s", w.Code, body)
	}
	var order []string
	for _, c := range out {
		order = append(order, c.Node+"/"+c.Stream)
	}
	if want := []string{"n1/err", "n1/out", "n1/out", "n2/out"}; !reflect.DeepEqual(order, want) || out[1].Rank != 0 {
		t.Errorf("logs order %v; want %v, rank 0 before 1", order, want)
	}
	if got.Step == nil || *got.Step != 0 || got.From["n1/1/0/out"] != 5 {
		t.Errorf("filter %+v; want step 0, n1/1/0/out from 5", got)
	}
	r := httptest.NewRequest("GET", "/x"+got.Query(), nil)
	if back, err := ParseLogFilter(r); err != nil || !reflect.DeepEqual(back, got) {
		t.Errorf("ParseLogFilter(Query()) = %+v, %v; want %+v", back, err, got)
	}
}

// insecure is the Security of an agent running --insecure: it signs
// nothing.
type insecure struct{ Security }

func (insecure) CanSign() error {
	return cluster.Mark(cluster.ErrConflict, errors.New("join: this agent runs --insecure and signs nothing"))
}

// The fronts of joins, renewals, terminals and srun's stdin refuse
// before they reach the agent, with the messages they always had.
func TestAdminRefusals(t *testing.T) {
	b := Roles{Cluster: leading{}, Security: insecure{}}
	for _, tc := range []struct {
		method, target, body string
		code                 int
		msg                  string
	}{
		{"POST", "/v1/join", `{}`, http.StatusConflict, "join: this agent runs --insecure and signs nothing"},
		{"POST", "/v1/internal/renew", `{"csr":"x"}`, http.StatusBadRequest, "csr: "},
		{"GET", "/v1/jobs/7/pty?step=-2", "", http.StatusBadRequest, `step "-2": want a step id, or -1 for the job's own task`},
		{"GET", "/v1/jobs/7/pty", "", http.StatusBadRequest, `upgrade "": want "` + api.PtyProtocol + `"`},
		{"GET", "/v1/jobs/7/stdin?step=0", "", http.StatusBadRequest, "node: empty"},
		// Neither srun's resumable stdin nor the earlier raw one.
		{"GET", "/v1/jobs/7/stdin?step=0&node=n1", "", http.StatusBadRequest, `upgrade "": want "` + api.StdinResumeProtocol + `" (or "` + api.StdinProtocol + `", raw)`},
		{"GET", "/v1/priority?job=x", "", http.StatusBadRequest, "?job=: "},
	} {
		w, body := serve(t, b, tc.method, tc.target, tc.body)
		var e api.Error
		if err := json.Unmarshal([]byte(body), &e); err != nil || w.Code != tc.code || !strings.HasPrefix(e.Error, tc.msg) {
			t.Errorf("%s %s = %d %s; want %d %q", tc.method, tc.target, w.Code, body, tc.code, tc.msg)
		}
	}
}

// A cancel the queue refuses answers, through both of its routes, with
// the status its sentinel maps to (the one table, errors.go) and the
// queue's message unchanged; a reference the route cannot parse never
// reaches the queue. Only the Queue role is faked, over a Cluster that
// leads: the route needs nothing else of the agent.
func TestCancelRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		err      error
		code     int
		msg      string
	}{
		{"no such job", "9", cluster.Mark(cluster.ErrNotFound, errors.New("job 9: no such job")), http.StatusNotFound, "job 9: no such job"},
		{"not the owner", "9", fmt.Errorf("cancel job 9: %w", cluster.ErrForbidden), http.StatusForbidden, "cancel job 9: " + cluster.ErrForbidden.Error()},
		{"upgrade unfinished", "9", fmt.Errorf("cancel job 9: %w", cluster.ErrUnsupported), http.StatusConflict, "cancel job 9: " + cluster.ErrUnsupported.Error()},
		{"leadership lost", "9", cluster.Mark(cluster.ErrUnavailable, cluster.ErrNotLeader), http.StatusServiceUnavailable, cluster.ErrNotLeader.Error()},
		{"unmarked", "9", errors.New("propose: disk full"), http.StatusInternalServerError, "propose: disk full"},
		{"bad reference", "x", nil, http.StatusBadRequest, `job id "x": `},
	} {
		for _, route := range []struct{ method, target string }{
			{"DELETE", "/v1/jobs/" + tc.id},
			{"POST", "/v1/jobs/" + tc.id + "/cancel"},
		} {
			t.Run(tc.name+"/"+route.method, func(t *testing.T) {
				called := false
				q := queue{cancel: func(ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error) {
					called = true
					if ref.Raw != tc.id || who.User != ada.User {
						t.Errorf("Cancel got ref %q for %q; want %q for %q", ref.Raw, who.User, tc.id, ada.User)
					}
					return api.JobsChanged{}, tc.err
				}}
				w, body := serve(t, Roles{Cluster: leading{}, Queue: q}, route.method, route.target, "")
				var e api.Error
				if err := json.Unmarshal([]byte(body), &e); err != nil || w.Code != tc.code || !strings.HasPrefix(e.Error, tc.msg) {
					t.Errorf("%s %s = %d %s; want %d %q", route.method, route.target, w.Code, body, tc.code, tc.msg)
				}
				if called != (tc.err != nil) {
					t.Errorf("%s %s reached the queue: %v; want %v", route.method, route.target, called, tc.err != nil)
				}
			})
		}
	}
}
