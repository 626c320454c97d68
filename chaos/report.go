package chaos

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Colours of the report and the plot: job bars by outcome, node lanes by
// what a fault did to the node.
var (
	outcomeColour = map[string]string{
		"COMPLETED": "#2ca02c", "FAILED": "#d62728", "CANCELLED": "#7f7f7f", "TIMEOUT": "#ff7f0e",
		"NODE_FAIL": "#9467bd", "OUT_OF_MEMORY": "#e377c2", OutcomeRequeued: "#bcbd22", OutcomeUnknown: "#17becf",
	}
	stateColour = map[string]string{
		"killed": "#000000", "paused": "#8c564b", "cut off": "#d62728", "one-way": "#ff9896",
		"flapping": "#e377c2", "slowed": "#1f77b4", "lossy": "#ff7f0e",
	}
	// leaderColours colour the leader lane by node, in node order.
	leaderColours = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}
)

// colourOr is m[k], or grey for a key the palette lacks (a job state added
// later).
func colourOr(m map[string]string, k string) string {
	if c, ok := m[k]; ok {
		return c
	}
	return "#c7c7c7"
}

// Geometry of a report's timeline, in SVG pixels.
const (
	svgWidth    = 1200
	svgLeft     = 110
	svgRight    = 20
	svgAxis     = 24
	svgLaneGap  = 6
	svgBar      = 12
	svgBarGap   = 2
	svgStrip    = 10
	svgLabelMin = 28 // the narrowest span that gets a text label
)

// packRuns sorts a lane's runs by start and assigns each the lowest row
// where it overlaps no earlier run, and returns the rows and how many
// there are.
func packRuns(runs []JobRun) ([]int, int) {
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
	rows := make([]int, len(runs))
	var rowEnd []time.Time
	for i, run := range runs {
		r := slices.IndexFunc(rowEnd, func(e time.Time) bool { return !e.After(run.Start) })
		if r < 0 {
			r = len(rowEnd)
			rowEnd = append(rowEnd, time.Time{})
		}
		rowEnd[r] = run.End
		rows[i] = r
	}
	return rows, len(rowEnd)
}

// span is the time range a timeline draws.
func (tl *Timeline) span() (t0, t1 time.Time) {
	t0, t1 = tl.Start, tl.End
	for _, r := range tl.Runs {
		if r.Start.Before(t0) {
			t0 = r.Start
		}
		if r.End.After(t1) {
			t1 = r.End
		}
	}
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	return t0, t1
}

// lanes are the nodes a timeline draws a lane for, the run's then any
// other a record names, with each node's job runs.
func (tl *Timeline) lanes() (nodes []string, byNode map[string][]JobRun) {
	byNode = map[string][]JobRun{}
	for _, r := range tl.Runs {
		byNode[r.Node] = append(byNode[r.Node], r)
	}
	nodes = slices.Clone(tl.Nodes)
	for n := range byNode {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n) // a record from a node the run did not name
		}
	}
	return nodes, byNode
}

