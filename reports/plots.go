package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Every plot of a report uses Liberation Sans (embedded in gonum/plot), so SVG
// and PNG look alike on every machine.
func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

// Figure is a rendered-on-demand chart: one plot or a grid of plots (row-major)
// with a size. Render it with WriterTo.
type Figure struct {
	Name   string   // file stem, e.g. "wait_cdf"
	Title  string   // caption for index.html
	Legend []string // policy labels shown as colour swatches in the caption (panels without legends)
	Grid   [][]*plot.Plot
	Width  vg.Length
	Height vg.Length
}

// maxLinePoints bounds the points drawn per CDF line and maxTimePoints the
// buckets of a time-series line (bucket means), so plots of million-job runs stay
// small and busy time series stay readable.
const (
	maxLinePoints = 1500
	maxTimePoints = 500
)

// WriterTo renders the figure as "png" or "svg".
func (f *Figure) WriterTo(format string) (io.WriterTo, error) {
	if len(f.Grid) == 0 || len(f.Grid[0]) == 0 {
		return nil, fmt.Errorf("figure %s: nothing to draw", f.Name)
	}
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(110))}
	case "svg":
		c = vgsvg.New(f.Width, f.Height)
	default:
		return nil, fmt.Errorf("figure %s: unsupported format %q (want png or svg)", f.Name, format)
	}
	dc := draw.New(c)
	if len(f.Grid) == 1 && len(f.Grid[0]) == 1 {
		drawPlot(f.Grid[0][0], dc)
		return c, nil
	}
	rows, cols := len(f.Grid), len(f.Grid[0])
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	labels := make([][]string, rows)
	for r := range f.Grid { // Align must size the plots as drawPlot draws them
		labels[r] = make([]string, len(f.Grid[r]))
		for k, p := range f.Grid[r] {
			if p != nil {
				labels[r][k], p.X.Label.Text = p.X.Label.Text, ""
			}
		}
	}
	canvases := plot.Align(f.Grid, tiles, dc)
	for r := range f.Grid {
		for k, p := range f.Grid[r] {
			if p != nil {
				p.X.Label.Text = labels[r][k]
				drawPlot(p, canvases[r][k])
			}
		}
	}
	return c, nil
}

// drawPlot draws p on c with two changes to gonum/plot's layout:
//   - the x-axis label is drawn by hand, centred under the data area:
//     gonum/plot (v0.17 horizontalAxis.GlyphBoxes) places the label's glyph box
//     at the data midpoint Norm((Min+Max)/2), which on a logarithmic axis lies
//     near the right end, so a long label made Plot.Draw shrink the data area by
//     a third to keep the box inside the canvas;
//   - the legend goes in a column right of the axes, top-aligned with the data
//     area, so it never covers a line.
func drawPlot(p *plot.Plot, c draw.Canvas) {
	lbl := p.X.Label.Text
	sty := p.X.Label.TextStyle
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YBottom
	inner := c
	if lbl != "" {
		inner.Min.Y += sty.Height(lbl) + p.X.Label.Padding
		p.X.Label.Text = ""
		defer func() { p.X.Label.Text = lbl }()
	}
	leg := p.Legend
	legW := leg.Rectangle(inner).Size().X
	// Right margin: 4 pt plus 15 % of the legend's width, because a browser
	// draws the inlined SVG's text in its own sans-serif font, which can run
	// wider than the font gonum measured it with (a long label was clipped).
	margin := vg.Points(4) + legW*0.15
	if legW > 0 {
		inner.Max.X -= legW + vg.Points(10) + margin // 10 pt gap
		p.Legend = plot.NewLegend()
		defer func() { p.Legend = leg }()
	}
	p.Draw(inner)
	dac := p.DataCanvas(inner)
	if lbl != "" {
		c.FillText(sty, vg.Point{X: (dac.Min.X + dac.Max.X) / 2, Y: c.Min.Y + sty.FontExtents().Descent}, lbl)
	}
	if legW > 0 {
		area := dac
		area.Min.X, area.Max.X = c.Max.X-legW-margin, c.Max.X-margin
		leg.Top, leg.Left, leg.XOffs, leg.YOffs = true, true, 0, 0
		leg.Draw(area)
	}
}

