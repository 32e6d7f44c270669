package reports

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gpusim/gpusim/internal/fsutil"
)

// FillSummarySchema is the schema of a fill experiment's summary.json (written
// by scenarios.RunFill, read here for reports).
const FillSummarySchema = "gpusim/fill-summary/v1"

// FillDoc is a fill experiment's summary.json read back (the fields a report
// uses).
type FillDoc struct {
	Schema     string `json:"schema"`
	Policy     string `json:"policy"`
	Scenario   string `json:"scenario"`
	Experiment string `json:"experiment"`
	Fill       struct {
		Load               float64 `json:"load"`
		GPUAllocationRatio float64 `json:"gpu_allocation_ratio"`
		FragmentedGPURatio float64 `json:"fragmented_gpu_ratio"`
		Pods               int     `json:"pods"`
		UnscheduledPods    int     `json:"unscheduled_pods"`
		Curve              []struct {
			ArrivedPct int     `json:"arrived_pct"`
			AllocRatio float64 `json:"alloc_ratio"`
			FragGPUPct float64 `json:"frag_gpu_pct"`
		} `json:"curve"`
	} `json:"fill"`
	Provenance Provenance `json:"provenance"`
}

// IsFillRunDir reports whether dir holds a fill experiment's summary.json.
func IsFillRunDir(dir string) bool { return isFillSummary(filepath.Join(dir, SummaryFile)) }

// readFillDoc reads dir/summary.json as a fill summary.
func readFillDoc(dir string) (*FillDoc, error) {
	p := filepath.Join(dir, SummaryFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	var d FillDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: invalid summary JSON: %w", p, err)
	}
	if d.Schema != FillSummarySchema {
		return nil, fmt.Errorf("%s: schema %q is not a fill summary (want %q)", p, d.Schema, FillSummarySchema)
	}
	return &d, nil
}

// fillGroup is one policy's fill runs (one per seed).
type fillGroup struct {
	Policy string
	Docs   []*FillDoc
}

