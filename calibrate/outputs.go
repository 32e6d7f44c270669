package calibrate

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/gpusim/gpusim/internal/fsutil"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// BuildMatrix computes the interference matrix from journaled "ok" cells (in plan
// cell order). A group appears only if every member's workload has at least one
// alone measurement under the same mode; a group member's speed factor per
// repetition is its co-located throughput / the mean alone throughput.
func BuildMatrix(p *Plan, cells []CellResult, meta MatrixMetadata) *InterferenceMatrix {
	m := &InterferenceMatrix{APIVersion: APIVersion, Kind: InterferenceKind, Metadata: meta,
		Workloads: []WorkloadProfile{}, Modes: []ModeResult{}}
	for _, w := range p.Workloads {
		m.Workloads = append(m.Workloads, WorkloadProfile{Name: w.Name, Class: w.Class,
			Fingerprint: fingerprint(cells, w.Name)})
	}
	for _, mode := range p.Modes {
		mr := ModeResult{Mode: mode, Alone: []AloneResult{}, Groups: []GroupResult{}}
		alone := map[string][]float64{}
		type grp struct {
			members []string
			factors [][]float64
		}
		var groups []*grp
		byKey := map[string]*grp{}
		for _, c := range cells {
			if c.Mode != mode || c.Status != "ok" || len(c.Throughput) != len(c.Members) {
				continue
			}
			if len(c.Members) == 1 {
				alone[c.Members[0]] = append(alone[c.Members[0]], c.Throughput[0])
			}
		}
		for _, w := range p.Workloads {
			if xs := alone[w.Name]; len(xs) > 0 {
				mr.Alone = append(mr.Alone, AloneResult{Workload: w.Name, Throughput: newStat(xs)})
			}
		}
		for _, c := range cells {
			if c.Mode != mode || c.Status != "ok" || len(c.Members) < 2 || len(c.Throughput) != len(c.Members) {
				continue
			}
			key := strings.Join(c.Members, "+")
			g := byKey[key]
			if g == nil {
				g = &grp{members: c.Members, factors: make([][]float64, len(c.Members))}
				byKey[key] = g
				groups = append(groups, g)
			}
			for k, name := range c.Members {
				base := newStatOrZero(alone[name]).Mean
				if base > 0 {
					g.factors[k] = append(g.factors[k], c.Throughput[k]/base)
				}
			}
		}
		for _, g := range groups {
			gr := GroupResult{}
			complete := true
			for k, name := range g.members {
				if len(g.factors[k]) == 0 {
					complete = false
					break
				}
				gr.Members = append(gr.Members, MemberResult{Workload: name, Stat: newStat(g.factors[k])})
			}
			if complete {
				mr.Groups = append(mr.Groups, gr)
			}
		}
		m.Modes = append(m.Modes, mr)
	}
	return m
}

func newStatOrZero(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	return newStat(xs)
}

