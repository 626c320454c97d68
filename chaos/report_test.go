package chaos

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// timelineInput is cleanInput plus job 4, requeued: incarnation 1 ran on
// n2 until a slow link and a restart of every node, incarnation 2 ran on
// n1 to completion.
func timelineInput() (Input, []Event, []LeaderSample, []Violation) {
	in := cleanInput()
	j4 := job(4, "r5", "COMPLETED", 9, map[string][]int{"n1": {3}})
	j4.Incarnation = 2
	for i := range in.Replicas {
		in.Replicas[i].Jobs = append(in.Replicas[i].Jobs, j4)
	}
	in.Records = append(in.Records,
		rec("n2", []int{5}, 4, 1, 0, 2, 4, false),
		rec("n1", []int{3}, 4, 2, 0, 6, 8.5, true),
	)
	events := []Event{
		{Kind: Slow, Fault: "slow 2s on n2 at 64kbit latency 200ms", Targets: []string{"n2"}, Start: sec(2.5), End: sec(4.5), RecoverS: 0.4},
		{Kind: RestartAll, Fault: "restart-all 1s", Start: sec(5), End: sec(6), RecoverS: 2.5},
	}
	leaders := []LeaderSample{{At: sec(0), Leader: "n1"}, {At: sec(5), Leader: ""}, {At: sec(7), Leader: "n2"}}
	violations := []Violation{{Invariant: 3, Seed: 7, Job: 4, Node: "n2,n1", GPU: -1, From: sec(3), To: sec(4),
		Detail: "two incarnations live at once <test>"}}
	return in, events, leaders, violations
}

// TestBuildTimeline: each job's incarnation on each node is one run from
// its ranks' records, coloured by the job's final state, an older
// incarnation of a requeued job marked REQUEUED; faults become node
// states (restart-all on every node).
func TestBuildTimeline(t *testing.T) {
	in, events, leaders, violations := timelineInput()
	tl := buildTimeline(in, sec(0), events, leaders, violations)
	type run struct {
		job, inc   uint64
		node       string
		gpus       []int
		start, end float64
		outcome    string
	}
	var got []run
	for _, r := range tl.Runs {
		got = append(got, run{r.Job, r.Incarnation, r.Node, r.GPUs, r.Start.Sub(t0).Seconds(), r.End.Sub(t0).Seconds(), r.Outcome})
	}
	want := []run{
		{1, 1, "n1", []int{0, 1}, 1, 2.5, "COMPLETED"},
		{3, 1, "n1", []int{2}, 1, 3, "COMPLETED"},
		{3, 1, "n2", []int{2}, 1, 3, "COMPLETED"},
		{4, 1, "n2", []int{5}, 2, 4, OutcomeRequeued},
		{2, 1, "n1", []int{0}, 3, 5, "COMPLETED"},
		{4, 2, "n1", []int{3}, 6, 8.5, "COMPLETED"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("buildTimeline runs =\n%v\nwant\n%v", got, want)
	}
	var states []string
	for _, s := range tl.NodeStates() {
		states = append(states, s.Node+" "+s.State)
	}
	if w := []string{"n2 slowed", "n1 killed", "n2 killed"}; !reflect.DeepEqual(states, w) {
		t.Errorf("NodeStates = %v; want %v", states, w)
	}
	if !tl.End.Equal(in.FinalAt) || !tl.FaultsEnd.Equal(in.FaultsEnd) || len(tl.Leaders) != 3 || len(tl.Violations) != 1 {
		t.Errorf("timeline end %s faults end %s leaders %v violations %v", tl.End, tl.FaultsEnd, tl.Leaders, tl.Violations)
	}

	// A job the final state lacks is UNKNOWN.
	in.Records = append(in.Records, rec("n2", []int{7}, 99, 1, 0, 1, 2, true))
	tl = buildTimeline(in, sec(0), nil, nil, nil)
	found := false
	for _, r := range tl.Runs {
		found = found || (r.Job == 99 && r.Outcome == OutcomeUnknown)
	}
	if !found {
		t.Errorf("job 99, not in the final state: runs %v; want it UNKNOWN", tl.Runs)
	}
}

// svgElem is an element of the report's SVG, as encoding/xml reads it.
type svgElem struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []svgElem  `xml:",any"`
	Text     string     `xml:",chardata"`
}

