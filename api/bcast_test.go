package api

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseBcastFile(t *testing.T) {
	f := BcastFile{Node: "n1", Path: "/tmp/x y", Mode: 0o750, Force: true, MTime: 1577934245}
	got, err := ParseBcastFile(f.Query())
	if err != nil || got != f {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, f)
	}
	for q, field := range map[string]string{
		"path=/x&mode=644":               "node",
		"node=n1&path=rel&mode=644":      "path",
		"node=n1&path=/x&mode=9":         "mode",
		"node=n1&path=/x&mode=17777":     "mode",
		"node=n1&path=/x&mode=6&mtime=x": "mtime",
	} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseBcastFile(v); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%s: %v; want an error naming %s", q, err, field)
		}
	}
}

// FuzzParseBcastFile: any query parses or is refused, without a panic,
// and what parses comes back the same through Query.
func FuzzParseBcastFile(f *testing.F) {
	f.Add("node=n1&path=/tmp/a&mode=755&force=1&mtime=5")
	f.Add("node=&path=&mode=")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		b, err := ParseBcastFile(q)
		if err != nil {
			return
		}
		again, err := ParseBcastFile(b.Query())
		if err != nil || again != b {
			t.Fatalf("%q: %+v, then %+v, %v", raw, b, again, err)
		}
	})
}