// Render returns the figure's bytes in format ("png" or "svg").
func (f *Figure) Render(format string) ([]byte, error) {
	wt, err := f.WriterTo(format)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("figure %s: render %s: %w", f.Name, format, err)
	}
	return buf.Bytes(), nil
}

// Series is a named sample of values (one line of a CDF).
type Series struct {
	Name   string
	Values []float64
	Policy bool // Name is a policy label: draw it in PolicyColor(Name)
}

// TimeSeries is a named line over time.
type TimeSeries struct {
	Name   string
	T, Y   []float64 // seconds, value
	Policy bool      // Name is a policy label: draw it in PolicyColor(Name)
}

// timeUnit picks a readable unit for a span in seconds.
func timeUnit(maxSeconds float64) (name string, div float64) {
	switch {
	case maxSeconds >= 3*86400:
		return "days", 86400
	case maxSeconds >= 3*3600:
		return "h", 3600
	case maxSeconds >= 3*60:
		return "min", 60
	}
	return "s", 1
}

func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	return p
}

func lineColor(i int) color.Color { return plotutil.Color(i) }

// seriesColor is a series' colour: its policy's fixed colour, or the i-th of
// the default palette.
func seriesColor(name string, policy bool, i int) color.Color {
	if policy {
		return PolicyColor(name)
	}
	return lineColor(i)
}

func addLineColor(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashes []vg.Length) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return // only NaN/Inf data, which we never build
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	l.Dashes = dashes
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
}

// cdfPoints returns at most maxLinePoints points of the empirical CDF of sorted
// values (x in the given unit divisor, y as a fraction).
func cdfPoints(sorted []float64, div float64) plotter.XYs {
	n := len(sorted)
	if n == 0 {
		return nil
	}
	m := min(n, maxLinePoints)
	xys := make(plotter.XYs, 0, m+1)
	xys = append(xys, plotter.XY{X: sorted[0] / div, Y: 0})
	for k := 1; k <= m; k++ {
		i := k*n/m - 1
		xys = append(xys, plotter.XY{X: sorted[i] / div, Y: float64(i+1) / float64(n)})
	}
	return xys
}

// logTimeTicks are the major ticks of a logarithmic time axis in seconds.
var logTimeTicks = []struct {
	s     float64
	label string
}{{1, "1 s"}, {10, "10 s"}, {60, "1 min"}, {600, "10 min"}, {3600, "1 h"}, {36000, "10 h"},
	{86400, "1 d"}, {864000, "10 d"}, {8640000, "100 d"}}

// logTimeTicker labels a log time axis (seconds) in human units, with unlabelled
// minor ticks at 2..9 x each power of ten.
type logTimeTicker struct{ sparse bool }

