package reports

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gpusim/gpusim/sim"
)

// The physical models over time (docs/outputs.md "physical.csv"): power draw,
// grid intensity and emissions, GPUs down and interruptions, one row per
// sample. Written only in runs with a power: or failures: block, and drawn by
// the report only from such runs: plain runs' files and reports are unchanged.

// PhysicalFile is the run directory's physical-model time series.
const PhysicalFile = "physical.csv"

// PhysicalColumns are physical.csv's columns. The power columns are empty
// without power accounting, the carbon ones without a carbon series, the
// failure ones without failures.
var PhysicalColumns = []string{"time_s", "power_w", "carbon_g_per_kwh", "emissions_kg_per_h",
	"gpus_down", "incidents", "interruptions", "planned_incidents", "planned_interruptions"}

// WritePhysicalCSV writes physical.csv from res.Samples and res.Phys.
func WritePhysicalCSV(w io.Writer, res *sim.Result) error {
	pow, carbon, fail := res.Power != nil, res.Power != nil && res.Power.HasCarbon, res.Failures != nil
	smp := res.Samples
	return writeCSVRows(w, PhysicalColumns, min(len(smp), len(res.Phys)), func(b []byte, i int) []byte {
		s := &smp[i]
		p := &res.Phys[i]
		b = strconv.AppendFloat(b, secs(int64(s.Time)), 'f', -1, 64)
		b = append(b, ',')
		if pow {
			b = strconv.AppendFloat(b, p.PowerW, 'f', -1, 64)
		}
		b = append(b, ',')
		if carbon {
			b = strconv.AppendFloat(b, p.CarbonGPerKWh, 'f', -1, 64)
			b = append(b, ',')
			b = strconv.AppendFloat(b, round(p.PowerW*p.CarbonGPerKWh/1e6), 'f', -1, 64)
		} else {
			b = append(b, ',')
		}
		for _, v := range [...]int64{p.GPUsDown, p.Incidents, p.Interruptions, p.PlannedIncidents, p.PlannedInterruptions} {
			b = append(b, ',')
			if fail {
				b = strconv.AppendInt(b, v, 10)
			}
		}
		return append(b, '\n')
	})
}

// Physical is physical.csv read back.
type Physical struct {
	HasPower, HasCarbon, HasFailures bool
	Rows                             []PhysRow
}

// PhysRow is one row of physical.csv (absent values are 0; see the Has flags).
type PhysRow struct {
	TimeS, PowerW, CarbonGPerKWh, EmissionsKgPerH float64
	GPUsDown, Incidents, Interruptions            int64
	PlannedIncidents, PlannedInterruptions        int64
}

// ReadPhysicalCSV reads physical.csv; errors name the file, line and column.
func ReadPhysicalCSV(path string) (*Physical, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = len(PhysicalColumns)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, c := range PhysicalColumns {
		if head[i] != c {
			return nil, fmt.Errorf("%s:1: column %d: want %q, got %q", path, i+1, c, head[i])
		}
	}
	ph := &Physical{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return ph, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var row PhysRow
		fl := []*float64{&row.TimeS, &row.PowerW, &row.CarbonGPerKWh, &row.EmissionsKgPerH}
		in := []*int64{&row.GPUsDown, &row.Incidents, &row.Interruptions, &row.PlannedIncidents, &row.PlannedInterruptions}
		for k, v := range rec {
			if v == "" {
				if k == 0 {
					return nil, fmt.Errorf("%s:%d: time_s: empty", path, line)
				}
				continue
			}
			switch k {
			case 1:
				ph.HasPower = true
			case 2:
				ph.HasCarbon = true
			case 4:
				ph.HasFailures = true
			}
			if k < len(fl) {
				if *fl[k], err = strconv.ParseFloat(v, 64); err != nil {
					return nil, fmt.Errorf("%s:%d: %s: %w", path, line, PhysicalColumns[k], err)
				}
			} else if *in[k-len(fl)], err = strconv.ParseInt(v, 10, 64); err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %w", path, line, PhysicalColumns[k], err)
			}
		}
		ph.Rows = append(ph.Rows, row)
	}
}

// capColor draws a power cap.
var capColor = color.RGBA{R: 0xcc, G: 0x33, B: 0x11, A: 0xff}

// physRun is a policy's first run with physical.csv.
type physRun struct {
	label string
	run   *Run
}

func labelsOf(gs []physRun) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.label
	}
	return out
}

