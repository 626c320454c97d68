package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	cl := srv.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		path, wantType, wantBody string
		wantCode                 int
	}{
		{"/ui", "", "", http.StatusMovedPermanently},
		{"/ui/", "text/html", `<script src="app.js" defer></script>`, http.StatusOK},
		{"/ui/app.js", "javascript", "textContent", http.StatusOK},
		{"/ui/style.css", "text/css", "--free", http.StatusOK},
		{"/ui/nothing.js", "", "", http.StatusNotFound},
	} {
		resp, err := cl.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantCode {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.wantCode)
			continue
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), tc.wantType) || !strings.Contains(string(body), tc.wantBody) {
			t.Errorf("GET %s: type %q body %.80q; want type %q containing %q", tc.path, resp.Header.Get("Content-Type"), body, tc.wantType, tc.wantBody)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: CSP %q; want scripts from the view only", tc.path, csp)
		}
	}
}