func (lt logTimeTicker) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, t := range logTimeTicks {
		if t.s >= lo*0.999 && t.s <= hi*1.001 {
			label := t.label
			if lt.sparse && !strings.HasPrefix(label, "1 ") {
				label = "" // small panels: 1 s, 1 min, 1 h, 1 d only
			}
			ts = append(ts, plot.Tick{Value: t.s, Label: label})
		}
	}
	for d := 1.0; d <= hi; d *= 10 {
		for k := 2.0; k <= 9; k++ {
			if v := k * d; v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	return ts
}

// CDFLogFloor is the smallest value (seconds) a logarithmic CDF axis shows;
// smaller values (jobs that started at once) are drawn at it.
const CDFLogFloor = 1.0

// CDFPlot draws the empirical CDF of each series (values in seconds). When the
// values span at least two decades above CDFLogFloor (the largest p99 is >= 100
// s), the x axis is logarithmic with human time ticks, starting at 1 s (values
// below 1 s are drawn at 1 s, so the line starts at the fraction of jobs with
// at most 1 s) and ending at the largest value. Otherwise the x unit is chosen
// from the largest p99 and the axis ends at 1.15 x that p99 when some value lies
// beyond (the label says so). Policy series keep their fixed colours.
func CDFPlot(title, quantity string, series []Series) *plot.Plot {
	return cdfPanel(title, quantity, series, false)
}

// cdfPanel is CDFPlot; small (a panel of a grid) drops the legend (the figure's
// caption carries the policy colours), labels fewer ticks and keeps the axis
// label short.
func cdfPanel(title, quantity string, series []Series, small bool) *plot.Plot {
	var top, maxV float64
	sorted := make([][]float64, len(series))
	for i, s := range series {
		v := slices.Clone(s.Values)
		slices.Sort(v)
		sorted[i] = v
		if len(v) > 0 {
			top = max(top, Percentile(v, 99))
			maxV = max(maxV, v[len(v)-1])
		}
	}
	if top >= 100*CDFLogFloor {
		xl := quantity + " (log scale; values under 1 s drawn at 1 s)"
		if small {
			xl = quantity + " (log scale)"
		}
		p := newPlot(title, xl, "Fraction of jobs (CDF)")
		p.Y.Min, p.Y.Max = 0, 1
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTimeTicker{sparse: small}
		for i, s := range series {
			if len(sorted[i]) == 0 {
				continue
			}
			v := sorted[i]
			for k := range v {
				v[k] = max(v[k], CDFLogFloor)
			}
			name := fmt.Sprintf("%s (n=%d)", s.Name, len(v))
			if small {
				name = ""
			}
			addLineColor(p, name, cdfPoints(v, 1), seriesColor(s.Name, s.Policy, i), nil)
		}
		p.X.Min, p.X.Max = CDFLogFloor, max(maxV, 10*CDFLogFloor)
		p.Legend.Top, p.Legend.Left = false, false
		p.Legend.XOffs = -vg.Points(4)
		p.Legend.YOffs = vg.Points(4)
		return p
	}
	unit, div := timeUnit(top)
	xlabel := fmt.Sprintf("%s (%s)", quantity, unit)
	// A long tail would squeeze the body of every line against the y axis: cut the
	// axis a little past the largest p99 (the lines are clipped there).
	cut := 1.15 * top
	if top > 0 && maxV > cut {
		xlabel += "; axis cut at 1.15 x the largest p99"
	}
	p := newPlot(title, xlabel, "Fraction of jobs (CDF)")
	p.Y.Min, p.Y.Max = 0, 1
	p.X.Min = 0
	for i, s := range series {
		if len(sorted[i]) == 0 {
			continue
		}
		name := fmt.Sprintf("%s (n=%d)", s.Name, len(sorted[i]))
		if small {
			name = ""
		}
		addLineColor(p, name, cdfPoints(sorted[i], div), seriesColor(s.Name, s.Policy, i), nil)
	}
	if top > 0 && maxV > cut {
		p.X.Max = cut / div // after Add, which widens the axis to the data
	}
	p.Legend.Top = false
	p.Legend.Left = false
	return p
}

// downsample averages a series into at most maxTimePoints buckets.
func downsample(t, y []float64, div float64) plotter.XYs {
	n := min(len(t), len(y))
	if n == 0 {
		return nil
	}
	step := (n + maxTimePoints - 1) / maxTimePoints
	xys := make(plotter.XYs, 0, n/step+1)
	for lo := 0; lo < n; lo += step {
		hi := min(lo+step, n)
		var sy float64
		for i := lo; i < hi; i++ {
			sy += y[i]
		}
		xys = append(xys, plotter.XY{X: t[lo] / div, Y: sy / float64(hi-lo)})
	}
	return xys
}

// TimePlot draws lines over virtual time (seconds; the axis unit is chosen from
// the longest series).
func TimePlot(title, ylabel string, series []TimeSeries) *plot.Plot {
	var top float64
	for _, s := range series {
		if len(s.T) > 0 {
			top = max(top, s.T[len(s.T)-1])
		}
	}
	unit, div := timeUnit(top)
	p := newPlot(title, fmt.Sprintf("Simulated time (%s)", unit), ylabel)
	p.X.Min = 0
	p.Y.Min = 0
	ymax := 0.0
	for i, s := range series {
		if len(s.T) == 0 {
			continue
		}
		xys := downsample(s.T, s.Y, div)
		for _, xy := range xys {
			ymax = max(ymax, xy.Y)
		}
		addLineColor(p, s.Name, xys, seriesColor(s.Name, s.Policy, i), plotutil.Dashes(i/len(plotutil.DefaultColors)))
	}
	// Headroom above the data keeps the legend (top right) off the lines.
	if ymax > 0 {
		p.Y.Max = ymax * (1.08 + 0.07*float64(len(series)))
	}
	p.Legend.Top = true
	return p
}

// smoothingWindows are the moving-average windows UtilizationFigure picks from.
var smoothingWindows = []struct {
	s    float64
	name string
}{{60, "1 min"}, {300, "5 min"}, {600, "10 min"}, {1800, "30 min"}, {3600, "1 h"}, {7200, "2 h"},
	{21600, "6 h"}, {43200, "12 h"}, {86400, "1 d"}, {7 * 86400, "7 d"}}

// SmoothingWindow picks the moving-average window for a time series spanning
// span seconds: the smallest listed window of at least span/100 (so a plot shows
// about a hundred independent points).
func SmoothingWindow(span float64) (seconds float64, name string) {
	for _, w := range smoothingWindows {
		if w.s >= span/100 {
			return w.s, w.name
		}
	}
	w := smoothingWindows[len(smoothingWindows)-1]
	return w.s, w.name
}

// movingAverage is the trailing mean of y over window seconds at each sample.
func movingAverage(t, y []float64, window float64) []float64 {
	out := make([]float64, len(y))
	var sum float64
	lo := 0
	for i := range y {
		sum += y[i]
		for t[i]-t[lo] >= window && lo < i {
			sum -= y[lo]
			lo++
		}
		out[i] = sum / float64(i-lo+1)
	}
	return out
}

// UtilizationFigure draws GPU utilization (percent) as small multiples, one
// panel per policy on the same axes (0-100 %, the same time range), each
// smoothed by a trailing moving average whose window the title states.
func UtilizationFigure(series []TimeSeries, note string) *Figure {
	return utilizationFigure(series, nil, note)
}

func utilizationFigure(series, useful []TimeSeries, note string) *Figure {
	var top float64
	for _, s := range series {
		if len(s.T) > 0 {
			top = max(top, s.T[len(s.T)-1])
		}
	}
	win, wname := SmoothingWindow(top)
	unit, div := timeUnit(top)
	cols := min(2, max(1, len(series)))
	rows := (len(series) + cols - 1) / cols
	grid := make([][]*plot.Plot, max(rows, 1))
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
	}
	for k, s := range series {
		p := newPlot(s.Name, fmt.Sprintf("Simulated time (%s)", unit), "GPUs allocated (%)")
		p.X.Min, p.X.Max = 0, math.Max(top/div, 1e-9)
		p.Y.Min, p.Y.Max = 0, 100
		p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})
		if len(s.T) > 0 {
			ys := movingAverage(s.T, s.Y, win)
			for i := range ys {
				ys[i] = min(ys[i], 100)
			}
			name := ""
			if useful != nil {
				name = "allocated"
			}
			addLineColor(p, name, downsample(s.T, ys, div), seriesColor(s.Name, s.Policy, k), nil)
		}
		if useful != nil && len(useful[k].T) > 0 {
			u := useful[k]
			ys := movingAverage(u.T, u.Y, win)
			for i := range ys {
				ys[i] = min(ys[i], 100)
			}
			p.Y.Label.Text = "GPUs (%)"
			addLineColor(p, "useful", downsample(u.T, ys, div), color.Black, []vg.Length{vg.Points(4), vg.Points(2)})
			// room above 100 % for the legend (useful may exceed allocated where
			// co-located jobs' speed factors sum above 1)
			p.Y.Max = 130
			p.Legend.Top, p.Legend.Left = true, false
		}
		grid[k/cols][k%cols] = p
	}
	title := fmt.Sprintf("GPU utilization (allocated GPUs), %s moving average%s", wname, note)
	return &Figure{Name: "utilization", Title: title, Grid: grid,
		Width: vg.Length(cols) * 5.2 * vg.Inch, Height: vg.Length(max(rows, 1)) * 2.6 * vg.Inch}
}