// WriteReport writes a self-contained HTML report of results: the summary
// table, and for each seed with a timeline an inline SVG of it — a lane
// per node with what faults did to it and the job incarnations it ran
// (coloured by outcome), the faults and the leader over time — and the
// violations with their details. It loads nothing from the network.
func WriteReport(w io.Writer, results []Result) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	esc := html.EscapeString
	p("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>shoal chaos report</title>\n")
	p("<style>body{font:14px sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}" +
		"th{background:#eee}td.l,th.l{text-align:left}svg text{font:11px sans-serif}.legend span{display:inline-block;margin-right:1em}" +
		".legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}li.violation{font-family:monospace;margin:.3em 0}</style>\n")
	p("</head><body>\n<h1>shoal chaos</h1>\n")
	p("<table class=\"summary\"><tr><th>seed</th><th class=\"l\">mode</th><th>faults</th><th>submitted</th><th>acknowledged</th><th>completed</th><th>requeues</th><th>max recover</th><th>violations</th></tr>\n")
	for _, r := range results {
		p("<tr data-seed=\"%d\"><td>%d</td><td class=\"l\">%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%.1fs</td><td>%d</td></tr>\n",
			r.Seed, r.Seed, esc(string(r.Mode)), r.Faults, r.Submitted, r.Acknowledged, r.Completed, r.Requeues, r.MaxRecoverS, len(r.Violations))
	}
	p("</table>\n")
	p("<p class=\"legend\">jobs: ")
	for _, k := range []string{"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", OutcomeRequeued, OutcomeUnknown} {
		p("<span><i style=\"background:%s\"></i>%s</span>", outcomeColour[k], esc(strings.ToLower(k)))
	}
	p("<br>nodes: ")
	for _, k := range []string{"killed", "paused", "cut off", "one-way", "flapping", "slowed", "lossy"} {
		p("<span><i style=\"background:%s\"></i>%s</span>", stateColour[k], esc(k))
	}
	p("</p>\n")
	for _, r := range results {
		p("<section class=\"seed\" data-seed=\"%d\">\n<h2>seed %d</h2>\n", r.Seed, r.Seed)
		if r.Timeline == nil {
			p("<p>No timeline: the run did not get as far as its final state.</p>\n")
		} else {
			writeSVG(bw, r.Timeline)
		}
		if len(r.Events) > 0 {
			p("<h3>faults</h3>\n<table class=\"faults\"><tr><th class=\"l\">start</th><th class=\"l\">fault</th><th>held</th><th>recovered in</th><th class=\"l\">error</th></tr>\n")
			for _, ev := range r.Events {
				rec := "never"
				if ev.RecoverS >= 0 {
					rec = fmt.Sprintf("%.1fs", ev.RecoverS)
				}
				p("<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%s</td><td>%s</td><td class=\"l\">%s</td></tr>\n",
					ev.Start.UTC().Format(timeFormat), esc(ev.Fault), ev.End.Sub(ev.Start).Round(time.Millisecond), rec, esc(ev.Err))
			}
			p("</table>\n")
		}
		p("<h3>violations</h3>\n")
		if len(r.Violations) == 0 {
			p("<p class=\"none\">none: every invariant was checked and held.</p>\n")
		} else {
			p("<ul class=\"violations\">\n")
			for _, v := range r.Violations {
				p("<li class=\"violation\" data-invariant=\"%d\" data-job=\"%d\">%s</li>\n", v.Invariant, v.Job, esc(v.String()))
			}
			p("</ul>\n")
		}
		if r.Dir != "" {
			p("<p>Data dirs, agent logs and records kept in <code>%s</code>.</p>\n", esc(r.Dir))
		}
		p("</section>\n")
	}
	p("</body></html>\n")
	return bw.Flush()
}

