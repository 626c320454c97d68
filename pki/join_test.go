package pki

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// TestJoinRetries: a join is retried while nobody answers or the cluster
// cannot answer yet, and ends at a refusal or a server of another
// cluster.
func TestJoinRetries(t *testing.T) {
	electing := &api.StatusError{Code: http.StatusServiceUnavailable, Message: "no leader"}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{errors.New("dial tcp: connection refused"), true},
		{electing, true},
		{&api.StatusError{Code: http.StatusBadGateway, Message: "leader unreachable"}, true},
		{fmt.Errorf("post: %w", electing), true},
		{&api.StatusError{Code: http.StatusForbidden, Message: "token used up"}, false},
		{&api.StatusError{Code: http.StatusBadRequest, Message: "bad CSR"}, false},
		{fmt.Errorf("tls: %w", ErrWrongCluster), false},
	} {
		if got := JoinRetries(tt.err); got != tt.want {
			t.Errorf("JoinRetries(%v) = %t; want %t", tt.err, got, tt.want)
		}
	}
}

// joinCluster answers joins as the test scripts it: answers[addr] is the
// errors of its successive requests, nil meaning sign. The CA it sends
// back is sentCA (ca when nil), with keys as the gossip keyring.
type joinCluster struct {
	ca, sentCA *CA
	keys       []string
	answers    map[string][]error
	asked      []string
}

func (c *joinCluster) Join(_ context.Context, addr string, req api.JoinRequest) (api.JoinResponse, error) {
	c.asked = append(c.asked, addr)
	if errs := c.answers[addr]; len(errs) > 0 {
		c.answers[addr] = errs[1:]
		if errs[0] != nil {
			return api.JoinResponse{}, errs[0]
		}
	}
	csr, name, err := ParseCSR([]byte(req.CSR))
	if err != nil {
		return api.JoinResponse{}, err
	}
	cert, err := c.ca.SignNode(NodeRequest{Name: name, PublicKey: csr.PublicKey}, time.Now())
	if err != nil {
		return api.JoinResponse{}, err
	}
	sent := c.sentCA
	if sent == nil {
		sent = c.ca
	}
	return api.JoinResponse{Cert: string(EncodeCert(cert)), CA: string(EncodeCert(sent.Cert)), GossipKeys: c.keys}, nil
}

// TestJoinerRun runs the join loop against a scripted cluster: it tries
// every address of the token each round, waits between rounds while no
// address answers, stops at a refusal or a wrong answer, and writes the
// certificate, key, CA and gossip keyring once an answer checks.
func TestJoinerRun(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	gossipKey := EncodeGossipKey(key(7))
	refused := errors.New("dial tcp: connection refused")
	electing := &api.StatusError{Code: http.StatusServiceUnavailable, Message: "no leader yet"}
	for _, tt := range []struct {
		name    string
		answers map[string][]error
		sentCA  *CA
		keys    []string
		asked   string // the addresses asked, in order
		waits   int
		wantErr string // "" for a join
	}{
		{name: "the second address, once elected", answers: map[string][]error{"a:1": {refused, refused}, "b:1": {electing, nil}},
			keys: []string{gossipKey}, asked: "a:1 b:1 a:1 b:1", waits: 1},
		{name: "refused", answers: map[string][]error{"a:1": {&api.StatusError{Code: http.StatusForbidden, Message: "token used up"}}},
			asked: "a:1", wantErr: "join through a:1: token used up"},
		{name: "another cluster", answers: map[string][]error{"a:1": {refused}, "b:1": {fmt.Errorf("tls: %w", ErrWrongCluster)}},
			asked: "a:1 b:1", wantErr: "join through b:1: tls: not the cluster"},
		{name: "another CA sent back", sentCA: other, keys: []string{gossipKey}, asked: "a:1", wantErr: "not the one the token names"},
		{name: "no gossip key", asked: "a:1", wantErr: "no gossip key sent back"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := DefaultPaths(dir)
			cluster := &joinCluster{ca: ca, sentCA: tt.sentCA, keys: tt.keys, answers: tt.answers}
			clock := &offerClock{}
			j := Joiner{Token: JoinToken{ID: "id", Secret: "s", CAFingerprint: ca.Fingerprint(), Addrs: []string{"a:1", "b:1"}},
				Name: "n2", Paths: paths, Server: cluster, Clock: clock, Log: discard}
			err := j.Run(context.Background())
			if got := strings.Join(cluster.asked, " "); got != tt.asked || len(clock.waits) != tt.waits {
				t.Errorf("asked %q with %d waits; want %q with %d", got, len(clock.waits), tt.asked, tt.waits)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Run = %v; want an error saying %q", err, tt.wantErr)
				}
				if paths.HasNode() {
					t.Errorf("a failed join wrote %s", paths.Cert)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			b, err := LoadBundle(paths)
			if err != nil || b.Name != "n2" || b.CA.Fingerprint() != ca.Fingerprint() {
				t.Errorf("joined files: %v; want n2's certificate of the token's CA", err)
			}
			if keys, err := LoadGossipKeys(paths.GossipKey); err != nil || !SameKeys(keys, [][]byte{key(7)}) {
				t.Errorf("gossip keyring %x, %v; want the cluster's", keys, err)
			}
		})
	}
}

// TestJoinerGivesUp: with no address answering, the loop gives up after
// joinAttempts rounds, or at once when ctx ends.
func TestJoinerGivesUp(t *testing.T) {
	down := map[string][]error{}
	for range joinAttempts {
		down["a:1"] = append(down["a:1"], errors.New("connection refused"))
	}
	j := Joiner{Token: JoinToken{Addrs: []string{"a:1"}}, Name: "n2", Paths: DefaultPaths(t.TempDir()),
		Server: &joinCluster{answers: down}, Clock: &offerClock{}, Log: discard}
	if err := j.Run(context.Background()); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("after %d attempts: join through a:1: connection refused", joinAttempts)) {
		t.Errorf("Run = %v; want it to give up after %d attempts", err, joinAttempts)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j.Server = &joinCluster{answers: map[string][]error{"a:1": {errors.New("connection refused")}}}
	j.Clock = &offerClock{block: true}
	if err := j.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Run after ctx ended = %v; want context.Canceled", err)
	}
}