// UsefulUtilizationFigure draws, per policy, the allocated GPU utilization (solid,
// the policy's colour) and the useful utilization (dashed, black: work done at
// reference speed / capacity, which co-location slowdowns push below the
// allocated line and packing gains, factors summing above 1, above it) on the same axes as UtilizationFigure, smoothed alike. alloc
// and useful are paired by index; runs without device-level sharing are left out
// by the caller.
func UsefulUtilizationFigure(alloc, useful []TimeSeries, note string) *Figure {
	f := utilizationFigure(alloc, useful, note)
	f.Name = "utilization_useful"
	f.Title = strings.Replace(f.Title, "GPU utilization (allocated GPUs)", "Allocated vs useful GPU utilization (useful = work at reference speed / capacity)", 1)
	return f
}

// Bar is one bar of a headline panel: the mean over runs with min/max whiskers.
type Bar struct {
	Label          string
	Mean, Min, Max float64
	N              int // runs aggregated
}

type barErrs struct {
	xys  plotter.XYs
	errs plotter.YErrors
}

func (b barErrs) Len() int                        { return len(b.xys) }
func (b barErrs) XY(i int) (float64, float64)     { return b.xys[i].X, b.xys[i].Y }
func (b barErrs) YError(i int) (float64, float64) { return b.errs[i].Low, b.errs[i].High }

