package sim

import (
	"errors"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotBins is how many points each curve of WritePlot has at most: the
// timeline is averaged (utilization) or maximized (queue) into bins.
const plotBins = 1500

// WritePlot draws r's timeline as a PNG: GPU utilization (busy GPUs /
// all GPUs, time-averaged per bin) above queue length (the most jobs
// waiting in each bin), against time since the first event, in hours for
// spans up to three days, else in days.
func WritePlot(w io.Writer, r *Result, title string) error {
	tl := r.Timeline
	if len(tl) < 2 {
		return errors.New("plot: the replay has fewer than two events")
	}
	t0, t1 := tl[0].Time, tl[len(tl)-1].Time
	span := float64(max(t1-t0, 1))
	unit, unitName := 3600.0, "hours"
	if span > 3*86400 {
		unit, unitName = 86400, "days"
	}
	width := span / plotBins
	busy := make([]float64, plotBins) // GPU-seconds per bin
	queue := make([]float64, plotBins)
	bin := func(t float64) int { return min(int(t/width), plotBins-1) }
	for i := 0; i+1 < len(tl); i++ {
		a, b := float64(tl[i].Time-t0), float64(tl[i+1].Time-t0)
		for k := bin(a); k <= bin(b) && k < plotBins; k++ {
			lo, hi := max(a, float64(k)*width), min(b, float64(k+1)*width)
			if hi > lo {
				busy[k] += float64(tl[i].BusyGPUs) * (hi - lo)
			}
			if hi > lo || k == bin(a) {
				queue[k] = max(queue[k], float64(tl[i].Queued))
			}
		}
	}
	total := float64(r.Options.Cluster.TotalGPUs())
	util, queued := make(plotter.XYs, plotBins), make(plotter.XYs, plotBins)
	for k := range plotBins {
		x := (float64(k) * width) / unit
		util[k] = plotter.XY{X: x, Y: busy[k] / (width * total)}
		queued[k] = plotter.XY{X: x, Y: queue[k]}
	}

	top, err := curve(util, title, "GPU utilization", color.RGBA{R: 31, G: 119, B: 180, A: 255})
	if err != nil {
		return err
	}
	top.Y.Min, top.Y.Max = 0, 1
	bottom, err := curve(queued, "", "jobs waiting", color.RGBA{R: 214, G: 39, B: 40, A: 255})
	if err != nil {
		return err
	}
	bottom.Y.Min = 0
	bottom.X.Label.Text = fmt.Sprintf("time since the first submit (%s)", unitName)

	img := vgimg.New(10*vg.Inch, 6*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	plots := [][]*plot.Plot{{top}, {bottom}}
	canvases := plot.Align(plots, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// curve is a plot of one step line.
func curve(xys plotter.XYs, title, ylabel string, c color.Color) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, fmt.Errorf("plot %s: %w", ylabel, err)
	}
	l.StepStyle = plotter.PostStep
	l.Color = c
	l.Width = vg.Points(1)
	p.Add(l)
	return p, nil
}
