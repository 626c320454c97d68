package httpapi

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// follower is the Cluster of a follower whose leader is at leaderAddr;
// keeps is what it says of request ids (KeepsRequestIDs).
type follower struct {
	leading
	leaderAddr string
	keeps      bool
}

func (b follower) KeepsRequestIDs(IDWrite) bool { return b.keeps }

func (follower) Leads() (bool, error) { return false, nil }
func (b follower) LeaderClient() (*api.Client, error) {
	c, err := api.NewClient(b.leaderAddr)
	if err != nil {
		return nil, err
	}
	return c.Forwarding("f1"), nil
}

// A write forwarded to a leader that cannot be connected to (killed, its
// port closed) is answered with api.LeaderUnreachableMessage, which tells
// the client nothing was proposed: it may send any write again.
func TestForwardToUnreachableLeader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: a dial is refused
	w, body := serve(t, Roles{Cluster: follower{leaderAddr: addr}}, "POST", "/v1/jobs/7/signal", `{"signal": 10}`)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(body, api.LeaderUnreachableMessage) {
		t.Errorf("signal through a follower of a dead leader = %d %s; want 503 saying %q", w.Code, body, api.LeaderUnreachableMessage)
	}
}

// A write forwarded to a leader that dies before answering is answered
// 502, which lets the client send it again as its request id allows;
// but where this agent sees a server older than the protocol that keeps
// the ids of steps, signals, requeues and relative updates (the leader
// dropped it), such a write's lost answer is final: a second copy could
// act twice.
func TestForwardLostAnswer(t *testing.T) {
	// The leader reads the request and hangs up without an answer, as a
	// leader killed after committing it would.
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer leader.Close()
	addr := strings.TrimPrefix(leader.URL, "http://")
	for _, tc := range []struct {
		name, method, target, body string
		keeps                      bool
		want                       int
	}{
		{"signal, ids kept", "POST", "/v1/jobs/7/signal", `{"signal": 10, "request_id": "a"}`, true, http.StatusBadGateway},
		{"signal, ids dropped", "POST", "/v1/jobs/7/signal", `{"signal": 10, "request_id": "a"}`, false, http.StatusInternalServerError},
		{"step, ids dropped", "POST", "/v1/jobs/7/steps", `{"spec": {"command": ["true"]}, "request_id": "a"}`, false, http.StatusInternalServerError},
		{"requeue, ids dropped", "POST", "/v1/jobs/7/requeue?request_id=a", "", false, http.StatusInternalServerError},
		{"relative update, ids dropped", "POST", "/v1/jobs/7/update", `{"time_limit_add_s": 60, "request_id": "a"}`, false, http.StatusInternalServerError},
		{"absolute update, ids dropped", "POST", "/v1/jobs/7/update", `{"time_limit_s": 60, "request_id": "a"}`, false, http.StatusBadGateway},
		{"cancel, ids dropped", "POST", "/v1/jobs/7/cancel", "", false, http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, body := serve(t, Roles{Cluster: follower{leaderAddr: addr, keeps: tc.keeps}}, tc.method, tc.target, tc.body)
			final := strings.Contains(body, "not sent again: it may have taken effect")
			if w.Code != tc.want || final != (tc.want != http.StatusBadGateway) {
				t.Errorf("%s %s = %d %s; want %d", tc.method, tc.target, w.Code, body, tc.want)
			}
		})
	}
}