// BarPanel draws one metric as bars per label; whiskers show min-max when a
// bar aggregates more than one run.
func BarPanel(title, ylabel string, bars []Bar) *plot.Plot {
	p := newPlot(title, "", ylabel)
	vals := make(plotter.Values, len(bars))
	names := make([]string, len(bars))
	var be barErrs
	spread := false
	for i, b := range bars {
		vals[i] = b.Mean
		names[i] = b.Label
		be.xys = append(be.xys, plotter.XY{X: float64(i), Y: b.Mean})
		be.errs = append(be.errs, struct{ Low, High float64 }{b.Mean - b.Min, b.Max - b.Mean})
		if b.N > 1 && b.Max > b.Min {
			spread = true
		}
	}
	// One single-bar chart per label, so each policy keeps its line color.
	for i := range bars {
		bc, err := plotter.NewBarChart(vals[i:i+1], vg.Points(26))
		if err != nil {
			continue
		}
		bc.XMin = float64(i)
		bc.Color = PolicyColor(bars[i].Label)
		bc.LineStyle.Width = 0
		p.Add(bc)
	}
	if spread {
		if eb, err := plotter.NewYErrorBars(be); err == nil {
			eb.LineStyle.Width = vg.Points(1.2)
			p.Add(eb)
		}
	}
	p.NominalX(names...)
	p.Y.Min = 0
	top := 0.0
	for _, b := range bars {
		top = max(top, b.Max, b.Mean)
	}
	if top > 0 {
		p.Y.Max = 1.1 * top
	}
	return p
}

// GanttBar is one job replica's run on a span of GPU rows.
type GanttBar struct {
	Start, End float64 // seconds
	Row0, Rows int     // first row and row count (GPU slots)
	Group      int     // color index (job class)
}

