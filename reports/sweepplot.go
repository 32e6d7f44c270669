package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SweepXColumn picks the grid column a sweep plot puts on the x axis: "load"
// when the table has it, else the last set-path column whose values are all
// numbers and take at least two values; "" when there is none.
func (t *SweepTable) SweepXColumn() string {
	cand := ""
	for i, p := range t.Params {
		if p == "seed" || p == "policy" {
			continue
		}
		distinct := map[string]bool{}
		numeric := true
		for _, r := range t.Rows {
			if _, err := strconv.ParseFloat(r.Params[i], 64); err != nil {
				numeric = false
				break
			}
			distinct[r.Params[i]] = true
		}
		if numeric && len(distinct) >= 2 {
			if p == "load" {
				return p
			}
			cand = p
		}
	}
	return cand
}

// Figure plots mean queue time, p99 queue time, mean bounded slowdown and GPU
// utilization against the x column (SweepXColumn), one line per combination of
// the other grid columns except seed (color: policy; dash pattern: the other
// columns), each point the mean over seeds; the legend is in the first panel.
// Nil when the table has no numeric axis to plot against.
func (t *SweepTable) Figure(title string) *Figure {
	x := t.SweepXColumn()
	if x == "" {
		return nil
	}
	xi := slices.Index(t.Params, x)
	si := slices.Index(t.Params, "seed")
	pi := slices.Index(t.Params, "policy")
	// A line per (policy, rest): the color follows the policy, the dash pattern
	// the rest (the other grid columns).
	var pols, rests []string
	style := map[string][2]int{}
	keyPol := map[string]string{} // line key -> its policy label ("" when the sweep has none)
	keyOf := func(r *SweepRow) string {
		pol := ""
		if pi >= 0 {
			pol = r.Params[pi]
		}
		var parts []string
		for i, p := range t.Params {
			if i != xi && i != si && i != pi {
				parts = append(parts, p+"="+r.Params[i])
			}
		}
		rest := strings.Join(parts, ", ")
		key := pol
		if rest != "" {
			key = strings.TrimPrefix(pol+", "+rest, ", ")
		}
		if _, ok := style[key]; !ok {
			if !slices.Contains(pols, pol) {
				pols = append(pols, pol)
			}
			if !slices.Contains(rests, rest) {
				rests = append(rests, rest)
			}
			style[key] = [2]int{slices.Index(pols, pol), slices.Index(rests, rest)}
			keyPol[key] = pol
		}
		return key
	}
	type acc struct{ sum, n float64 }
	var keys []string
	data := map[string]map[float64]*[4]acc{}
	metric := func(r *SweepRow, name string) float64 {
		return r.Metrics[slices.Index(SweepMetricColumns, name)]
	}
	for k := range t.Rows {
		r := &t.Rows[k]
		key := keyOf(r)
		if _, ok := data[key]; !ok {
			data[key] = map[float64]*[4]acc{}
			keys = append(keys, key)
		}
		xv, _ := strconv.ParseFloat(r.Params[xi], 64)
		a := data[key][xv]
		if a == nil {
			a = &[4]acc{}
			data[key][xv] = a
		}
		for m, v := range []float64{metric(r, "wait_mean_s"), metric(r, "wait_p99_s"), metric(r, "slowdown_mean"), 100 * metric(r, "gpu_utilization")} {
			a[m].sum += v
			a[m].n++
		}
	}
	var topWait float64
	for _, byX := range data {
		for _, a := range byX {
			topWait = max(topWait, a[1].sum/a[1].n)
		}
	}
	unit, div := timeUnit(topWait)
	panels := []struct {
		title, ylabel string
		div           float64
	}{
		{"Mean queue time", "Mean queue time (" + unit + ")", div},
		{"p99 queue time", "p99 queue time (" + unit + ")", div},
		{"Mean bounded slowdown", "Mean bounded slowdown (ratio)", 1},
		{"GPU utilization", "GPU utilization (%)", 1},
	}
	grid := [][]*plot.Plot{make([]*plot.Plot, 2), make([]*plot.Plot, 2)}
	for m, pn := range panels {
		p := newPlot(pn.title, x, pn.ylabel)
		p.Y.Min = 0
		ymax := 0.0
		for _, key := range keys {
			var xs []float64
			for xv := range data[key] {
				xs = append(xs, xv)
			}
			slices.Sort(xs)
			xys := make(plotter.XYs, len(xs))
			for k, xv := range xs {
				a := data[key][xv][m]
				xys[k] = plotter.XY{X: xv, Y: a.sum / a.n / pn.div}
				ymax = max(ymax, xys[k].Y)
			}
			st := style[key]
			l, err := plotter.NewLine(xys)
			if err != nil {
				continue
			}
			col := lineColor(st[0])
			if keyPol[key] != "" {
				col = PolicyColor(keyPol[key]) // the policy's colour in every plot
			}
			l.Color = col
			l.Width = vg.Points(1.5)
			l.Dashes = plotutil.Dashes(st[1])
			p.Add(l)
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				continue
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(2.5)
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			p.Add(sc)
			if m == 0 { // one legend, in the first panel, above the data
				p.Legend.Add(key, l, sc)
			}
		}
		if ymax > 0 {
			p.Y.Max = ymax * 1.08
			if m == 0 {
				p.Y.Max = ymax * (1.1 + 0.09*float64(len(keys)))
			}
		}
		p.Legend.Top = true
		p.Legend.Left = true
		grid[m/2][m%2] = p
	}
	name := "seeds"
	if si < 0 {
		name = "runs"
	}
	return &Figure{Name: "sweep", Title: fmt.Sprintf("%s: headline metrics vs %s (mean over %s)", title, x, name),
		Grid: grid, Width: 11 * vg.Inch, Height: 8 * vg.Inch}
}
