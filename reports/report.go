package reports

import (
	"errors"
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

	"github.com/gpusim/gpusim/internal/csvutil"
	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/sim"
)

// GanttMaxGPUs is the largest cluster (in GPUs) that gets a Gantt chart.
const GanttMaxGPUs = 64

// Report is a set of run directories read back and grouped for plotting.
type Report struct {
	Setups []Setup  // what was simulated (optional; see Setup)
	Runs   []*Run   // in the order given
	Labels []string // per run: short label (path relative to the runs' common parent)
	Groups []*Group // runs grouped by policy (and scenario when several), first-seen order
}

// Group is the runs of one policy (e.g. several seeds).
type Group struct {
	Label string
	Runs  []*Run
}

// LoadReport reads run directories (see ReadRunDir) with their events (for the
// per-queue share and the Gantt chart).
func LoadReport(runDirs []string) (*Report, error) {
	if len(runDirs) == 0 {
		return nil, errors.New("no run directories given")
	}
	rep := &Report{}
	for _, d := range runDirs {
		r, err := ReadRunDir(d, true)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, r)
	}
	rep.Labels = runLabels(runDirs)
	scen := map[string]bool{}
	for _, r := range rep.Runs {
		scen[r.Summary.Scenario] = true
	}
	idx := map[string]*Group{}
	for _, r := range rep.Runs {
		label := r.Summary.Policy
		if label == "" {
			label = filepath.Base(r.Dir)
		}
		if len(scen) > 1 {
			label += " @ " + r.Summary.Scenario
		}
		g := idx[label]
		if g == nil {
			g = &Group{Label: label}
			idx[label] = g
			rep.Groups = append(rep.Groups, g)
		}
		g.Runs = append(g.Runs, r)
	}
	return rep, nil
}

// runLabels returns each dir relative to the dirs' longest common parent (the
// base name for a single dir), with forward slashes.
func runLabels(dirs []string) []string {
	clean := make([][]string, len(dirs))
	for i, d := range dirs {
		clean[i] = strings.Split(filepath.ToSlash(filepath.Clean(d)), "/")
	}
	common := len(clean[0]) - 1
	for _, c := range clean[1:] {
		n := 0
		for n < common && n < len(c)-1 && c[n] == clean[0][n] {
			n++
		}
		common = n
	}
	out := make([]string, len(dirs))
	for i, c := range clean {
		out[i] = strings.Join(c[common:], "/")
	}
	return out
}

// SummaryColumns are the columns of summary.csv and summary.md.
var SummaryColumns = []string{"run", "policy", "scenario", "seed", "jobs", "completed", "unfinished",
	"wait_mean_s", "wait_p50_s", "wait_p95_s", "wait_p99_s", "jct_mean_s", "jct_p50_s", "jct_p95_s", "jct_p99_s",
	"slowdown_mean", "slowdown_p99", "gpu_utilization", "makespan_s", "jain_users", "jain_queues", "preemptions"}

// SummaryRow returns a run's summary.csv cells (columns SummaryColumns).
func SummaryRow(label string, s *Summary) []string {
	f := FormatNumber
	i := strconv.Itoa
	return []string{label, s.Policy, s.Scenario, strconv.FormatUint(s.Provenance.Seed, 10),
		i(s.Jobs.Total), i(s.Jobs.Completed), i(s.Jobs.Unfinished),
		f(s.WaitS.Mean), f(s.WaitS.P50), f(s.WaitS.P95), f(s.WaitS.P99),
		f(s.JCTS.Mean), f(s.JCTS.P50), f(s.JCTS.P95), f(s.JCTS.P99),
		f(s.Slowdown.Mean), f(s.Slowdown.P99), f(s.GPUUtilization), f(s.MakespanS),
		f(s.Fairness.JainUsers), f(s.Fairness.JainQueues), i(s.Jobs.Preemptions)}
}

func (rep *Report) rows() [][]string {
	out := make([][]string, len(rep.Runs))
	for i, r := range rep.Runs {
		out[i] = SummaryRow(rep.Labels[i], r.Summary)
	}
	return out
}

