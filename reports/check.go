package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
)

// Direction says which way a metric gets worse.
type Direction int

// Directions.
const (
	HigherIsWorse Direction = iota // queue time, JCT, slowdown, makespan, unfinished jobs
	LowerIsWorse                   // utilization, completed jobs, fairness, throughput
	EitherIsWorse                  // counts with no better side (total jobs, events): any change counts
)

func (d Direction) String() string {
	switch d {
	case HigherIsWorse:
		return "higher is worse"
	case LowerIsWorse:
		return "lower is worse"
	}
	return "any change is worse"
}

// directionOf maps a summary.json field name to its direction.
var directionOf = map[string]Direction{
	"wait_s": HigherIsWorse, "jct_s": HigherIsWorse, "slowdown": HigherIsWorse,
	"makespan_s": HigherIsWorse, "end_s": HigherIsWorse, "wall_seconds": HigherIsWorse,
	"unfinished": HigherIsWorse, "running": HigherIsWorse, "pending": HigherIsWorse,
	"never_started": HigherIsWorse, "killed": HigherIsWorse, "timeout": HigherIsWorse,
	"preemptions": HigherIsWorse, "wasted_gpu_hours": HigherIsWorse, "requeue_delay_s": HigherIsWorse, "cost": HigherIsWorse,
	"gpu_utilization": LowerIsWorse, "completed": LowerIsWorse, "fairness": LowerIsWorse,
	"jain_users": LowerIsWorse, "jain_queues": LowerIsWorse, "events_per_second": LowerIsWorse,
}

// MetricDirection returns the direction of a dotted metric path: that of the
// deepest path element with a known direction (wait_s.p99 -> wait_s: higher is
// worse; classes.training.completed -> completed: lower is worse), else
// EitherIsWorse.
func MetricDirection(path string) Direction {
	parts := strings.Split(path, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		if d, ok := directionOf[parts[i]]; ok {
			return d
		}
	}
	return EitherIsWorse
}

// DefaultTolerances are the gates `gpusim check` applies when no
// --max-regression is given: 5% relative on the headline metrics.
const DefaultTolerances = "wait_s.mean=0.05,wait_s.p99=0.05,jct_s.mean=0.05,jct_s.p99=0.05," +
	"slowdown.mean=0.05,gpu_utilization=0.05,makespan_s=0.05,jobs.completed=0.05,jobs.unfinished=0.05"

// Tolerance is a relative regression limit on one metric: Limit 0.05 allows the
// metric to get 5% worse than the baseline.
type Tolerance struct {
	Metric string
	Limit  float64
}

// ParseTolerances parses "path=limit,path=limit,..." (limits are fractions >= 0,
// e.g. 0.05 for 5%; a trailing % is accepted: "5%"). Errors quote the bad item.
func ParseTolerances(s string) ([]Tolerance, error) {
	var out []Tolerance
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("tolerance %q: want metric=limit (e.g. wait_s.p99=0.05)", item)
		}
		scale := 1.0
		if strings.HasSuffix(v, "%") {
			v, scale = strings.TrimSuffix(v, "%"), 0.01
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return nil, fmt.Errorf("tolerance %q: limit must be a number >= 0", item)
		}
		if seen[k] {
			return nil, fmt.Errorf("tolerance %q: metric %s given twice", item, k)
		}
		seen[k] = true
		out = append(out, Tolerance{Metric: k, Limit: x * scale})
	}
	if len(out) == 0 {
		return nil, errors.New("no tolerances given")
	}
	return out, nil
}

// Doc is a summary.json decoded generically, for lookups by dotted path.
type Doc struct {
	Name string // file name, for errors
	root map[string]any
}

