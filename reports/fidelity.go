package reports

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gpusim/gpusim/internal/csvutil"
	"github.com/gpusim/gpusim/internal/fsutil"
)

// ModeLive is Summary.Mode of a live run.
const ModeLive = "live"

// LiveSummary is summary.json's "live" object: how a live run ran.
type LiveSummary struct {
	Backend string `json:"backend"` // "local"
	// Policy is the policy's label as in a simulation of the same scenario
	// (the live run's "policy" is "<label> (live)", so reports keep them apart).
	Policy string  `json:"policy"`
	Scale  float64 `json:"scale"` // simulated seconds per real second
	Host   string  `json:"host"`
	Fake   bool    `json:"fake"` // the GPUs came from the fake NVML (--fake)
	GPUs   int     `json:"gpus"`
	// Resumed says the run was resumed from its journal at least once; Adopted,
	// Recovered and Lost count the runs found running, found ended (status
	// file) and gone without a status at the (last) resume.
	Resumed   bool `json:"resumed"`
	Adopted   int  `json:"adopted"`
	Recovered int  `json:"recovered"`
	Lost      int  `json:"lost"`
	// Kube is what the Kubernetes backend did besides its jobs' events
	// (absent for other backends).
	Kube *KubeSummary `json:"kube,omitempty"`
}

// KubeSummary is summary.json's "live.kube" object (docs/live.md).
type KubeSummary struct {
	SchedulerName string `json:"scheduler_name"`
	DryRun        bool   `json:"dry_run"` // decided and recorded, never bound nor evicted
	Shadow        bool   `json:"shadow"`  // watched another scheduler's pods, never acted
	Nodes         int    `json:"nodes"`
	Binds         int    `json:"binds"`                // pods bound
	Evictions     int    `json:"evictions"`            // pods evicted
	Rollbacks     int    `json:"rollbacks"`            // gangs whose binding failed and was undone
	Skipped       int    `json:"skipped"`              // gangs skipped as malformed (with an Event)
	Adopted       int    `json:"adopted"`              // gangs found bound at start
	Completed     int    `json:"completed_at_start"`   // half-bound gangs completed at start
	RolledBack    int    `json:"rolled_back_at_start"` // half-bound gangs rolled back at start
}

// FidelityJob compares one job's simulated and live schedule (seconds of
// simulated time).
type FidelityJob struct {
	ID                   string
	SimStart, LiveStart  float64 // first start
	StartErr             float64 // LiveStart - SimStart
	SimJCT, LiveJCT      float64 // End - Submit (completed in both)
	JCTRatio             float64 // LiveJCT / SimJCT
	Completed, StartedIn bool    // completed in both; started in both
}

// Fidelity compares a live run with a simulation of the same scenario and
// policy, as Gavel reports its simulator's fidelity (Narayanan et al., OSDI
// 2020, §7.2: per-job JCT ratios and the average JCT difference).
type Fidelity struct {
	Policy            string
	SimRun, LiveRun   string // run labels
	Jobs              []FidelityJob
	Started           int     // jobs started in both runs
	Completed         int     // jobs completed in both runs (JCT compared)
	MeanAbsStartErrS  float64 // mean |live - sim| first start, over Started
	P95AbsStartErrS   float64
	MeanSimJCTS       float64 // over Completed
	MeanLiveJCTS      float64
	MeanJCTDiff       float64 // MeanLiveJCTS / MeanSimJCTS - 1
	RatioP5, RatioP50 float64 // percentiles of the per-job live/sim JCT ratio
	RatioP95          float64
	// KendallTau is Kendall's tau-b between the sim and live first-start times
	// over Started: 1 = the same start order.
	KendallTau float64
}

