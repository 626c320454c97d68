package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// An unknown path answers 404 naming the method and path, as the API
// always has; a path the API does not serve itself reaches the handler
// the agent gave.
func TestRoutes(t *testing.T) {
	var hit string
	var h Handlers
	hv := reflect.ValueOf(&h).Elem()
	for i := range hv.NumField() {
		name := hv.Type().Field(i).Name
		hv.Field(i).Set(reflect.ValueOf(http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = name }))))
	}
	mux := (&Server{}).Routes(h)

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/v2/nothing", nil))
	var e api.Error
	if err := json.NewDecoder(w.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if w.Code != http.StatusNotFound || e.Error != "GET /v2/nothing: no such endpoint" {
		t.Errorf("GET /v2/nothing = %d %q; want 404 %q", w.Code, e.Error, "GET /v2/nothing: no such endpoint")
	}

	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil))
	if hit != "Metrics" {
		t.Errorf("GET /metrics reached %q; want Metrics", hit)
	}
}