// ReadDoc reads a summary.json as a Doc. path may also be a run directory (its
// summary.json is read). Errors name the file.
func ReadDoc(path string) (*Doc, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if err := CheckSummaryDir(path); err != nil {
			return nil, err
		}
		path = filepath.Join(path, SummaryFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	return ParseDoc(path, b)
}

// ParseDoc decodes summary JSON text; name is used in errors.
func ParseDoc(name string, b []byte) (*Doc, error) {
	if _, err := ParseSummary(name, b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("%s: invalid summary JSON: %w", name, err)
	}
	return &Doc{Name: name, root: root}, nil
}

// Lookup returns the number at a dotted path (e.g. classes.training.wait_s.p95).
// Map keys that contain dots (queue names) are matched whole. The error names the
// file and lists the keys available where the path stopped matching.
func (d *Doc) Lookup(path string) (float64, error) {
	if path == "" {
		return 0, fmt.Errorf("%s: empty metric path", d.Name)
	}
	v, ok := lookup(d.root, strings.Split(path, "."))
	if !ok {
		return 0, fmt.Errorf("%s: unknown metric %q%s", d.Name, path, d.hint(path))
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, fmt.Errorf("%s: metric %q is not a number (is it a section? try %s.<field>)", d.Name, path, path)
	}
	x, err := n.Float64()
	if err != nil {
		return 0, fmt.Errorf("%s: metric %q: %w", d.Name, path, err)
	}
	return x, nil
}

func lookup(v any, parts []string) (any, bool) {
	if len(parts) == 0 {
		return v, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	for k := len(parts); k >= 1; k-- {
		if child, ok := m[strings.Join(parts[:k], ".")]; ok {
			if r, ok := lookup(child, parts[k:]); ok {
				return r, true
			}
		}
	}
	return nil, false
}

// hint lists the keys at the deepest matching prefix of path.
func (d *Doc) hint(path string) string {
	var cur any = d.root
	parts := strings.Split(path, ".")
	for _, p := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			break
		}
		next, ok := m[p]
		if !ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return " (known here: " + strings.Join(keys, ", ") + ")"
		}
		cur = next
	}
	return ""
}

// Verdicts.
const (
	VerdictOK         = "ok"
	VerdictImproved   = "improved"
	VerdictRegression = "REGRESSION"
)

// CheckRow is one line of a check table.
type CheckRow struct {
	Metric    string
	Direction Direction
	Baseline  float64
	Current   float64
	// Change is (current - baseline) / |baseline|; +/-Inf when the baseline is 0
	// and the current value is not.
	Change  float64
	Limit   float64 // relative tolerance
	Verdict string
}

// Regressed reports whether any row is a regression.
func Regressed(rows []CheckRow) bool {
	for _, r := range rows {
		if r.Verdict == VerdictRegression {
			return true
		}
	}
	return false
}

// Compare checks current against baseline under relative tolerances. A metric
// regresses when it moves in its worse direction by more than its limit relative
// to the baseline (for EitherIsWorse, in either direction). With a zero baseline,
// any worsening is a regression. An unknown metric path is an error naming the
// file.
func Compare(base, cur *Doc, tols []Tolerance) ([]CheckRow, error) {
	rows := make([]CheckRow, 0, len(tols))
	for _, t := range tols {
		b, err := base.Lookup(t.Metric)
		if err != nil {
			return nil, err
		}
		c, err := cur.Lookup(t.Metric)
		if err != nil {
			return nil, err
		}
		r := CheckRow{Metric: t.Metric, Direction: MetricDirection(t.Metric), Baseline: b, Current: c, Limit: t.Limit}
		switch {
		case c == b:
			r.Change = 0
		case b == 0:
			r.Change = math.Inf(1)
			if c < 0 {
				r.Change = math.Inf(-1)
			}
		default:
			r.Change = (c - b) / math.Abs(b)
		}
		worse := r.Change
		switch r.Direction {
		case LowerIsWorse:
			worse = -r.Change
		case EitherIsWorse:
			worse = math.Abs(r.Change)
		}
		// A small epsilon keeps a change of exactly the limit (after the
		// summary's 6-decimal rounding) within tolerance.
		switch {
		case worse > t.Limit+1e-9:
			r.Verdict = VerdictRegression
		case worse < 0:
			r.Verdict = VerdictImproved
		default:
			r.Verdict = VerdictOK
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// FormatNumber formats a metric value for tables: shortest decimal, no exponent.
func FormatNumber(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func formatChange(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "+inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return fmt.Sprintf("%+.2f%%", 100*x)
}

func formatLimit(d Direction, l float64) string {
	switch d {
	case HigherIsWorse:
		return fmt.Sprintf("+%.2f%%", 100*l)
	case LowerIsWorse:
		return fmt.Sprintf("-%.2f%%", 100*l)
	}
	return fmt.Sprintf("±%.2f%%", 100*l)
}

// WriteCheckTable writes rows as an aligned text table: metric, baseline, current,
// change %, limit (signed in the worse direction) and verdict.
func WriteCheckTable(w io.Writer, rows []CheckRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tBASELINE\tCURRENT\tCHANGE\tLIMIT\tVERDICT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Metric, FormatNumber(r.Baseline), FormatNumber(r.Current),
			formatChange(r.Change), formatLimit(r.Direction, r.Limit), r.Verdict)
	}
	return tw.Flush()
}

// RangeSpec is an absolute-bounds gate (like Kueue's performance-harness range
// spec):
//
//	apiVersion: gpusim/v1alpha1
//	kind: RangeSpec
//	metrics:
//	  wait_s.p99: {max: 3600}
//	  gpu_utilization: {min: 0.7}
type RangeSpec struct {
	APIVersion string           `yaml:"apiVersion"`
	Kind       string           `yaml:"kind"`
	Metrics    map[string]Range `yaml:"metrics"`

	lines map[string]int // metric -> line in the file
	name  string
}

// Range bounds one metric; a nil bound is open.
type Range struct {
	Min *float64 `yaml:"min"`
	Max *float64 `yaml:"max"`
}

// RangeSpec identity.
const (
	RangeSpecAPIVersion = "gpusim/v1alpha1"
	RangeSpecKind       = "RangeSpec"
)

// ReadRangeSpec reads and validates a range spec file (strict: unknown fields
// are errors). Errors name the file and line.
func ReadRangeSpec(path string) (*RangeSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read range spec: %w", err)
	}
	return ParseRangeSpec(path, b)
}

// ParseRangeSpec decodes range spec YAML; name is used in errors.
func ParseRangeSpec(name string, b []byte) (*RangeSpec, error) {
	var rs RangeSpec
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rs); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: empty range spec", name)
		}
		var doc yaml.Node // for field paths
		_ = yaml.Unmarshal(b, &doc)
		return nil, yamlmsg.FileError(name, &doc, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, fmt.Errorf("%s: more than one YAML document", name)
	}
	rs.name = name
	rs.lines = map[string]int{}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err == nil && len(root.Content) == 1 {
		top := root.Content[0]
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value == "metrics" {
				m := top.Content[i+1]
				for k := 0; k+1 < len(m.Content); k += 2 {
					rs.lines[m.Content[k].Value] = m.Content[k].Line
				}
			}
		}
	}
	var errs []string
	if rs.APIVersion != RangeSpecAPIVersion {
		errs = append(errs, fmt.Sprintf("%s: apiVersion: got %q, want %q", name, rs.APIVersion, RangeSpecAPIVersion))
	}
	if rs.Kind != RangeSpecKind {
		errs = append(errs, fmt.Sprintf("%s: kind: got %q, want %q", name, rs.Kind, RangeSpecKind))
	}
	if len(rs.Metrics) == 0 {
		errs = append(errs, fmt.Sprintf("%s: metrics: at least one metric is required", name))
	}
	for _, m := range rs.MetricNames() {
		r := rs.Metrics[m]
		switch {
		case r.Min == nil && r.Max == nil:
			errs = append(errs, fmt.Sprintf("%s: metrics.%s: set min, max or both", rs.where(m), m))
		case r.Min != nil && r.Max != nil && *r.Min > *r.Max:
			errs = append(errs, fmt.Sprintf("%s: metrics.%s: min %v > max %v", rs.where(m), m, *r.Min, *r.Max))
		}
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	return &rs, nil
}