// CompareFidelity pairs jobs by ID (jobs only in one run are skipped) and
// computes the fidelity of live against sim.
func CompareFidelity(policy string, sim, live []JobRow) Fidelity {
	f := Fidelity{Policy: policy}
	idx := make(map[string]int, len(sim))
	for i := range sim {
		idx[sim[i].ID] = i
	}
	var xs, ys, absErr, ratios []float64
	for i := range live {
		l := &live[i]
		k, ok := idx[l.ID]
		if !ok {
			continue
		}
		s := &sim[k]
		fj := FidelityJob{ID: l.ID, SimStart: s.Start, LiveStart: l.Start, StartErr: math.NaN(),
			SimJCT: math.NaN(), LiveJCT: math.NaN(), JCTRatio: math.NaN()}
		if !math.IsNaN(s.Start) && !math.IsNaN(l.Start) {
			fj.StartedIn = true
			fj.StartErr = l.Start - s.Start
			xs, ys = append(xs, s.Start), append(ys, l.Start)
			absErr = append(absErr, math.Abs(fj.StartErr))
		}
		if s.State == "completed" && l.State == "completed" {
			fj.Completed = true
			fj.SimJCT, fj.LiveJCT = s.JCT, l.JCT
			f.MeanSimJCTS += s.JCT
			f.MeanLiveJCTS += l.JCT
			if s.JCT > 0 {
				fj.JCTRatio = l.JCT / s.JCT
				ratios = append(ratios, fj.JCTRatio)
			}
			f.Completed++
		}
		f.Jobs = append(f.Jobs, fj)
	}
	f.Started = len(xs)
	if f.Completed > 0 {
		f.MeanSimJCTS /= float64(f.Completed)
		f.MeanLiveJCTS /= float64(f.Completed)
		if f.MeanSimJCTS > 0 {
			f.MeanJCTDiff = f.MeanLiveJCTS/f.MeanSimJCTS - 1
		}
	}
	if len(absErr) > 0 {
		f.MeanAbsStartErrS = mean(absErr)
		slices.Sort(absErr)
		f.P95AbsStartErrS = Percentile(absErr, 95)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		f.RatioP5, f.RatioP50, f.RatioP95 = Percentile(ratios, 5), Percentile(ratios, 50), Percentile(ratios, 95)
	}
	f.KendallTau = KendallTauB(xs, ys)
	return f
}

// KendallTauB is Kendall's rank correlation tau-b of paired samples x, y
// (ties handled as in Kendall 1945 and scipy.stats.kendalltau):
// (C - D) / sqrt((C + D + Ty) (C + D + Tx)), where C and D count concordant and
// discordant pairs and Tx (Ty) pairs tied in x only (y only). It is NaN with
// fewer than two pairs or when one side is all ties. O(n²): live runs are small.
func KendallTauB(x, y []float64) float64 {
	n := min(len(x), len(y))
	var c, d, tx, ty float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dx, dy := x[i]-x[j], y[i]-y[j]
			switch {
			case dx == 0 && dy == 0:
			case dx == 0:
				tx++
			case dy == 0:
				ty++
			case (dx > 0) == (dy > 0):
				c++
			default:
				d++
			}
		}
	}
	den := math.Sqrt((c + d + ty) * (c + d + tx))
	if den == 0 {
		return math.NaN()
	}
	return (c - d) / den
}

// Fidelities pairs every live run of the report with a simulation run of the
// same scenario, seed and policy (LiveSummary.Policy) and compares them, in
// the order of the live runs. Live runs without a simulated twin are skipped.
func (rep *Report) Fidelities() []Fidelity {
	var out []Fidelity
	for i, l := range rep.Runs {
		if l.Summary.Mode != ModeLive || l.Summary.Live == nil {
			continue
		}
		for k, s := range rep.Runs {
			if s.Summary.Mode != "" || s.Summary.Policy != l.Summary.Live.Policy || s.Summary.Scenario != l.Summary.Scenario ||
				s.Summary.Provenance.Seed != l.Summary.Provenance.Seed {
				continue
			}
			f := CompareFidelity(l.Summary.Live.Policy, s.Jobs, l.Jobs)
			f.SimRun, f.LiveRun = rep.Labels[k], rep.Labels[i]
			out = append(out, f)
			break
		}
	}
	return out
}

// FidelityColumns are the columns of fidelity.csv (one row per job per pair).
var FidelityColumns = []string{"policy", "sim_run", "live_run", "job_id", "sim_start_s", "live_start_s", "start_err_s",
	"sim_jct_s", "live_jct_s", "jct_ratio"}