// writeSVG draws tl as an inline SVG.
func writeSVG(w io.Writer, tl *Timeline) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	esc := html.EscapeString
	t0, t1 := tl.span()
	scale := float64(svgWidth-svgLeft-svgRight) / t1.Sub(t0).Seconds()
	x := func(t time.Time) float64 { return svgLeft + t.Sub(t0).Seconds()*scale }
	wid := func(a, b time.Time) float64 { return max(b.Sub(a).Seconds()*scale, 1) }
	clock := func(t time.Time) string { return t.UTC().Format(timeFormat) }

	// Lay out the lanes first: the SVG's height depends on them.
	nodes, byNode := tl.lanes()
	type lane struct {
		node   string
		y      float64
		runs   []JobRun
		rows   []int
		height float64
	}
	y := float64(svgAxis)
	faultY := y
	y += svgBar + svgLaneGap
	leaderY := y
	y += svgBar + svgLaneGap
	var lanes []lane
	for _, n := range nodes {
		runs := byNode[n]
		rows, nrows := packRuns(runs)
		h := svgStrip + svgBarGap + float64(max(nrows, 1))*(svgBar+svgBarGap)
		lanes = append(lanes, lane{node: n, y: y, runs: runs, rows: rows, height: h})
		y += h + svgLaneGap
	}
	height := y + 4

	p("<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n", svgWidth, height, svgWidth, height)
	// Time axis: a tick every step seconds.
	total := t1.Sub(t0).Seconds()
	step := niceStep(total / 12)
	for s := 0.0; s <= total; s += step {
		tx := svgLeft + s*scale
		p("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eee\"/><text x=\"%.1f\" y=\"14\" text-anchor=\"middle\">%gs</text>\n",
			tx, svgAxis-4, tx, height, tx, s)
	}
	if !tl.FaultsEnd.IsZero() {
		fx := x(tl.FaultsEnd)
		p("<line class=\"faults-end\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#555\" stroke-dasharray=\"4 3\"><title>faults stopped %s</title></line>\n",
			fx, svgAxis-4, fx, height, clock(tl.FaultsEnd))
	}

	p("<g class=\"lane\" data-lane=\"faults\"><text x=\"4\" y=\"%.1f\">faults</text>\n", faultY+svgBar-2)
	for _, ev := range tl.Events {
		fx, fw := x(ev.Start), wid(ev.Start, ev.End)
		p("<g class=\"fault\" data-kind=\"%s\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.35\" stroke=\"%s\"><title>%s %s–%s, recovered in %.1fs</title></rect>",
			esc(string(ev.Kind)), fx, faultY, fw, svgBar, colourOr(stateColour, nodeStateOf[ev.Kind]), colourOr(stateColour, nodeStateOf[ev.Kind]),
			esc(ev.Fault), clock(ev.Start), clock(ev.End), ev.RecoverS)
		p("<text x=\"%.1f\" y=\"%.1f\">%s</text></g>\n", fx+2, faultY+svgBar-2, esc(string(ev.Kind)))
	}
	p("</g>\n")

	p("<g class=\"lane\" data-lane=\"leader\"><text x=\"4\" y=\"%.1f\">leader</text>\n", leaderY+svgBar-2)
	for i, ls := range tl.Leaders {
		end := t1
		if i+1 < len(tl.Leaders) {
			end = tl.Leaders[i+1].At
		}
		if ls.Leader == "" {
			p("<rect class=\"leader\" data-node=\"\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"none\" stroke=\"#d62728\" stroke-dasharray=\"2 2\"><title>no leader from %s</title></rect>\n",
				x(ls.At), leaderY, wid(ls.At, end), svgBar, clock(ls.At))
			continue
		}
		c := "#c7c7c7"
		if k := slices.Index(tl.Nodes, ls.Leader); k >= 0 {
			c = leaderColours[k%len(leaderColours)]
		}
		lw := wid(ls.At, end)
		p("<rect class=\"leader\" data-node=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.6\"><title>leader %s from %s</title></rect>\n",
			esc(ls.Leader), x(ls.At), leaderY, lw, svgBar, c, esc(ls.Leader), clock(ls.At))
		if lw >= svgLabelMin {
			p("<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x(ls.At)+2, leaderY+svgBar-2, esc(ls.Leader))
		}
	}
	p("</g>\n")

	states := tl.NodeStates()
	for _, ln := range lanes {
		p("<g class=\"lane\" data-lane=\"node\" data-node=\"%s\">\n<line x1=\"0\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"4\" y=\"%.1f\">%s</text>\n",
			esc(ln.node), ln.y-svgLaneGap/2, svgWidth, ln.y-svgLaneGap/2, ln.y+svgStrip+svgBar, esc(ln.node))
		for _, st := range states {
			if st.Node != ln.node {
				continue
			}
			p("<rect class=\"state\" data-state=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s: %s %s–%s</title></rect>\n",
				esc(st.State), x(st.Start), ln.y, wid(st.Start, st.End), svgStrip, colourOr(stateColour, st.State),
				esc(st.State), esc(st.Fault), clock(st.Start), clock(st.End))
		}
		for _, v := range tl.Violations {
			if v.From.IsZero() || !slices.Contains(strings.Split(v.Node, ","), ln.node) {
				continue
			}
			p("<rect class=\"violation-mark\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"><title>%s</title></rect>\n",
				x(v.From), ln.y, wid(v.From, v.To), ln.height, esc(v.String()))
		}
		for i, r := range ln.runs {
			by := ln.y + svgStrip + svgBarGap + float64(ln.rows[i])*(svgBar+svgBarGap)
			bx, bw := x(r.Start), wid(r.Start, r.End)
			dash := ""
			if r.Outcome == OutcomeRequeued {
				dash = ` stroke-dasharray="3 2"`
			}
			p("<rect class=\"job\" data-job=\"%d\" data-incarnation=\"%d\" data-node=\"%s\" data-outcome=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\"%s>"+
				"<title>job %d incarnation %d on %s GPUs %v %s–%s (%s): %s</title></rect>\n",
				r.Job, r.Incarnation, esc(r.Node), esc(r.Outcome), bx, by, bw, svgBar, colourOr(outcomeColour, r.Outcome), dash,
				r.Job, r.Incarnation, esc(r.Node), r.GPUs, clock(r.Start), clock(r.End), r.End.Sub(r.Start).Round(time.Millisecond), esc(r.Outcome))
			if label := jobLabel(r); bw >= float64(7*len(label)) {
				p("<text x=\"%.1f\" y=\"%.1f\" fill=\"#fff\">%s</text>\n", bx+2, by+svgBar-2, label)
			}
		}
		p("</g>\n")
	}
	p("</svg>\n")
}

// jobLabel names a job bar: "j12", or "j12.2" for its second incarnation.
func jobLabel(r JobRun) string {
	if r.Incarnation > 1 {
		return fmt.Sprintf("j%d.%d", r.Job, r.Incarnation)
	}
	return fmt.Sprintf("j%d", r.Job)
}

// niceStep rounds a tick interval in seconds up to 1, 2 or 5 times a power
// of ten.
func niceStep(s float64) float64 {
	if s <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(s)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= s {
			return m * p
		}
	}
	return 10 * p
}