func (rs *RangeSpec) where(metric string) string {
	if l, ok := rs.lines[metric]; ok {
		return fmt.Sprintf("%s:%d", rs.name, l)
	}
	return rs.name
}

// MetricNames returns the spec's metric paths, sorted.
func (rs *RangeSpec) MetricNames() []string {
	out := make([]string, 0, len(rs.Metrics))
	for m := range rs.Metrics {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// RangeRow is one line of a range check.
type RangeRow struct {
	Metric   string
	Current  float64
	Min, Max *float64
	Verdict  string // ok or REGRESSION (out of range)
}

// CheckRanges checks cur against the spec's bounds (inclusive), in sorted metric
// order. An unknown metric path is an error naming the spec line and the summary.
func CheckRanges(rs *RangeSpec, cur *Doc) ([]RangeRow, error) {
	var rows []RangeRow
	for _, m := range rs.MetricNames() {
		r := rs.Metrics[m]
		x, err := cur.Lookup(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rs.where(m), err)
		}
		row := RangeRow{Metric: m, Current: x, Min: r.Min, Max: r.Max, Verdict: VerdictOK}
		if r.Min != nil && x < *r.Min || r.Max != nil && x > *r.Max {
			row.Verdict = VerdictRegression
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// RangeRegressed reports whether any metric is out of range.
func RangeRegressed(rows []RangeRow) bool {
	for _, r := range rows {
		if r.Verdict == VerdictRegression {
			return true
		}
	}
	return false
}

// WriteRangeTable writes range rows as an aligned table: metric, current, min,
// max, verdict ("-" for an open bound).
func WriteRangeTable(w io.Writer, rows []RangeRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tCURRENT\tMIN\tMAX\tVERDICT")
	b := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return FormatNumber(*p)
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Metric, FormatNumber(r.Current), b(r.Min), b(r.Max), r.Verdict)
	}
	return tw.Flush()
}