func fnum(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// writeFidelity writes fidelity.csv and fidelity.md when the report holds a
// live run and its simulated twin; nothing otherwise.
func (rep *Report) writeFidelity(outDir string, fs []Fidelity) error {
	if len(fs) == 0 {
		return nil
	}
	err := fsutil.WriteFileAtomic(filepath.Join(outDir, "fidelity.csv"), func(w io.Writer) error {
		var b []byte
		row := func(cells ...string) {
			for k, c := range cells {
				if k > 0 {
					b = append(b, ',')
				}
				b = csvutil.AppendField(b, c)
			}
			b = append(b, '\n')
		}
		row(FidelityColumns...)
		for _, f := range fs {
			for _, j := range f.Jobs {
				row(f.Policy, f.SimRun, f.LiveRun, j.ID, fnum(j.SimStart), fnum(j.LiveStart), fnum(j.StartErr),
					fnum(j.SimJCT), fnum(j.LiveJCT), fnum(j.JCTRatio))
			}
		}
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(outDir, "fidelity.md"), func(w io.Writer) error {
		return WriteFidelityMarkdown(w, fs)
	})
}

// FidelityHeader is the header of the fidelity table (fidelity.md, index.html).
var FidelityHeader = []string{"policy", "sim run", "live run", "jobs started", "jobs completed", "Kendall tau-b (start order)",
	"mean |start error|", "p95 |start error|", "mean JCT sim", "mean JCT live", "mean JCT difference",
	"JCT ratio p5", "JCT ratio p50", "JCT ratio p95"}

// FidelityRow formats f as cells of FidelityHeader.
func FidelityRow(f Fidelity) []string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
	return []string{f.Policy, f.SimRun, f.LiveRun, strconv.Itoa(f.Started), strconv.Itoa(f.Completed), g(f.KendallTau),
		g(f.MeanAbsStartErrS) + " s", g(f.P95AbsStartErrS) + " s", g(f.MeanSimJCTS) + " s", g(f.MeanLiveJCTS) + " s",
		fmt.Sprintf("%+.2f %%", 100*f.MeanJCTDiff), g(f.RatioP5), g(f.RatioP50), g(f.RatioP95)}
}

// WriteFidelityMarkdown writes the fidelity table in Markdown.
func WriteFidelityMarkdown(w io.Writer, fs []Fidelity) error {
	fmt.Fprintf(w, "# Simulation vs live fidelity\n\nTimes are simulated seconds (live: wall time x scale). Start error = live - sim first start; JCT ratio = live / sim JCT per job completed in both.\n\n")
	fmt.Fprintf(w, "| %s |\n|", joinCells(FidelityHeader))
	for range FidelityHeader {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, f := range fs {
		if _, err := fmt.Fprintf(w, "| %s |\n", joinCells(FidelityRow(f))); err != nil {
			return err
		}
	}
	return nil
}

func joinCells(cs []string) string {
	out := ""
	for i, c := range cs {
		if i > 0 {
			out += " | "
		}
		out += mdEscape(c)
	}
	return out
}

// fidelityFigure is the CDF of per-job live/sim JCT ratios, one line per pair;
// nil without pairs.
func fidelityFigure(fs []Fidelity) *Figure {
	if len(fs) == 0 {
		return nil
	}
	p := newPlot("Live / simulated JCT per job (CDF)", "JCT ratio (live / sim)", "Fraction of jobs (CDF)")
	p.Y.Min, p.Y.Max = 0, 1
	var names []string
	for _, f := range fs {
		var r []float64
		for _, j := range f.Jobs {
			if !math.IsNaN(j.JCTRatio) {
				r = append(r, j.JCTRatio)
			}
		}
		if len(r) == 0 {
			continue
		}
		slices.Sort(r)
		addLineColor(p, f.Policy, cdfPoints(r, 1), PolicyColor(f.Policy), nil)
		names = append(names, f.Policy)
	}
	if len(names) == 0 {
		return nil
	}
	ref, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 0}, {X: 1, Y: 1}})
	if err == nil {
		ref.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(ref)
	}
	return &Figure{Name: "fidelity_jct_ratio_cdf", Title: "Sim vs live: CDF of per-job JCT ratio (live / sim); 1 = same JCT",
		Legend: names, Width: 7 * vg.Inch, Height: 4 * vg.Inch, Grid: [][]*plot.Plot{{p}}}
}
