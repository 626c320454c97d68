package metrics

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestContrib checks the Prometheus configuration, alert rules and
// Grafana dashboard in contrib/ with promtool and against Table: every
// shoal_ series they query exists.
func TestContrib(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian's prometheus package, installed by .ci/run): %v", err)
	}
	for _, args := range [][]string{
		// --syntax-only: the token and CA files it names are the operator's.
		{"check", "config", "--syntax-only", "../contrib/prometheus/prometheus.yml"},
		{"check", "rules", "../contrib/prometheus/shoal-rules.yml"},
	} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	b, err := os.ReadFile("../contrib/grafana/shoal-cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana dashboard: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("grafana dashboard: no panels")
	}
	rules, err := os.ReadFile("../contrib/prometheus/shoal-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	exprs := []string{string(rules)}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	known := map[string]bool{}
	for _, d := range Table {
		known[d.Name] = true
		if d.Kind == Histogram {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				known[d.Name+s] = true
			}
		}
	}
	used := regexp.MustCompile(`shoal_[a-z_]+`)
	for _, e := range exprs {
		for _, name := range used.FindAllString(e, -1) {
			if !known[name] {
				t.Errorf("contrib queries %s, which Shoal does not export", name)
			}
		}
	}
}