// fingerprint averages the measure-phase samples of the workload's alone cells,
// preferring time-slice and MPS cells (MIG samples are GPU-wide, not per instance).
func fingerprint(cells []CellResult, name string) Fingerprint {
	pick := func(modes ...string) []Sample {
		var out []Sample
		for _, c := range cells {
			if c.Status != "ok" || len(c.Members) != 1 || c.Members[0] != name {
				continue
			}
			ok := false
			for _, m := range modes {
				ok = ok || c.Mode == m
			}
			if !ok {
				continue
			}
			for _, s := range c.Samples {
				if s.Phase == "measure" {
					out = append(out, s.Sample)
				}
			}
		}
		return out
	}
	ss := pick(ModeTimeslice, ModeMPS)
	if len(ss) == 0 {
		ss = pick(ModeMIG)
	}
	mean := func(get func(Sample) float64, scale float64) float64 {
		var sum float64
		var n int
		for _, s := range ss {
			if v := get(s); v >= 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
				sum += v
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return sum / float64(n) * scale
	}
	return Fingerprint{
		SMUtilPct:  mean(func(s Sample) float64 { return s.SMUtilPct }, 1),
		MemUtilPct: mean(func(s Sample) float64 { return s.MemUtilPct }, 1),
		MemUsedMiB: mean(func(s Sample) float64 { return s.MemUsedMiB }, 1),
		PCIeRxMBps: mean(func(s Sample) float64 { return s.PCIeRxKBps }, 1.0/1000),
		PCIeTxMBps: mean(func(s Sample) float64 { return s.PCIeTxKBps }, 1.0/1000),
		PowerW:     mean(func(s Sample) float64 { return s.PowerW }, 1),
		SMClockMHz: mean(func(s Sample) float64 { return s.SMClockMHz }, 1),
		Samples:    len(ss),
	}
}

func writeOutputs(dir string, p *Plan, cells []CellResult, meta MatrixMetadata, sum *Summary) error {
	m := BuildMatrix(p, cells, meta)
	path := filepath.Join(dir, InterferenceFile)
	if err := fsutil.WriteFileAtomic(path, m.Write); err != nil {
		return err
	}
	sum.Outputs = append(sum.Outputs, path)

	var rows []SampleRow
	for _, c := range cells {
		for _, s := range c.Samples {
			rows = append(rows, SampleRow{Cell: c.ID, Mode: c.Mode, Group: strings.Join(c.Members, "+"),
				Repetition: c.Repetition, Phase: s.Phase, Sample: s.Sample})
		}
	}
	path = filepath.Join(dir, SamplesFile)
	if err := fsutil.WriteFileAtomic(path, func(w io.Writer) error { return WriteSamplesParquet(w, rows, true) }); err != nil {
		return err
	}
	sum.Outputs = append(sum.Outputs, path)

	for _, mode := range p.Modes {
		names, grid := PairGrid(m, mode)
		if !hasValue(grid) {
			continue
		}
		path := filepath.Join(dir, "heatmap-"+mode+".png")
		title := fmt.Sprintf("%s speed factor (%s)", mode, meta.GPUModel)
		if err := fsutil.WriteFileAtomic(path, func(w io.Writer) error { return WriteHeatmap(w, title, names, grid) }); err != nil {
			return err
		}
		sum.Outputs = append(sum.Outputs, path)
	}
	return nil
}

// PairGrid returns the workload names (matrix order) and grid[i][j] = speed factor
// of workload i co-located with workload j under mode (NaN if not measured).
func PairGrid(m *InterferenceMatrix, mode string) ([]string, [][]float64) {
	names := make([]string, len(m.Workloads))
	for i, w := range m.Workloads {
		names[i] = w.Name
	}
	grid := make([][]float64, len(names))
	for i := range grid {
		grid[i] = make([]float64, len(names))
		for j := range grid[i] {
			if f, ok := m.Factor(mode, names[i], names[j]); ok {
				grid[i][j] = f
			} else {
				grid[i][j] = math.NaN()
			}
		}
	}
	return names, grid
}

func hasValue(g [][]float64) bool {
	for _, r := range g {
		for _, v := range r {
			if !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

type gridXYZ [][]float64

func (g gridXYZ) Dims() (c, r int)   { return len(g), len(g) }
func (g gridXYZ) Z(c, r int) float64 { return g[len(g)-1-r][c] } // row 0 at the top
func (g gridXYZ) X(c int) float64    { return float64(c) }
func (g gridXYZ) Y(r int) float64    { return float64(r) }

// WriteHeatmap renders a square pair matrix as PNG: row = the slowed workload,
// column = its co-runner, cell = speed factor (white: not measured).
func WriteHeatmap(w io.Writer, title string, names []string, grid [][]float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "co-located with"
	p.Y.Label.Text = "workload (slowed)"
	hm := plotter.NewHeatMap(gridXYZ(grid), palette.Heat(16, 1))
	hm.Min, hm.Max = 0, 1
	for _, r := range grid {
		for _, v := range r {
			if !math.IsNaN(v) && v > hm.Max {
				hm.Max = v
			}
		}
	}
	hm.NaN = color.White
	p.Add(hm)
	n := len(names)
	var xt, yt []plot.Tick
	lab := plotter.XYLabels{}
	for i, name := range names {
		xt = append(xt, plot.Tick{Value: float64(i), Label: name})
		yt = append(yt, plot.Tick{Value: float64(n - 1 - i), Label: name})
		for j := range names {
			if v := grid[i][j]; !math.IsNaN(v) {
				lab.XYs = append(lab.XYs, plotter.XY{X: float64(j), Y: float64(n - 1 - i)})
				lab.Labels = append(lab.Labels, fmt.Sprintf("%.2f", v))
			}
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	if len(lab.Labels) > 0 {
		l, err := plotter.NewLabels(lab)
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = -0.5, -0.5
		}
		p.Add(l)
	}
	size := vg.Length(120 + 70*n)
	wt, err := p.WriterTo(size, size, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}
