package chaos

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WritePlot draws the timelines of results as a PNG, one panel per seed,
// the same picture as WriteReport's: a lane per node (what faults did to
// it in a strip, the job incarnations it ran as bars coloured by outcome,
// older incarnations of requeued jobs dashed), the faults and the leader
// over time, violations framed in red, against seconds since the run
// began.
func WritePlot(w io.Writer, results []Result) error {
	var plots [][]*plot.Plot
	var heights []float64
	for _, r := range results {
		if r.Timeline == nil {
			continue
		}
		p, h, err := timelinePlot(r.Timeline)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{p})
		heights = append(heights, h)
	}
	if len(plots) == 0 {
		return errors.New("plot: no seed got as far as a timeline")
	}
	// Each panel is as tall as its lanes; the image as tall as the panels.
	var total float64
	for _, h := range heights {
		total += h
	}
	img := vgimg.New(14*vg.Inch, vg.Length(total)*vg.Inch)
	dc := draw.New(img)
	top := dc.Max.Y
	for i, p := range plots {
		ph := vg.Length(heights[i]) * vg.Inch
		c := draw.Crop(dc, 0, 0, top-ph-dc.Min.Y, -(dc.Max.Y - top))
		c = draw.Crop(c, 2*vg.Millimeter, -4*vg.Millimeter, 2*vg.Millimeter, -2*vg.Millimeter)
		p[0].Draw(c)
		top -= ph
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// box is one rectangle of a timeline panel, in seconds (x) and lane units
// (y, from the bottom).
type box struct {
	x0, x1, y0, y1 float64
	fill           color.Color // nil: outline only
	stroke         color.Color // nil: none
	dashed         bool
	label          string
}

// boxes is a plot.Plotter of boxes.
type boxes struct {
	list       []box
	xmax, ymax float64
}

func (b *boxes) DataRange() (xmin, xmax, ymin, ymax float64) { return 0, b.xmax, 0, b.ymax }

func (b *boxes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := draw.TextStyle{Color: color.White, Font: font.From(plot.DefaultFont, vg.Points(6)), Handler: plot.DefaultTextHandler}
	for _, bx := range b.list {
		x0, x1, y0, y1 := trX(bx.x0), trX(bx.x1), trY(bx.y0), trY(bx.y1)
		x1 = max(x1, x0+0.5) // a blip stays visible
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}, {X: x0, Y: y0}}
		if bx.fill != nil {
			c.FillPolygon(bx.fill, pts)
		}
		if bx.stroke != nil {
			ls := draw.LineStyle{Color: bx.stroke, Width: vg.Points(0.6)}
			if bx.dashed {
				ls.Dashes = []vg.Length{vg.Points(2), vg.Points(1.5)}
			}
			c.StrokeLines(ls, pts)
		}
		if bx.label != "" {
			label := sty
			if bx.fill == nil {
				label.Color = color.Black
			}
			if w := label.Width(bx.label); w+vg.Points(2) <= x1-x0 {
				c.FillText(label, vg.Point{X: x0 + vg.Points(1), Y: y0 + (y1-y0)/2 - label.Height(bx.label)/3}, bx.label)
			}
		}
	}
}

// hexColour parses "#rrggbb".
func hexColour(s string) color.Color {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	if err != nil {
		return color.Gray{Y: 160}
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

// Lane heights of a panel, in lane units (one job bar is 1).
const (
	plotStrip = 0.6
	plotGap   = 0.5
)

// timelinePlot lays tl out as a plot and returns it with the height in
// inches it wants.
func timelinePlot(tl *Timeline) (*plot.Plot, float64, error) {
	t0, t1 := tl.span()
	sec := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	b := &boxes{xmax: sec(t1)}
	var ticks []plot.Tick
	y := 0.0 // lanes are laid out from the bottom up: nodes last first
	nodes, byNode := tl.lanes()
	states := tl.NodeStates()
	for k := len(nodes) - 1; k >= 0; k-- {
		n := nodes[k]
		runs := byNode[n]
		rows, nrows := packRuns(runs)
		nrows = max(nrows, 1)
		base := y
		for i, r := range runs {
			ry := base + float64(nrows-1-rows[i])
			b.list = append(b.list, box{x0: sec(r.Start), x1: sec(r.End), y0: ry + 0.1, y1: ry + 0.9,
				fill: hexColour(colourOr(outcomeColour, r.Outcome)), stroke: color.Gray{Y: 50},
				dashed: r.Outcome == OutcomeRequeued, label: jobLabel(r)})
		}
		stripY := base + float64(nrows)
		for _, st := range states {
			if st.Node == n {
				b.list = append(b.list, box{x0: sec(st.Start), x1: sec(st.End), y0: stripY + 0.05, y1: stripY + plotStrip,
					fill: hexColour(colourOr(stateColour, st.State))})
			}
		}
		top := stripY + plotStrip
		for _, v := range tl.Violations {
			if !v.From.IsZero() && slices.Contains(strings.Split(v.Node, ","), n) {
				b.list = append(b.list, box{x0: sec(v.From), x1: sec(v.To), y0: base, y1: top, stroke: color.RGBA{R: 214, G: 39, B: 40, A: 255}})
			}
		}
		ticks = append(ticks, plot.Tick{Value: (base + top) / 2, Label: n})
		y = top + plotGap
	}
	// The leader lane.
	for i, ls := range tl.Leaders {
		end := t1
		if i+1 < len(tl.Leaders) {
			end = tl.Leaders[i+1].At
		}
		bx := box{x0: sec(ls.At), x1: sec(end), y0: y + 0.1, y1: y + 0.9, label: ls.Leader}
		if ls.Leader == "" {
			bx.stroke, bx.dashed, bx.label = color.RGBA{R: 214, G: 39, B: 40, A: 255}, true, "none"
		} else {
			c := "#c7c7c7"
			if k := slices.Index(tl.Nodes, ls.Leader); k >= 0 {
				c = leaderColours[k%len(leaderColours)]
			}
			bx.fill = hexColour(c)
		}
		b.list = append(b.list, bx)
	}
	ticks = append(ticks, plot.Tick{Value: y + 0.5, Label: "leader"})
	y++
	y += plotGap / 2
	// The fault lane.
	for _, ev := range tl.Events {
		b.list = append(b.list, box{x0: sec(ev.Start), x1: sec(ev.End), y0: y + 0.1, y1: y + 0.9,
			fill: hexColour(colourOr(stateColour, nodeStateOf[ev.Kind])), label: string(ev.Kind)})
	}
	ticks = append(ticks, plot.Tick{Value: y + 0.5, Label: "faults"})
	y++
	b.ymax = y
	if !tl.FaultsEnd.IsZero() {
		fx := sec(tl.FaultsEnd)
		b.list = append(b.list, box{x0: fx, x1: fx, y0: 0, y1: y, stroke: color.Gray{Y: 80}, dashed: true})
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("shoal chaos seed %d: %d faults, %d job runs (incarnation x node), %d violations", tl.Seed, len(tl.Events), len(tl.Runs), len(tl.Violations))
	p.X.Label.Text = "seconds since the run began"
	p.X.Min, p.X.Max = 0, b.xmax
	p.Y.Min, p.Y.Max = 0, b.ymax
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(b)
	// About a quarter inch a lane unit, plus the title and the axis.
	return p, 1.2 + y*0.22, nil
}