// WriteSummaryCSV writes summary.csv: a header and one row per run.
func (rep *Report) WriteSummaryCSV(w io.Writer) error {
	var b []byte
	for _, row := range append([][]string{SummaryColumns}, rep.rows()...) {
		for k, c := range row {
			if k > 0 {
				b = append(b, ',')
			}
			b = csvutil.AppendField(b, c)
		}
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}

func mdEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// WriteSummaryMarkdown writes summary.md: a heading and the summary table.
func (rep *Report) WriteSummaryMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# gpusim report: %s\n\n", mdEscape(strings.Join(rep.scenarios(), ", ")))
	b.WriteString("| " + strings.Join(SummaryColumns, " | ") + " |\n")
	b.WriteString("|")
	for k := range SummaryColumns {
		if k < 4 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, row := range rep.rows() {
		for k := range row {
			row[k] = mdEscape(row[k])
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\nTimes in seconds; definitions in docs/metrics.md.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (rep *Report) scenarios() []string {
	var out []string
	for _, r := range rep.Runs {
		if !slices.Contains(out, r.Summary.Scenario) {
			out = append(out, r.Summary.Scenario)
		}
	}
	return out
}

// classOrder lists the classes present in rows: known classes in sim.Classes
// order, then others sorted.
func classOrder(groups []*Group) []string {
	seen := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.Runs {
			for i := range r.Jobs {
				seen[r.Jobs[i].Class] = true
			}
		}
	}
	var out []string
	for _, c := range sim.Classes {
		if seen[string(c)] {
			out = append(out, string(c))
			delete(seen, string(c))
		}
	}
	var rest []string
	for c := range seen {
		rest = append(rest, c)
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// pooled returns the values of the group's jobs (all runs pooled) selected by
// keep and value; class "" means every class.
func pooled(g *Group, class string, value func(*JobRow) (float64, bool)) []float64 {
	var out []float64
	for _, r := range g.Runs {
		for i := range r.Jobs {
			j := &r.Jobs[i]
			if class != "" && j.Class != class {
				continue
			}
			if v, ok := value(j); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

func waitOf(j *JobRow) (float64, bool) { return j.Wait, !math.IsNaN(j.Wait) }
func jctOf(j *JobRow) (float64, bool) {
	return j.JCT, j.State == sim.StateCompleted.String() && !math.IsNaN(j.JCT)
}

// Figures builds every figure of the report (see docs/outputs.md).
func (rep *Report) Figures() []*Figure {
	var figs []*Figure
	in := vg.Inch
	cdf := func(name, title, quantity string, value func(*JobRow) (float64, bool)) {
		var ss []Series
		for _, g := range rep.Groups {
			ss = append(ss, Series{Name: g.Label, Values: pooled(g, "", value), Policy: true})
		}
		figs = append(figs, &Figure{Name: name, Title: title, Width: 9 * in, Height: 4.5 * in,
			Grid: [][]*plot.Plot{{CDFPlot(title, quantity, ss)}}})
	}
	cdf("wait_cdf", "Queue time CDF per policy (jobs that started)", "Queue time", waitOf)
	cdf("jct_cdf", "JCT CDF per policy (completed jobs)", "Job completion time", jctOf)

	classes := classOrder(rep.Groups)
	byClass := func(name, title, quantity string, value func(*JobRow) (float64, bool)) {
		if len(classes) == 0 {
			return
		}
		cols := min(3, len(classes))
		rows := (len(classes) + cols - 1) / cols
		grid := make([][]*plot.Plot, rows)
		for r := range grid {
			grid[r] = make([]*plot.Plot, cols)
		}
		for k, c := range classes {
			var ss []Series
			for _, g := range rep.Groups {
				ss = append(ss, Series{Name: g.Label, Values: pooled(g, c, value), Policy: true})
			}
			grid[k/cols][k%cols] = cdfPanel(c+": "+quantity+" CDF", quantity, ss, true)
		}
		figs = append(figs, &Figure{Name: name, Title: title, Grid: grid, Legend: rep.groupLabels(),
			Width: vg.Length(cols) * 4.2 * in, Height: vg.Length(rows) * 3.3 * in})
	}
	byClass("wait_cdf_by_class", "Queue time CDF per job class", "Queue time", waitOf)
	byClass("jct_cdf_by_class", "JCT CDF per job class (completed jobs)", "JCT", jctOf)

	series := func(y func(*SampleRow) float64) []TimeSeries {
		var out []TimeSeries
		for _, g := range rep.Groups {
			r := g.Runs[0]
			ts := TimeSeries{Name: g.Label, Policy: true}
			for i := range r.Timeseries {
				ts.T = append(ts.T, r.Timeseries[i].TimeS)
				ts.Y = append(ts.Y, y(&r.Timeseries[i]))
			}
			out = append(out, ts)
		}
		return out
	}
	note := ""
	if len(rep.Groups) < len(rep.Runs) {
		note = " (first run of each policy)"
	}
	figs = append(figs, UtilizationFigure(series(func(s *SampleRow) float64 { return 100 * s.Utilization }), note))
	figs[len(figs)-1].Legend = rep.groupLabels()
	if f := rep.usefulFigure(series, note); f != nil {
		figs = append(figs, f)
	}
	figs = append(figs, &Figure{Name: "queue_length", Title: "Pending jobs over time" + note,
		Width: 7 * in, Height: 4 * in, Grid: [][]*plot.Plot{{TimePlot("Queue length over time"+note,
			"Pending jobs", series(func(s *SampleRow) float64 { return float64(s.Pending) }))}}})

	if f := rep.queueShareFigure(); f != nil {
		figs = append(figs, f)
	}
	figs = append(figs, rep.physicalFigures(note)...)
	figs = append(figs, rep.headline())
	if f := rep.preemptionFigure(); f != nil {
		figs = append(figs, f)
	}
	for _, g := range rep.Groups {
		if f := ganttFigure(g.Label, g.Runs[0]); f != nil {
			figs = append(figs, f)
		}
	}
	return figs
}

// usefulFigure is the allocated-vs-useful utilization figure over the policies
// whose (first) run had device-level sharing on; nil when none had.
func (rep *Report) usefulFigure(series func(func(*SampleRow) float64) []TimeSeries, note string) *Figure {
	alloc := series(func(s *SampleRow) float64 { return 100 * s.Utilization })
	useful := series(func(s *SampleRow) float64 { return 100 * s.UsefulUtilization })
	var a, u []TimeSeries
	var labels []string
	for k, g := range rep.Groups {
		ts := g.Runs[0].Timeseries
		if len(ts) == 0 || !ts[0].HasUseful {
			continue
		}
		a, u, labels = append(a, alloc[k]), append(u, useful[k]), append(labels, g.Label)
	}
	if len(a) == 0 {
		return nil
	}
	f := UsefulUtilizationFigure(a, u, note)
	f.Legend = labels
	return f
}

// headline is a 2x3 grid of bar panels: mean over the group's runs, min-max
// whiskers across runs (seeds).
func (rep *Report) headline() *Figure {
	type metric struct {
		title, unit string
		get         func(*Summary) float64
	}
	ms := []metric{
		{"Mean queue time", "s", func(s *Summary) float64 { return s.WaitS.Mean }},
		{"p99 queue time", "s", func(s *Summary) float64 { return s.WaitS.P99 }},
		{"Mean JCT", "s", func(s *Summary) float64 { return s.JCTS.Mean }},
		{"p99 JCT", "s", func(s *Summary) float64 { return s.JCTS.P99 }},
		{"Mean bounded slowdown", "ratio", func(s *Summary) float64 { return s.Slowdown.Mean }},
		{"GPU utilization", "%", func(s *Summary) float64 { return 100 * s.GPUUtilization }},
	}
	grid := [][]*plot.Plot{make([]*plot.Plot, 3), make([]*plot.Plot, 3)}
	seeds := 1
	for k, m := range ms {
		var bars []Bar
		for _, g := range rep.Groups {
			b := Bar{Label: g.Label, Min: math.Inf(1), Max: math.Inf(-1), N: len(g.Runs)}
			for _, r := range g.Runs {
				v := m.get(r.Summary)
				b.Mean += v / float64(len(g.Runs))
				b.Min, b.Max = min(b.Min, v), max(b.Max, v)
			}
			seeds = max(seeds, len(g.Runs))
			bars = append(bars, b)
		}
		unit, div := m.unit, 1.0
		if m.unit == "s" {
			var top float64
			for _, b := range bars {
				top = max(top, b.Max)
			}
			unit, div = timeUnit(top)
			for i := range bars {
				bars[i].Mean /= div
				bars[i].Min /= div
				bars[i].Max /= div
			}
		}
		grid[k/3][k%3] = BarPanel(m.title, fmt.Sprintf("%s (%s)", m.title, unit), bars)
	}
	title := "Headline metrics per policy"
	if seeds > 1 {
		title += " (bars: mean over runs; whiskers: min-max)"
	}
	w := max(9, 1.2*float64(len(rep.Groups))*3)
	return &Figure{Name: "headline", Title: title, Grid: grid, Width: vg.Length(w) * vg.Inch, Height: 6.5 * vg.Inch}
}

// groupLabels are the policy labels of the report's groups.
func (rep *Report) groupLabels() []string {
	out := make([]string, len(rep.Groups))
	for i, g := range rep.Groups {
		out[i] = g.Label
	}
	return out
}

// preemptionFigure shows preemptions and wasted GPU-hours per policy (mean over
// runs, min-max whiskers); nil when no run preempted anything.
func (rep *Report) preemptionFigure() *Figure {
	any := false
	for _, r := range rep.Runs {
		any = any || r.Summary.Jobs.Preemptions > 0 || wastedGPUHours(r.Summary) > 0
	}
	if !any {
		return nil
	}
	bars := func(get func(*Summary) float64) []Bar {
		var out []Bar
		for _, g := range rep.Groups {
			b := Bar{Label: g.Label, Min: math.Inf(1), Max: math.Inf(-1), N: len(g.Runs)}
			for _, r := range g.Runs {
				v := get(r.Summary)
				b.Mean += v / float64(len(g.Runs))
				b.Min, b.Max = min(b.Min, v), max(b.Max, v)
			}
			out = append(out, b)
		}
		return out
	}
	grid := [][]*plot.Plot{{
		BarPanel("Preemptions", "Preemptions (requeue, kill, suspend)", bars(func(s *Summary) float64 { return float64(s.Jobs.Preemptions) })),
		BarPanel("Wasted GPU time", "Wasted GPU-hours (lost work, save/restore, killed runs)", bars(wastedGPUHours)),
	}}
	w := max(9, 1.2*float64(len(rep.Groups))*2)
	return &Figure{Name: "preemption", Title: "Preemptions and wasted GPU-hours per policy (lower is better; whiskers: min-max over runs)",
		Grid: grid, Width: vg.Length(w) * vg.Inch, Height: 3.8 * vg.Inch}
}

// ganttFigure draws a run's GPU allocation; nil when the cluster is larger than
// GanttMaxGPUs or the run has no event log. Each job's last run is drawn on its
// final placement (jobs.csv nodes); earlier runs of preempted jobs are not drawn
// (their placement is not recorded). GPUs of a node are packed into rows by
// start time, so the row of a job is a GPU slot, not a physical GPU id.
func ganttFigure(label string, r *Run) *Figure {
	s := r.Summary
	if s.GPUCapacity <= 0 || s.GPUCapacity > GanttMaxGPUs || len(r.Events) == 0 {
		return nil
	}
	type span struct{ start, end float64 }
	last := map[string]span{}
	open := map[string]float64{}
	endS := s.EndS
	for _, e := range r.Events {
		endS = max(endS, e.TimeS)
		switch e.Kind {
		case "start":
			open[e.JobID] = e.TimeS
		case "finish", "preempt", "suspend", "kill", "timeout":
			if st, ok := open[e.JobID]; ok {
				last[e.JobID] = span{st, e.TimeS}
				delete(open, e.JobID)
			}
		}
	}
	for id, st := range open {
		last[id] = span{st, endS}
	}
	classes := classOrder([]*Group{{Runs: []*Run{r}}})
	type piece struct {
		sp      span
		node    string
		gpus    int
		group   int
		job, rp int
	}
	var pieces []piece
	for k := range r.Jobs {
		j := &r.Jobs[k]
		sp, ok := last[j.ID]
		if !ok || j.Nodes == "" || j.GPUsPerRe <= 0 {
			continue
		}
		for rp, n := range strings.Split(j.Nodes, "|") {
			pieces = append(pieces, piece{sp: sp, node: n, gpus: int(j.GPUsPerRe),
				group: slices.Index(classes, j.Class), job: k, rp: rp})
		}
	}
	slices.SortStableFunc(pieces, func(a, b piece) int {
		if a.sp.start != b.sp.start {
			if a.sp.start < b.sp.start {
				return -1
			}
			return 1
		}
		if a.job != b.job {
			return a.job - b.job
		}
		return a.rp - b.rp
	})
	slots := map[string][]float64{} // node -> busy-until per slot
	type placed struct {
		p     piece
		slots []int
	}
	var all []placed
	for _, p := range pieces {
		busy := slots[p.node]
		var got []int
		// prefer a contiguous block of free slots
		for i := 0; i+p.gpus <= len(busy) && got == nil; i++ {
			ok := true
			for k := i; k < i+p.gpus; k++ {
				if busy[k] > p.sp.start {
					ok = false
					break
				}
			}
			if ok {
				for k := i; k < i+p.gpus; k++ {
					got = append(got, k)
				}
			}
		}
		if got == nil {
			for i := range busy {
				if len(got) < p.gpus && busy[i] <= p.sp.start {
					got = append(got, i)
				}
			}
			for len(got) < p.gpus {
				busy = append(busy, 0)
				got = append(got, len(busy)-1)
			}
		}
		for _, k := range got {
			busy[k] = p.sp.end
		}
		slots[p.node] = busy
		all = append(all, placed{p, got})
	}
	nodes := make([]string, 0, len(slots))
	for n := range slots {
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b string) int {
		switch {
		case naturalLess(a, b):
			return -1
		case naturalLess(b, a):
			return 1
		}
		return strings.Compare(a, b)
	})
	offset := map[string]int{}
	var gnodes []GanttNode
	rows := 0
	for _, n := range nodes {
		offset[n] = rows
		gnodes = append(gnodes, GanttNode{Name: n, Rows: len(slots[n])})
		rows += len(slots[n])
	}
	if rows == 0 {
		return nil
	}
	var bars []GanttBar
	for _, a := range all {
		// one bar per run of consecutive slots
		for i := 0; i < len(a.slots); {
			k := i + 1
			for k < len(a.slots) && a.slots[k] == a.slots[k-1]+1 {
				k++
			}
			bars = append(bars, GanttBar{Start: a.p.sp.start, End: a.p.sp.end,
				Row0: offset[a.p.node] + a.slots[i], Rows: k - i, Group: max(a.p.group, 0)})
			i = k
		}
	}
	title := fmt.Sprintf("GPU allocation: %s (%d GPUs)", label, s.GPUCapacity)
	h := max(3.5, 1.6+0.16*float64(rows))
	return &Figure{Name: "gantt_" + fileSafe(label), Title: title, Width: 9 * vg.Inch, Height: vg.Length(h) * vg.Inch,
		Grid: [][]*plot.Plot{{GanttPlot(title, bars, gnodes, classes, endS)}}}
}

// fileSafe maps a label to a file-name-safe stem.
func fileSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

// BuildReport reads run directories and writes the report into outDir (created
// if missing): every figure as PNG and SVG, index.html, summary.md and
// summary.csv (see docs/outputs.md). It is the entry point of `gpusim report`
// and is reused by compare and sweep. Errors name the file.
func BuildReport(runDirs []string, outDir string) error {
	return BuildReportWith(runDirs, outDir, nil)
}

// BuildReportWith is BuildReport with a description of what was simulated for
// the top of index.html.
func BuildReportWith(runDirs []string, outDir string, setups []Setup) error {
	rep, err := LoadReport(runDirs)
	if err != nil {
		return err
	}
	rep.Setups = setups
	return rep.Write(outDir)
}

// Write writes the report files into outDir, with no two of its policies
// drawn in the same colour (withReportColors).
func (rep *Report) Write(outDir string) error {
	return withReportColors(rep.groupLabels(), func() error { return rep.write(outDir) })
}

func (rep *Report) write(outDir string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("create report dir: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(outDir, "summary.csv"), rep.WriteSummaryCSV); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(outDir, "summary.md"), rep.WriteSummaryMarkdown); err != nil {
		return err
	}
	fids := rep.Fidelities()
	if err := rep.writeFidelity(outDir, fids); err != nil {
		return err
	}
	figs := rep.Figures()
	if f := fidelityFigure(fids); f != nil {
		figs = append(figs, f)
	}
	svgs := make([][]byte, len(figs))
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
				svgs[i] = svgBody(b)
			}
		}
	}
	return fsutil.WriteFileAtomic(filepath.Join(outDir, "index.html"), func(w io.Writer) error {
		return rep.writeHTML(w, figs, svgs, fids)
	})
}

var indexTmpl = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpusim report: {{.Scenarios}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 1.5em auto; padding: 0 1.5em; color: #222; max-width: 1340px; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.lede { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #d0d0d0; padding: 0.3em 0.55em; }
th { background: #f3f3f3; font-weight: 600; vertical-align: bottom; }
th small { display: block; font-weight: normal; color: #666; font-size: 0.82em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.best { background: #e2f3e5; font-weight: 700; }
td.policy { font-weight: 600; white-space: nowrap; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px; margin-right: 0.4em; vertical-align: -0.05em; }
.scroll { overflow-x: auto; max-width: 100%; }
.setup { display: grid; grid-template-columns: 1fr 1fr 1.3fr; gap: 0.6em 1.5em; }
.setup div { min-width: 0; }
.setup h3 { font-size: 1em; margin: 0.3em 0; color: #444; }
pre { background: #f7f7f7; border: 1px solid #e3e3e3; padding: 0.5em; font-size: 0.85em; overflow-x: auto; margin: 0.3em 0; white-space: pre-wrap; }
figure { margin: 1.5em 0; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { font-weight: 600; margin-bottom: 0.4em; }
details summary { cursor: pointer; color: #245; margin: 0.6em 0; }
.note { color: #555; font-size: 0.9em; }
.legend { font-weight: normal; margin-left: 1em; font-size: 0.92em; }
</style>
</head>
<body>
<h1>gpusim report: {{.Scenarios}}</h1>
<p class="lede">{{len .Groups}} polic{{if eq (len .Groups) 1}}y{{else}}ies{{end}}, {{len .Runs}} run(s){{if gt .MaxRuns 1}} ({{.MaxRuns}} seeds per policy){{end}}. Times are simulated time. Metric definitions: docs/metrics.md of gpusim.</p>
{{if .Setups}}<h2>What was simulated</h2>
{{range .Setups}}<div class="setup" id="setup-{{.Scenario}}">
<div><h3>Cluster</h3><p>{{.Cluster}}</p><h3>Scenario</h3><p>{{.Scenario}}{{if .Seeds}}, seed{{if gt (len .Seeds) 1}}s{{end}} {{range $i, $s := .Seeds}}{{if $i}}, {{end}}{{$s}}{{end}}{{end}}</p></div>
<div><h3>Workload</h3><p>{{.Workload}}</p></div>
<div><h3>Policies</h3>{{range .Policies}}<p><b>{{.Label}}</b>{{if ne .Label .Name}} ({{.Name}}){{end}}{{if .Params}}</p><pre>{{.Params}}</pre>{{else}}: default parameters</p>{{end}}{{end}}</div>
</div>
{{end}}{{end}}<h2>Headline</h2>
<p class="note">One row per policy{{if gt .MaxRuns 1}}: mean ± standard deviation over {{.MaxRuns}} seeds{{end}}. The best value of each column is highlighted; each column says which direction is better.</p>
<div class="scroll"><table id="headline">
<tr><th>policy</th><th>runs</th><th>jobs done</th>{{range .Metrics}}<th>{{.Title}}<small>{{.Dir}}</small></th>{{end}}</tr>
{{range .Headline}}<tr><td class="policy"><span class="swatch" style="background:{{.Color}}"></span>{{.Policy}}</td><td class="num">{{.Runs}}</td><td class="num">{{.Done}}</td>{{range .Cells}}<td class="num{{if .Best}} best{{end}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table></div>
{{if .Fidelity}}<h2>Simulation vs live fidelity</h2>
<p class="note">Each live run beside the simulation of the same scenario, seed and policy (fidelity.csv has every job): start error = live - simulated first start; JCT ratio = live / simulated JCT per job completed in both; Kendall tau-b of the first-start times (1 = same order).</p>
<div class="scroll"><table id="fidelity">
<tr>{{range .FidHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .Fidelity}}<tr>{{range $i, $c := .}}<td{{if ge $i 3}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}{{if .ModelHeader}}<h2>Models</h2>
<p class="note">Figures of the scenario's optional models per run (summary.json; docs/outputs.md): failures and recovery, telemetry stragglers, power and carbon, checkpoint I/O, serving jobs, job dependencies. "–": the run has no such model.</p>
<div class="scroll"><table id="models">
<tr>{{range .ModelHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .ModelRows}}<tr>{{range $i, $c := .}}<td{{if ge $i 1}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}<h2>Plots</h2>
{{range .Figs}}<figure id="{{.Name}}">
<figcaption>{{.Title}}{{if .Legend}}<span class="legend">{{range .Legend}}<span class="swatch" style="background:{{.Color}}"></span>{{.Name}} {{end}}</span>{{end}}</figcaption>
{{.SVG}}
</figure>
{{end}}<h2>Every run</h2>
<details><summary>Per-run summary table ({{len .Runs}} rows; also summary.csv and summary.md)</summary>
<div class="scroll"><table>
<tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if ge $i 4}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div></details>
<details><summary>Provenance</summary>
<div class="scroll"><table>
<tr><th>run</th><th>policy</th><th>scenario</th><th>seed</th><th>scenario sha256</th><th>gpusim</th><th>go</th></tr>
{{range .Prov}}<tr><td>{{.Run}}</td><td>{{.Policy}}</td><td>{{.P.Scenario}}</td><td>{{.P.Seed}}</td><td><code>{{printf "%.16s" .P.ScenarioSHA256}}…</code></td><td>{{.P.Version}}</td><td>{{.P.GoVersion}}</td></tr>
{{end}}</table></div></details>
<script>
// Layout facts for automated checks (gpusim's headless-browser test reads them
// with --dump-dom): page width and how many figures rendered.
(function () {
  var d = document.documentElement;
  d.setAttribute("data-scroll-width", d.scrollWidth);
  d.setAttribute("data-figures", document.querySelectorAll("figure svg").length);
  d.setAttribute("data-headline-rows", document.querySelectorAll("#headline tr").length - 1);
})();
</script>
</body>
</html>
`))

func (rep *Report) writeHTML(w io.Writer, figs []*Figure, svgs [][]byte, fids []Fidelity) error {
	type prov struct {
		Run, Policy string
		P           Provenance
	}
	type swatch struct{ Name, Color string }
	type fig struct {
		Name, Title string
		SVG         template.HTML
		Legend      []swatch
	}
	type metric struct{ Title, Dir string }
	type cell struct {
		Text string
		Best bool
	}
	type hrow struct {
		Policy, Color, Done string
		Runs                int
		Cells               []cell
	}
	data := struct {
		Scenarios string
		Runs      []*Run
		Groups    []*Group
		MaxRuns   int
		Setups    []Setup
		Metrics   []metric
		Headline  []hrow
		Columns   []string
		Rows      [][]string
		Prov      []prov
		Figs      []fig
		FidHeader []string
		Fidelity  [][]string
		// ModelHeader and ModelRows: the Models table (ModelsTable).
		ModelHeader []string
		ModelRows   [][]string
	}{Scenarios: strings.Join(rep.scenarios(), ", "), Runs: rep.Runs, Groups: rep.Groups, Setups: rep.Setups,
		Columns: SummaryColumns, Rows: rep.rows(), FidHeader: FidelityHeader}
	for _, f := range fids {
		data.Fidelity = append(data.Fidelity, FidelityRow(f))
	}
	data.ModelHeader, data.ModelRows = rep.ModelsTable()
	for _, g := range rep.Groups {
		data.MaxRuns = max(data.MaxRuns, len(g.Runs))
	}
	for _, m := range HeadlineMetrics {
		d := "↓ lower is better"
		if m.Better > 0 {
			d = "↑ higher is better"
		}
		data.Metrics = append(data.Metrics, metric{m.Title, d})
	}
	for _, r := range Headline(rep.Groups) {
		c := PolicyColor(r.Policy)
		h := hrow{Policy: r.Policy, Runs: r.Runs, Color: fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B),
			Done: fmt.Sprintf("%s / %s", sig0(r.Completed), sig0(r.Jobs))}
		for k, m := range HeadlineMetrics {
			h.Cells = append(h.Cells, cell{FormatCell(m, r.Cells[k]), r.Cells[k].Best})
		}
		data.Headline = append(data.Headline, h)
	}
	for i, r := range rep.Runs {
		data.Prov = append(data.Prov, prov{rep.Labels[i], r.Summary.Policy, r.Summary.Provenance})
	}
	for i, f := range figs {
		// The SVG comes from our own renderer (gonum/plot), not from input text:
		// gonum's SVG canvas HTML-escapes every text it draws.
		var sw []swatch
		for _, l := range f.Legend {
			c := PolicyColor(l)
			sw = append(sw, swatch{l, fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)})
		}
		data.Figs = append(data.Figs, fig{f.Name, f.Title, template.HTML(svgs[i]), sw})
	}
	return indexTmpl.Execute(w, data)
}

// QueueShare is the GPU allocation of each queue of one run sampled on the run's
// time-series grid.
type QueueShare struct {
	Queues []string    // queue names (QueueName), sorted
	T      []float64   // sample times, s (the timeseries.parquet grid)
	GPUs   [][]float64 // GPUs[q][i]: GPUs allocated to queue q at T[i] (milli-GPU / 1000)
}

// QueueShares derives per-queue GPU allocation over time from a run's jobs and
// events: every run of a job (start to finish, preempt, kill or timeout, or to
// the end of the run) allocates gpus x gpu_milli / 1000 GPUs to the job's queue;
// a sample at time t counts the events at times <= t, like timeseries.parquet,
// so the queues sum to its gpus_allocated. Nil when the run has no events or
// no time series.
func QueueShares(r *Run) *QueueShare {
	if len(r.Events) == 0 || len(r.Timeseries) == 0 {
		return nil
	}
	type info struct {
		q     int
		milli int64
	}
	qidx := map[string]int{}
	var names []string
	for i := range r.Jobs {
		n := QueueName(r.Jobs[i].Queue)
		if _, ok := qidx[n]; !ok {
			qidx[n] = 0
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for i, n := range names {
		qidx[n] = i
	}
	jobs := make(map[string]info, len(r.Jobs))
	for i := range r.Jobs {
		j := &r.Jobs[i]
		jobs[j.ID] = info{qidx[QueueName(j.Queue)], int64(j.GPUs) * int64(j.GPUMilli)}
	}
	qs := &QueueShare{Queues: names, GPUs: make([][]float64, len(names))}
	alloc := make([]int64, len(names))
	running := map[string]bool{}
	ev := r.Events
	k := 0
	for _, s := range r.Timeseries {
		tu := int64(math.Round(s.TimeS * 1e6))
		for ; k < len(ev) && ev[k].TimeU <= tu; k++ {
			e := &ev[k]
			in, ok := jobs[e.JobID]
			if !ok {
				continue
			}
			switch e.Kind {
			case "start":
				if !running[e.JobID] {
					running[e.JobID] = true
					alloc[in.q] += in.milli
				}
			case "finish", "preempt", "suspend", "kill", "timeout":
				if running[e.JobID] {
					delete(running, e.JobID)
					alloc[in.q] -= in.milli
				}
			}
		}
		qs.T = append(qs.T, s.TimeS)
		for q := range names {
			qs.GPUs[q] = append(qs.GPUs[q], float64(alloc[q])/1000)
		}
	}
	return qs
}

// queueShareFigure plots each group's (first run's) per-queue GPU share of the
// cluster over time, one panel per policy; nil when no run has events.
func (rep *Report) queueShareFigure() *Figure {
	type panel struct {
		label string
		qs    *QueueShare
		cap   int64
		sum   *Summary
	}
	var panels []panel
	var all []string
	for _, g := range rep.Groups {
		r := g.Runs[0]
		if qs := QueueShares(r); qs != nil && r.Summary.GPUCapacity > 0 {
			panels = append(panels, panel{g.Label, qs, r.Summary.GPUCapacity, r.Summary})
			for _, q := range qs.Queues {
				if !slices.Contains(all, q) {
					all = append(all, q)
				}
			}
		}
	}
	if len(panels) == 0 {
		return nil
	}
	slices.Sort(all)
	cols := min(2, len(panels))
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	note := ""
	if len(rep.Groups) < len(rep.Runs) {
		note = " (first run of each policy)"
	}
	quota := false
	for k, p := range panels {
		ss := make([]TimeSeries, len(all)) // same queue, same color in every panel
		for qi, q := range all {
			ss[qi].Name = q
			if i := slices.Index(p.qs.Queues, q); i >= 0 {
				ss[qi].T = p.qs.T
				for _, g := range p.qs.GPUs[i] {
					ss[qi].Y = append(ss[qi].Y, 100*g/float64(p.cap))
				}
			}
		}
		pl := TimePlot(p.label+": GPU share per queue", "GPUs allocated to the queue (% of cluster)", ss)
		// Each queue's nominal quota (policies with quotas: kueue) as a dashed
		// reference line in the queue's colour.
		var xmax float64
		for _, q := range ss {
			if len(q.T) > 0 {
				xmax = max(xmax, q.T[len(q.T)-1])
			}
		}
		_, div := timeUnit(xmax)
		for qi, q := range all {
			if n := p.sum.PerQueue[q].NominalGPUs; n > 0 && xmax > 0 {
				y := 100 * n / float64(p.cap)
				addLineColor(pl, q+" nominal quota", plotter.XYs{{X: 0, Y: y}, {X: xmax / div, Y: y}}, lineColor(qi), []vg.Length{vg.Points(5), vg.Points(3)})
				pl.Y.Max = max(pl.Y.Max, 1.15*y)
				quota = true
			}
		}
		grid[k/cols][k%cols] = pl
	}
	title := "GPU share per queue over time" + note
	if quota {
		title += "; dashed: each queue's nominal GPU quota"
	}
	return &Figure{Name: "queue_share", Title: title, Grid: grid,
		Width: vg.Length(cols) * 5.5 * vg.Inch, Height: vg.Length(rows) * 3.6 * vg.Inch}
}
