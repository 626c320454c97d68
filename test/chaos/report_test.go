package chaos_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/chaos"
)

// svgStarts returns the attributes of every element of the first SVG in
// page, which must be well-formed XML.
func svgStarts(t *testing.T, page string) []map[string]string {
	t.Helper()
	i, j := strings.Index(page, "<svg "), strings.Index(page, "</svg>")
	if i < 0 || j < i {
		t.Fatalf("report has no <svg> timeline")
	}
	d := xml.NewDecoder(strings.NewReader(page[i : j+len("</svg>")]))
	var out []map[string]string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("report: the SVG is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			m := map[string]string{"": se.Name.Local}
			for _, a := range se.Attr {
				m[a.Name.Local] = a.Value
			}
			out = append(out, m)
		}
	}
}

// TestChaosReportAndPlot runs `shoal chaos` for one short seed of 3
// agents under slow, loss and kill faults with --report and --plot, and
// checks the HTML has the summary, a lane per node, the fault and leader
// lanes, a bar per job run on a node of the cluster, only the faults
// asked for, and as many violations as --json reports (none, or the test
// fails); and that the PNG decodes.
func TestChaosReportAndPlot(t *testing.T) {
	requireNetNS(t)
	dir := shortDir(t)
	report, plotPath := filepath.Join(dir, "out.html"), filepath.Join(dir, "out.png")
	cmd := osexec.Command(shoalBin, "chaos", "--nodes", "3", "--seed", "1", "--duration", "10s", "--faults", "slow,loss,kill",
		"--net", "netns", "--dir", dir, "--json", "--report", report, "--plot", plotPath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var results []chaos.Result
	if jerr := json.Unmarshal(out, &results); jerr != nil || len(results) != 1 {
		t.Fatalf("shoal chaos --json: %v, %d results from %q (exit %v): %s", jerr, len(results), out, err, stderr.String())
	}
	res := results[0]
	for _, v := range res.Violations {
		t.Errorf("%s", v)
	}
	if err != nil && len(res.Violations) == 0 {
		t.Fatalf("shoal chaos: %v with no violation: %s", err, stderr.String())
	}
	if res.Faults == 0 || res.Completed == 0 {
		t.Errorf("seed 1: %d faults, %d completed jobs; want some of each", res.Faults, res.Completed)
	}

	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("--report: %v", err)
	}
	page := string(b)
	if !strings.Contains(page, `<table class="summary">`) || !strings.Contains(page, `<tr data-seed="1">`) {
		t.Errorf("report has no summary row for seed 1")
	}
	if got := strings.Count(page, `<li class="violation"`); got != len(res.Violations) {
		t.Errorf("report lists %d violations; --json %d", got, len(res.Violations))
	}
	var lanes, kinds []string
	jobs, leaders := 0, 0
	nodes := []string{"n1", "n2", "n3"}
	for _, e := range svgStarts(t, page) {
		switch e["class"] {
		case "lane":
			lanes = append(lanes, e["data-lane"]+":"+e["data-node"])
		case "fault":
			kinds = append(kinds, e["data-kind"])
		case "leader":
			if slices.Contains(nodes, e["data-node"]) {
				leaders++
			}
		case "job":
			jobs++
			if !slices.Contains(nodes, e["data-node"]) || e["data-job"] == "" || e["data-outcome"] == "" {
				t.Errorf("job bar %v: want a job on one of %v with an outcome", e, nodes)
			}
		}
	}
	if want := []string{"faults:", "leader:", "node:n1", "node:n2", "node:n3"}; !slices.Equal(lanes, want) {
		t.Errorf("report lanes %v; want %v", lanes, want)
	}
	if len(kinds) != res.Faults {
		t.Errorf("report draws %d faults; the run injected %d", len(kinds), res.Faults)
	}
	for _, k := range kinds {
		if k != "slow" && k != "loss" && k != "kill" {
			t.Errorf("report draws a %s fault; the run asked for slow, loss and kill", k)
		}
	}
	if jobs < res.Completed || leaders == 0 {
		t.Errorf("report draws %d job bars for %d completed jobs and %d leader spans; want a bar per job and node, a leader", jobs, res.Completed, leaders)
	}

	f, err := os.Open(plotPath)
	if err != nil {
		t.Fatalf("--plot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("--plot wrote no PNG: %v", err)
	}
	if img.Bounds().Dx() < 500 || img.Bounds().Dy() < 200 {
		t.Errorf("plot is %v; want a timeline-sized image", img.Bounds())
	}
}
