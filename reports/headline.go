package reports

import (
	"fmt"
	"hash/fnv"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// HeadlineMetric is one column of the headline table: how to read it from a
// run's summary, its unit, and which direction is better.
type HeadlineMetric struct {
	Key    string // summary.json path, e.g. "wait_s.mean"
	Title  string // column title
	Unit   string // "time" (seconds, shown in human units), "%", "count", "GPU-h", "ratio", "index"
	Better int    // -1: lower is better, +1: higher is better
	Get    func(*Summary) float64
}

// wastedGPUHours is the run's GPU time that produced no surviving work (sum over
// job classes, which partition the jobs).
func wastedGPUHours(s *Summary) float64 {
	var w float64
	for _, g := range s.Classes {
		w += g.WastedGPUHours
	}
	return w
}

// HeadlineMetrics are the headline table's metric columns, in order.
var HeadlineMetrics = []HeadlineMetric{
	{"wait_s.mean", "mean wait", "time", -1, func(s *Summary) float64 { return s.WaitS.Mean }},
	{"wait_s.p95", "p95 wait", "time", -1, func(s *Summary) float64 { return s.WaitS.P95 }},
	{"jct_s.mean", "mean JCT", "time", -1, func(s *Summary) float64 { return s.JCTS.Mean }},
	{"slowdown.mean", "mean slowdown", "ratio", -1, func(s *Summary) float64 { return s.Slowdown.Mean }},
	{"gpu_utilization", "GPU util", "%", +1, func(s *Summary) float64 { return 100 * s.GPUUtilization }},
	{"makespan_s", "makespan", "time", -1, func(s *Summary) float64 { return s.MakespanS }},
	{"jobs.preemptions", "preemptions", "count", -1, func(s *Summary) float64 { return float64(s.Jobs.Preemptions) }},
	{"wasted_gpu_hours", "wasted", "GPU-h", -1, wastedGPUHours},
	{"fairness.jain_users", "fairness (Jain, users)", "index", +1, func(s *Summary) float64 { return s.Fairness.JainUsers }},
}

// HeadlineCell is one metric of one policy over its runs (seeds).
type HeadlineCell struct {
	Mean, SD, Min, Max float64
	N                  int
	Best               bool // the best mean of its column (ties: all of them)
}

// HeadlineRow is one policy's row.
type HeadlineRow struct {
	Policy          string
	Runs            int
	Jobs, Completed float64 // means over runs
	Cells           []HeadlineCell
}

// Headline computes the headline table: one row per group (policy), each metric
// as mean, sample standard deviation, min and max over the group's runs, and the
// best mean of each column marked (in the metric's direction; a column where all
// means are equal has no best).
func Headline(groups []*Group) []HeadlineRow {
	rows := make([]HeadlineRow, len(groups))
	for i, g := range groups {
		r := HeadlineRow{Policy: g.Label, Runs: len(g.Runs), Cells: make([]HeadlineCell, len(HeadlineMetrics))}
		for _, run := range g.Runs {
			r.Jobs += float64(run.Summary.Jobs.Total) / float64(len(g.Runs))
			r.Completed += float64(run.Summary.Jobs.Completed) / float64(len(g.Runs))
		}
		for k, m := range HeadlineMetrics {
			xs := make([]float64, len(g.Runs))
			for j, run := range g.Runs {
				xs[j] = m.Get(run.Summary)
			}
			r.Cells[k] = cellOf(xs)
		}
		rows[i] = r
	}
	for k, m := range HeadlineMetrics {
		best := math.NaN()
		for _, r := range rows {
			v := r.Cells[k].Mean
			if math.IsNaN(best) || float64(m.Better)*(v-best) > 0 {
				best = v
			}
		}
		differ := false
		for _, r := range rows {
			differ = differ || r.Cells[k].Mean != best
		}
		for i := range rows {
			rows[i].Cells[k].Best = differ && rows[i].Cells[k].Mean == best
		}
	}
	return rows
}

func cellOf(xs []float64) HeadlineCell {
	c := HeadlineCell{N: len(xs), Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		c.Mean += x / float64(len(xs))
		c.Min, c.Max = math.Min(c.Min, x), math.Max(c.Max, x)
	}
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - c.Mean) * (x - c.Mean)
		}
		c.SD = math.Sqrt(ss / float64(len(xs)-1))
	}
	return c
}

// HumanDuration formats seconds with a readable unit and 3 significant digits:
// "45.2 s", "12.5 min", "3.41 h", "2.05 d".
func HumanDuration(s float64) string {
	if math.IsNaN(s) {
		return "–"
	}
	u, div := humanUnit(s)
	return sig3(s/div) + " " + u
}

// sig3 formats x with 3 significant digits, never in exponent form.
func sig3(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	if d < 0 {
		d = 0
	}
	return strconv.FormatFloat(x, 'f', d, 64)
}