func (e svgElem) attr(name string) string {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (e svgElem) walk(f func(svgElem)) {
	f(e)
	for _, c := range e.Children {
		c.walk(f)
	}
}

// reportSVG returns the parsed SVG of each seed's section of an HTML report.
func reportSVG(t *testing.T, page string) []svgElem {
	t.Helper()
	var out []svgElem
	for rest := page; ; {
		i := strings.Index(rest, "<svg ")
		if i < 0 {
			return out
		}
		j := strings.Index(rest[i:], "</svg>")
		if j < 0 {
			t.Fatalf("report: <svg> without </svg>")
		}
		var e svgElem
		if err := xml.Unmarshal([]byte(rest[i:i+j+len("</svg>")]), &e); err != nil {
			t.Fatalf("report: the SVG is not well-formed: %v", err)
		}
		out = append(out, e)
		rest = rest[i+j:]
	}
}

// TestWriteReport: the HTML report has the summary, one lane per node plus
// the fault and leader lanes, a bar per job incarnation and node (the
// requeued one dashed), the node states, the leaders, and the violation
// with its details, escaped; it loads nothing from elsewhere.
func TestWriteReport(t *testing.T) {
	in, events, leaders, violations := timelineInput()
	res := Result{Seed: 7, Mode: NetNamespaces, Faults: 2, Submitted: 5, Acknowledged: 4, Completed: 4, Requeues: 1, MaxRecoverS: 2.5,
		Events: events, Violations: violations, Timeline: buildTimeline(in, sec(0), events, leaders, violations)}
	failed := Result{Seed: 8, Mode: NetNamespaces, Violations: []Violation{{Invariant: 0, Seed: 8, GPU: -1, Inconclusive: true, Detail: "run failed: boom"}}}
	var b bytes.Buffer
	if err := WriteReport(&b, []Result{res, failed}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"http://", "https://", "<script", "<link", "src="} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("report contains %q: it must be self-contained", bad)
		}
	}
	for _, want := range []string{
		`<tr data-seed="7"><td>7</td><td class="l">netns</td><td>2</td><td>5</td><td>4</td><td>4</td><td>1</td><td>2.5s</td><td>1</td></tr>`,
		`<tr data-seed="8">`,
		`<li class="violation" data-invariant="3" data-job="4">invariant 3 seed 7: job 4 node n2,n1`,
		"two incarnations live at once &lt;test&gt;",
		"run failed: boom",
		"No timeline: the run did not get as far as its final state.",
		"slow 2s on n2 at 64kbit latency 200ms",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	svgs := reportSVG(t, page)
	if len(svgs) != 1 {
		t.Fatalf("report has %d timelines; want 1 (seed 8 has none)", len(svgs))
	}
	var lanes, jobs, states, leaderNodes, faults, marks []string
	svgs[0].walk(func(e svgElem) {
		switch e.attr("class") {
		case "lane":
			lanes = append(lanes, e.attr("data-lane")+":"+e.attr("data-node"))
		case "job":
			j := "j" + e.attr("data-job") + "." + e.attr("data-incarnation") + "@" + e.attr("data-node") + "=" + e.attr("data-outcome")
			if e.attr("stroke-dasharray") != "" {
				j += " dashed"
			}
			if e.attr("fill") != outcomeColour[e.attr("data-outcome")] {
				t.Errorf("job bar %s fill %s; want %s", j, e.attr("fill"), outcomeColour[e.attr("data-outcome")])
			}
			jobs = append(jobs, j)
		case "state":
			states = append(states, e.attr("data-state"))
		case "leader":
			leaderNodes = append(leaderNodes, e.attr("data-node"))
		case "fault":
			faults = append(faults, e.attr("data-kind"))
		case "violation-mark":
			marks = append(marks, e.attr("x"))
		}
	})
	checks := []struct {
		what      string
		got, want []string
	}{
		{"lanes", lanes, []string{"faults:", "leader:", "node:n1", "node:n2"}},
		{"job bars", jobs, []string{"j1.1@n1=COMPLETED", "j3.1@n1=COMPLETED", "j2.1@n1=COMPLETED", "j4.2@n1=COMPLETED",
			"j3.1@n2=COMPLETED", "j4.1@n2=REQUEUED dashed"}},
		{"node states", states, []string{"killed", "slowed", "killed"}},
		{"leaders", leaderNodes, []string{"n1", "", "n2"}},
		{"faults", faults, []string{"slow", "restart-all"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("report %s = %q; want %q", c.what, c.got, c.want)
		}
	}
	if len(marks) != 2 {
		t.Errorf("violation marks %v; want one on each of n1 and n2", marks)
	}
}

// TestWritePlot: the PNG decodes, and is taller with more seeds.
func TestWritePlot(t *testing.T) {
	in, events, leaders, violations := timelineInput()
	res := Result{Seed: 7, Timeline: buildTimeline(in, sec(0), events, leaders, violations)}
	size := func(results []Result) (int, int) {
		var b bytes.Buffer
		if err := WritePlot(&b, results); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("the plot is no PNG: %v", err)
		}
		return img.Bounds().Dx(), img.Bounds().Dy()
	}
	w1, h1 := size([]Result{res})
	w2, h2 := size([]Result{res, {Seed: 8}, res})
	if w1 < 500 || h1 < 200 || w2 != w1 || h2 <= h1 {
		t.Errorf("plot of one seed %dx%d, of two %dx%d; want a wide image that grows with the seeds", w1, h1, w2, h2)
	}
	if err := WritePlot(io.Discard, []Result{{Seed: 8}}); err == nil {
		t.Error("WritePlot with no timeline: no error")
	}
}
