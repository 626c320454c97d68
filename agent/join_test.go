package agent

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/pki"
)

// FuzzJoinRequest feeds arbitrary bodies through what the join endpoint
// does with a stranger's request before anything is written to the log:
// decode it, parse its certificate request and addresses, check its token.
// None of it may panic, and nothing but a matching token passes.
func FuzzJoinRequest(f *testing.F) {
	key, _ := pki.NewNodeKey()
	csr, _ := pki.NewCSR(key, "n9")
	good, _ := json.Marshal(api.JoinRequest{TokenID: "0123abcd", Secret: "s", CSR: string(csr), IPs: []string{"10.0.0.9"}})
	f.Add(good)
	f.Add([]byte(`{"token_id":"x","csr":"-----BEGIN CERTIFICATE REQUEST-----\nAA==\n-----END CERTIFICATE REQUEST-----\n","ips":["::1","300.1.1.1"]}`))
	f.Add([]byte(`{}`))
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	sec := &cluster.Security{JoinTokens: []cluster.JoinToken{{ID: "0123abcd", SecretHash: pki.SecretHash("right"),
		Created: now, Expires: now.Add(time.Hour), UsesLeft: 1}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/join", bytes.NewReader(body))
		var req api.JoinRequest
		if err := httpapi.DecodeBody(r, &req); err != nil {
			return
		}
		if csr, name, err := pki.ParseCSR([]byte(req.CSR)); err == nil && (csr == nil || !cluster.ValidNodeName(name)) {
			t.Fatalf("ParseCSR accepted %q", name)
		}
		_, _ = parseIPs(req.IPs)
		if leader.TokenMatches(sec, req.TokenID, pki.SecretHash(req.Secret), now) && req.Secret != "right" {
			t.Fatalf("token %q with secret %q matched", req.TokenID, req.Secret)
		}
	})
}