// FormatMetric formats a value of metric m in human units.
func FormatMetric(m HeadlineMetric, v float64) string {
	switch m.Unit {
	case "time":
		return HumanDuration(v)
	case "%":
		return strconv.FormatFloat(v, 'f', 1, 64) + " %"
	case "count":
		return strconv.FormatFloat(v, 'f', 0, 64)
	case "GPU-h":
		if v == 0 {
			return "0"
		}
		return sig3(v) + " GPU-h"
	case "index":
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return sig3(v)
}

// FormatCell formats a cell as "mean unit" or, with several runs, "mean ± sd
// unit", both numbers in the unit chosen for the mean.
func FormatCell(m HeadlineMetric, c HeadlineCell) string {
	if c.N <= 1 || (c.Mean == 0 && c.SD == 0) {
		return FormatMetric(m, c.Mean)
	}
	div, unit, dec := 1.0, "", -1
	switch m.Unit {
	case "time":
		var u string
		u, div = humanUnit(c.Mean)
		unit = " " + u
	case "%":
		unit, dec = " %", 1
	case "count":
		dec = 0
	case "GPU-h":
		unit = " GPU-h"
	case "index":
		dec = 3
	}
	if dec < 0 { // the mean's 3 significant digits set the decimals of both
		dec = max(0, 2-int(math.Floor(math.Log10(math.Abs(c.Mean/div)))))
	}
	return strconv.FormatFloat(c.Mean/div, 'f', dec, 64) + " ± " + strconv.FormatFloat(c.SD/div, 'f', dec, 64) + unit
}

// humanUnit is HumanDuration's unit for s: name and seconds per unit.
func humanUnit(s float64) (string, float64) {
	switch a := math.Abs(s); {
	case a >= 2*86400:
		return "d", 86400
	case a >= 2*3600:
		return "h", 3600
	case a >= 120:
		return "min", 60
	}
	return "s", 1
}

// BetterDirection says which way is better for m.
func BetterDirection(m HeadlineMetric) string {
	if m.Better > 0 {
		return "higher is better"
	}
	return "lower is better"
}

// WriteHeadlineText writes the headline table for a terminal: one row per
// policy, mean ± sd over runs when there are several, the best value of each
// column marked with '*'.
func WriteHeadlineText(w io.Writer, rows []HeadlineRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "policy\truns\tjobs\tdone\t")
	for _, m := range HeadlineMetrics {
		arrow := "↓"
		if m.Better > 0 {
			arrow = "↑"
		}
		fmt.Fprintf(tw, "%s %s\t", m.Title, arrow)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t", r.Policy, r.Runs, sig0(r.Jobs), sig0(r.Completed))
		for k, m := range HeadlineMetrics {
			s := FormatCell(m, r.Cells[k])
			if r.Cells[k].Best {
				s += "*"
			} else {
				s += " "
			}
			fmt.Fprintf(tw, "%s\t", s)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := 0
	for _, r := range rows {
		n = max(n, r.Runs)
	}
	note := "* best of its column (↓ lower is better, ↑ higher is better)"
	if n > 1 {
		note += "; mean ± standard deviation over runs (seeds)"
	}
	_, err := fmt.Fprintln(w, note)
	return err
}

func sig0(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// policyColors fixes the colour of the policies gpusim ships (Okabe-Ito and Tol
// palettes, distinguishable with common colour-vision deficiencies), so a policy
// has the same colour in every plot and every report.
var policyColors = map[string]color.RGBA{
	"fifo":                  {0x00, 0x72, 0xB2, 0xFF},
	"sjf":                   {0xE6, 0x9F, 0x00, 0xFF},
	"easy-backfill":         {0x00, 0x9E, 0x73, 0xFF},
	"conservative-backfill": {0xCC, 0x79, 0xA7, 0xFF},
	"priority":              {0x56, 0xB4, 0xE9, 0xFF},
	"kueue":                 {0xD5, 0x5E, 0x00, 0xFF},
	"volcano":               {0x88, 0x22, 0x55, 0xFF},
	"slurm":                 {0x11, 0x77, 0x33, 0xFF},
	"fgd":                   {0xAA, 0x44, 0x99, 0xFF},
	"best-fit":              {0x44, 0xAA, 0x99, 0xFF},
	"random":                {0x99, 0x99, 0x33, 0xFF},
	"dot-product":           {0x33, 0x22, 0x88, 0xFF},
	"gpu-clustering":        {0x88, 0xCC, 0xEE, 0xFF},
	"gpu-packing":           {0xDD, 0xCC, 0x77, 0xFF},
}

// otherColors are assigned to other labels by a hash of the label.
var otherColors = []color.RGBA{
	{0x66, 0x66, 0x66, 0xFF}, {0xEE, 0x66, 0x77, 0xFF}, {0x22, 0x88, 0x33, 0xFF}, {0x44, 0x77, 0xAA, 0xFF},
	{0xCC, 0xBB, 0x44, 0xFF}, {0x66, 0xCC, 0xEE, 0xFF}, {0xAA, 0x33, 0x77, 0xFF}, {0x99, 0x44, 0x55, 0xFF},
	{0x00, 0x44, 0x88, 0xFF}, {0xBB, 0x55, 0x66, 0xFF},
}

// PolicyColor is the fixed colour of a policy label in every plot: a shipped
// policy's own colour (also for labels such as "kueue @ scenario" or "seed-3/fifo"),
// otherwise a colour chosen by a hash of the label, so the same label always
// gets the same colour. While a report is written, a label whose colour an
// earlier label of the same report already has gets the next free one
// (colors.go), so no two policies of a report share a colour.
func PolicyColor(label string) color.RGBA {
	if m := reportColors.Load(); m != nil {
		if c, ok := (*m)[label]; ok {
			return c
		}
	}
	return basePolicyColor(label)
}

// basePolicyColor is PolicyColor without a report's clash resolution.
func basePolicyColor(label string) color.RGBA {
	base := label
	if i := strings.Index(base, " @ "); i >= 0 {
		base = base[:i]
	}
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	if c, ok := policyColors[base]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(base))
	return otherColors[h.Sum32()%uint32(len(otherColors))]
}
