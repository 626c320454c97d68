package httpapi

import (
	"net/http"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// members is the Info of an agent whose gossip sees ms.
type members struct {
	Info
	ms []api.Member
}

func (m members) Members() []api.Member { return m.ms }

// GET /v1/members answers the members Info rendered as they are, and an
// empty list (never null) when it knows none.
func TestHandleMembers(t *testing.T) {
	tests := []struct {
		name string
		ms   []api.Member
		want string
	}{
		{"none", nil, `[]`},
		{"two", []api.Member{{Name: "n1", Status: "alive", GPUs: 8}, {Name: "n2", Status: "failed"}},
			`[{"name":"n1","address":"","status":"alive","api_address":"","gpus":8,"switch":"","version":""},` +
				`{"name":"n2","address":"","status":"failed","api_address":"","gpus":0,"switch":"","version":""}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, body := serve(t, Roles{Cluster: leading{}, Info: members{ms: tt.ms}}, "GET", "/v1/members", "")
			if w.Code != http.StatusOK || body != tt.want {
				t.Errorf("GET /v1/members = %d %s; want 200 %s", w.Code, body, tt.want)
			}
		})
	}
}