// physicalFigures are the physical models' plots over the policies whose
// first run has physical.csv: power (draw per policy with the cap), carbon
// (grid intensity above each policy's emissions rate) and failures (GPUs down
// and interruptions per bin). None when no run has the file.
func (rep *Report) physicalFigures(note string) []*Figure {
	var pow, carb, fail []physRun
	for _, g := range rep.Groups {
		ph := g.Runs[0].Physical
		if ph == nil || len(ph.Rows) == 0 {
			continue
		}
		pr := physRun{g.Label, g.Runs[0]}
		if ph.HasPower {
			pow = append(pow, pr)
		}
		if ph.HasCarbon {
			carb = append(carb, pr)
		}
		if ph.HasFailures {
			fail = append(fail, pr)
		}
	}
	series := func(gs []physRun, y func(*PhysRow) float64) []TimeSeries {
		var out []TimeSeries
		for _, g := range gs {
			ts := TimeSeries{Name: g.label, Policy: true}
			for i := range g.run.Physical.Rows {
				r := &g.run.Physical.Rows[i]
				ts.T = append(ts.T, r.TimeS)
				ts.Y = append(ts.Y, y(r))
			}
			out = append(out, ts)
		}
		return out
	}
	in := vg.Inch
	var figs []*Figure
	if len(pow) > 0 {
		figs = append(figs, powerFigure(pow, series(pow, func(r *PhysRow) float64 { return r.PowerW / 1000 }), note))
	}
	if len(carb) > 0 {
		longest := 0 // the intensity is the scenario's series: draw the longest run's
		for k, g := range carb {
			if len(g.run.Physical.Rows) > len(carb[longest].run.Physical.Rows) {
				longest = k
			}
		}
		is := series(carb[longest:longest+1], func(r *PhysRow) float64 { return r.CarbonGPerKWh })
		is[0].Name, is[0].Policy = "grid intensity", false
		top := TimePlot("Grid carbon intensity", "gCO2e/kWh", is)
		es := TimePlot("Emissions rate per policy", "kg CO2e per hour", series(carb, func(r *PhysRow) float64 { return r.EmissionsKgPerH }))
		figs = append(figs, &Figure{Name: "carbon", Title: "Grid carbon intensity (top) and each policy's emissions rate, power × intensity (bottom)" + note,
			Grid: [][]*plot.Plot{{top}, {es}}, Legend: labelsOf(carb), Width: 8 * in, Height: 6.4 * in})
	}
	if len(fail) > 0 {
		down := TimePlot("GPUs out of service", "GPUs down", series(fail, func(r *PhysRow) float64 { return float64(r.GPUsDown) }))
		var span float64
		for _, g := range fail {
			rs := g.run.Physical.Rows
			span = max(span, rs[len(rs)-1].TimeS)
		}
		bin, bname := SmoothingWindow(span) // about 15 to 100 bins
		var bs []TimeSeries
		for _, g := range fail {
			bs = append(bs, binCounts(g.label, g.run.Physical.Rows, bin))
		}
		ints := TimePlot("Job interruptions per "+bname, "Interruptions", bs)
		figs = append(figs, &Figure{Name: "failures", Title: "Failures over time: GPUs out of service (top) and job interruptions, failures and maintenance, per " + bname + " (bottom)" + note,
			Grid: [][]*plot.Plot{{down}, {ints}}, Legend: labelsOf(fail), Width: 8 * in, Height: 6.4 * in})
	}
	return figs
}

// powerFigure is one panel per policy on the same axes: the cluster's GPU
// draw (kW) in the policy's colour and, when the run had a cap, the cap
// (dashed).
func powerFigure(runs []physRun, ss []TimeSeries, note string) *Figure {
	var top, ymax float64
	for k, s := range ss {
		top = max(top, s.T[len(s.T)-1])
		for _, y := range s.Y {
			ymax = max(ymax, y)
		}
		if st := runs[k].run.Summary.Power; st != nil {
			ymax = max(ymax, st.CapW/1000)
		}
	}
	unit, div := timeUnit(top)
	cols := min(2, len(ss))
	rows := (len(ss) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
	}
	for k, s := range ss {
		p := newPlot(s.Name, fmt.Sprintf("Simulated time (%s)", unit), "GPU power draw (kW)")
		p.X.Min, p.X.Max = 0, math.Max(top/div, 1e-9)
		p.Y.Min, p.Y.Max = 0, math.Max(ymax*1.2, 1e-9)
		addLineColor(p, "draw", downsample(s.T, s.Y, div), PolicyColor(s.Name), nil)
		if st := runs[k].run.Summary.Power; st != nil && st.CapW > 0 {
			c := st.CapW / 1000
			addLineColor(p, fmt.Sprintf("cap %.4g kW", c), plotter.XYs{{X: 0, Y: c}, {X: top / div, Y: c}}, capColor, []vg.Length{vg.Points(5), vg.Points(3)})
		}
		p.Legend.Top = true
		grid[k/cols][k%cols] = p
	}
	return &Figure{Name: "power", Title: "Cluster GPU power draw over time, idle GPUs included (dashed: the power cap)" + note,
		Grid: grid, Legend: labelsOf(runs), Width: vg.Length(cols) * 5.2 * vg.Inch, Height: vg.Length(rows) * 2.8 * vg.Inch}
}

// binCounts turns the cumulative interruption counts of rows into counts per
// bin of bin seconds, each plotted at its bin's start.
func binCounts(name string, rows []PhysRow, bin float64) TimeSeries {
	ts := TimeSeries{Name: name, Policy: true}
	var prev int64
	k := 0
	for b := 0.0; k < len(rows); b += bin {
		cum := prev
		for k < len(rows) && rows[k].TimeS < b+bin {
			cum = rows[k].Interruptions + rows[k].PlannedInterruptions
			k++
		}
		ts.T = append(ts.T, b)
		ts.Y = append(ts.Y, float64(cum-prev))
		prev = cum
	}
	return ts
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
