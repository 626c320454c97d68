package httpapi

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// follower is the Cluster of a follower whose leader is at leaderAddr.
type follower struct {
	leading
	leaderAddr string
}

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