// stat returns the mean, min and max of f over the group's runs.
func (g *fillGroup) stat(f func(*FillDoc) float64) (mean, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, d := range g.Docs {
		x := f(d)
		mean += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return mean / float64(len(g.Docs)), lo, hi
}

// FillColumns are the columns of a fill report's summary.csv.
var FillColumns = []string{"policy", "runs", "load", "gpu_allocation_ratio_mean", "gpu_allocation_ratio_min", "gpu_allocation_ratio_max",
	"fragmented_gpu_ratio_mean", "fragmented_gpu_ratio_min", "fragmented_gpu_ratio_max", "unscheduled_pods_mean"}

// BuildFillReport writes the report of FGD fill-experiment run directories (one
// per policy and seed) into outDir: summary.csv and summary.md (per policy the
// GPU allocation and fragmented-GPU ratios at the target load, mean and range over
// the runs), the allocation and fragmentation curves against arrived demand
// (mean over runs; PNG and SVG), and a self-contained index.html.
func BuildFillReport(dirs []string, outDir string) error {
	var groups []*fillGroup
	byPolicy := map[string]*fillGroup{}
	var scen []string
	for _, dir := range dirs {
		d, err := readFillDoc(dir)
		if err != nil {
			return err
		}
		g := byPolicy[d.Policy]
		if g == nil {
			g = &fillGroup{Policy: d.Policy}
			byPolicy[d.Policy] = g
			groups = append(groups, g)
		}
		g.Docs = append(g.Docs, d)
		if !slices.Contains(scen, d.Scenario) {
			scen = append(scen, d.Scenario)
		}
	}
	if len(groups) == 0 {
		return fmt.Errorf("fill report: no runs")
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("create report dir: %w", err)
	}
	rows := make([][]string, len(groups))
	for i, g := range groups {
		am, alo, ahi := g.stat(func(d *FillDoc) float64 { return d.Fill.GPUAllocationRatio })
		fm, flo, fhi := g.stat(func(d *FillDoc) float64 { return d.Fill.FragmentedGPURatio })
		um, _, _ := g.stat(func(d *FillDoc) float64 { return float64(d.Fill.UnscheduledPods) })
		lm, _, _ := g.stat(func(d *FillDoc) float64 { return d.Fill.Load })
		rows[i] = []string{g.Policy, strconv.Itoa(len(g.Docs)), ff(lm, 2), ff(am, 2), ff(alo, 2), ff(ahi, 2), ff(fm, 2), ff(flo, 2), ff(fhi, 2), ff(um, 1)}
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(outDir, "summary.csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write(FillColumns)
		cw.WriteAll(rows)
		return cw.Error()
	}); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(outDir, "summary.md"), func(w io.Writer) error {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(FillColumns, " | "), strings.Repeat("---|", len(FillColumns)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		return nil
	}); err != nil {
		return err
	}
	figs := []*Figure{
		fillCurveFigure("fill_allocation", "GPU allocation vs arrived demand (mean over runs)", "allocated GPU (% of capacity)", groups,
			func(p fillPoint) float64 { return p.alloc }),
		fillCurveFigure("fill_fragmentation", "Fragmented GPU vs arrived demand (mean over runs)", "fragmented GPU (% of capacity)", groups,
			func(p fillPoint) float64 { return p.frag }),
	}
	svgs := make([]template.HTML, len(figs))
	for i, f := range figs {
		for _, format := range []string{"png", "svg"} {
			b, err := f.Render(format)
			if err != nil {
				return err
			}
			if err := fsutil.WriteBytesAtomic(filepath.Join(outDir, f.Name+"."+format), b); err != nil {
				return err
			}
			if format == "svg" {
				// Our own renderer's output (gonum/plot escapes every text it draws).
				svgs[i] = template.HTML(svgBody(b))
			}
		}
	}
	type fig struct {
		Name, Title string
		SVG         template.HTML
	}
	data := struct {
		Scenarios string
		Runs      int
		Columns   []string
		Rows      [][]string
		Figs      []fig
	}{Scenarios: strings.Join(scen, ", "), Runs: len(dirs), Columns: FillColumns, Rows: rows}
	for i, f := range figs {
		data.Figs = append(data.Figs, fig{f.Name, f.Title, svgs[i]})
	}
	return fsutil.WriteFileAtomic(filepath.Join(outDir, "index.html"), func(w io.Writer) error {
		return fillTmpl.Execute(w, data)
	})
}

func ff(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

type fillPoint struct{ alloc, frag float64 }

// fillCurveFigure plots one curve per policy: the mean over runs of y at each
// whole percent of arrived demand that every run reached.
func fillCurveFigure(name, title, ylabel string, groups []*fillGroup, y func(fillPoint) float64) *Figure {
	p := newPlot(title, "arrived GPU demand (% of capacity)", ylabel)
	for _, g := range groups {
		n := math.MaxInt
		for _, d := range g.Docs {
			n = min(n, len(d.Fill.Curve))
		}
		xys := make(plotter.XYs, 0, n)
		for k := 0; k < n; k++ {
			var sum fillPoint
			for _, d := range g.Docs {
				c := d.Fill.Curve[k]
				sum.alloc += c.AllocRatio
				sum.frag += c.FragGPUPct
			}
			m := float64(len(g.Docs))
			xys = append(xys, plotter.XY{X: float64(g.Docs[0].Fill.Curve[k].ArrivedPct), Y: y(fillPoint{sum.alloc / m, sum.frag / m})})
		}
		addLineColor(p, g.Policy, xys, PolicyColor(g.Policy), nil)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	return &Figure{Name: name, Title: title, Grid: [][]*plot.Plot{{p}}, Width: 8 * vg.Inch, Height: 5 * vg.Inch}
}

var fillTmpl = template.Must(template.New("fill").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>gpusim fill report: {{.Scenarios}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1300px; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
figure { margin: 2em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-weight: bold; margin-bottom: 0.5em; }
</style>
</head>
<body>
<h1>gpusim fill report: {{.Scenarios}}</h1>
<p>FGD fill experiment (docs/fgd.md): pods placed one at a time with no departures until the arrived GPU demand reaches the target load. {{.Runs}} run(s); ratios are percent of the cluster's GPU capacity at the target load, mean and range over seeds. Higher allocation and lower fragmentation are better.</p>
<table>
<tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if ge $i 1}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table>
{{range .Figs}}<figure id="{{.Name}}">
<figcaption>{{.Title}}</figcaption>
{{.SVG}}
</figure>
{{end}}</body>
</html>
`))