type gantt struct {
	bars         []GanttBar
	bounds       []float64 // node boundary rows
	colors       []color.Color
	div          float64
	xmax, ymax   float64
	outline      color.Color
	outlineWidth vg.Length
}

func (g *gantt) DataRange() (xmin, xmax, ymin, ymax float64) { return 0, g.xmax, 0, g.ymax }

func (g *gantt) Plot(c draw.Canvas, plt *plot.Plot) {
	tx, ty := plt.Transforms(&c)
	ls := draw.LineStyle{Color: g.outline, Width: g.outlineWidth}
	for _, b := range g.bars {
		x0, x1 := tx(b.Start/g.div), tx(b.End/g.div)
		y0, y1 := ty(float64(b.Row0)), ty(float64(b.Row0+b.Rows))
		if x1-x0 < vg.Points(0.3) {
			x1 = x0 + vg.Points(0.3)
		}
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(g.colors[b.Group%len(g.colors)], c.ClipPolygonXY(pts))
		c.StrokeLines(ls, c.ClipLinesXY(append(pts, pts[0]))...)
	}
	sep := draw.LineStyle{Color: color.Gray{Y: 120}, Width: vg.Points(0.6)}
	for _, b := range g.bounds {
		y := ty(b)
		c.StrokeLine2(sep, c.Min.X, y, c.Max.X, y)
	}
}

type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(s.c, pts)
}

// GanttPlot draws GPU allocation over time: one row per GPU slot, the rows of
// a node contiguous (nodes: name and row count, in row order, separated by gray
// lines and labeled mid-range), bars colored by group (groups names the legend
// entries). The x axis is extended by a fifth to keep the legend off the bars.
func GanttPlot(title string, bars []GanttBar, nodes []GanttNode, groups []string, endS float64) *plot.Plot {
	unit, div := timeUnit(endS)
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = fmt.Sprintf("Simulated time (%s)", unit)
	p.Y.Label.Text = "GPU (grouped by node)"
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid)
	rows := 0
	var ticks []plot.Tick
	var bounds []float64
	for _, n := range nodes {
		ticks = append(ticks, plot.Tick{Value: float64(rows)}, plot.Tick{Value: float64(rows) + float64(n.Rows)/2, Label: n.Name})
		rows += n.Rows
		bounds = append(bounds, float64(rows))
	}
	ticks = append(ticks, plot.Tick{Value: float64(rows)})
	xmax := math.Max(endS/div, 1e-9)
	g := &gantt{bars: bars, div: div, xmax: xmax, ymax: float64(rows), bounds: bounds,
		outline: color.White, outlineWidth: vg.Points(0.4)}
	for i := range groups {
		g.colors = append(g.colors, lineColor(i))
	}
	if len(g.colors) == 0 {
		g.colors = []color.Color{lineColor(0)}
	}
	p.Add(g)
	for i, name := range groups {
		p.Legend.Add(name, swatch{g.colors[i]})
	}
	p.Legend.Top = true
	p.X.Min, p.X.Max = 0, 1.2*xmax
	p.Y.Min, p.Y.Max = 0, float64(rows)
	// Labeled ticks sit mid-node; unlabeled minor ticks mark node boundaries.
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	return p
}

// GanttNode is a node's block of rows in a Gantt chart.
type GanttNode struct {
	Name string
	Rows int
}

// naturalLess orders names with embedded numbers numerically (node2 < node10).
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitsPrefix(a), digitsPrefix(b)
		if da != "" && db != "" {
			x, _ := strconv.ParseUint(da, 10, 64)
			y, _ := strconv.ParseUint(db, 10, 64)
			if x != y {
				return x < y
			}
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitsPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// svgBody strips the XML prolog of a rendered SVG so it can be inlined in HTML.
func svgBody(b []byte) []byte {
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		return b[i:]
	}
	return b
}
