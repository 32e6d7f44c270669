package reports

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/gpusim/gpusim/internal/csvutil"
)

// File names of a sweep output directory.
const (
	SweepCSVFile     = "sweep.csv"
	SweepParquetFile = "sweep.parquet"
	SweepMetaFile    = "sweep.json"
	SweepMDFile      = "sweep.md"
)

// SweepMetricColumns are the headline metric columns of a sweep table, after
// the point and grid columns. Integer metrics are int64 in Parquet, the rest
// double.
var SweepMetricColumns = []string{"jobs", "completed", "unfinished",
	"wait_mean_s", "wait_p50_s", "wait_p95_s", "wait_p99_s", "jct_mean_s", "jct_p50_s", "jct_p95_s", "jct_p99_s",
	"slowdown_mean", "slowdown_p99", "gpu_utilization", "makespan_s", "jain_users", "jain_queues", "preemptions"}

// sweepIntMetric marks the integer metric columns.
var sweepIntMetric = map[string]bool{"jobs": true, "completed": true, "unfinished": true, "preemptions": true}

// SweepRow is one grid point of a sweep table.
type SweepRow struct {
	Point   int64     // 0-based index in the sweep's documented order
	Params  []string  // grid coordinates as text, in SweepTable.Params order
	Metrics []float64 // SweepMetricColumns, in order
}

// SweepTable is a sweep's result table: one row per grid point, in point order.
type SweepTable struct {
	Params []string // grid coordinate columns (e.g. policy, seed, load, set paths)
	Rows   []SweepRow
}

// SweepMetrics extracts the SweepMetricColumns values of a summary.
func SweepMetrics(s *Summary) []float64 {
	return []float64{float64(s.Jobs.Total), float64(s.Jobs.Completed), float64(s.Jobs.Unfinished),
		s.WaitS.Mean, s.WaitS.P50, s.WaitS.P95, s.WaitS.P99, s.JCTS.Mean, s.JCTS.P50, s.JCTS.P95, s.JCTS.P99,
		s.Slowdown.Mean, s.Slowdown.P99, s.GPUUtilization, s.MakespanS, s.Fairness.JainUsers, s.Fairness.JainQueues,
		float64(s.Jobs.Preemptions)}
}

// Columns returns every column name: point, the params, the metrics.
func (t *SweepTable) Columns() []string {
	out := append([]string{"point"}, t.Params...)
	return append(out, SweepMetricColumns...)
}

func (t *SweepTable) schema() *arrow.Schema {
	fs := []arrow.Field{{Name: "point", Type: arrow.PrimitiveTypes.Int64}}
	for _, p := range t.Params {
		fs = append(fs, arrow.Field{Name: p, Type: arrow.BinaryTypes.String})
	}
	for _, m := range SweepMetricColumns {
		if sweepIntMetric[m] {
			fs = append(fs, arrow.Field{Name: m, Type: arrow.PrimitiveTypes.Int64})
		} else {
			fs = append(fs, arrow.Field{Name: m, Type: arrow.PrimitiveTypes.Float64})
		}
	}
	return arrow.NewSchema(fs, nil)
}

func (t *SweepTable) check() error {
	for i, r := range t.Rows {
		if len(r.Params) != len(t.Params) || len(r.Metrics) != len(SweepMetricColumns) {
			return fmt.Errorf("sweep table: row %d has %d params and %d metrics, want %d and %d",
				i, len(r.Params), len(r.Metrics), len(t.Params), len(SweepMetricColumns))
		}
	}
	return nil
}

// WriteCSV writes the table as CSV: a header and one row per point ("\n" line
// ends, numbers in the shortest round-trip format).
func (t *SweepTable) WriteCSV(w io.Writer) error {
	if err := t.check(); err != nil {
		return err
	}
	var b []byte
	for k, c := range t.Columns() {
		if k > 0 {
			b = append(b, ',')
		}
		b = csvutil.AppendField(b, c)
	}
	b = append(b, '\n')
	for _, r := range t.Rows {
		b = strconv.AppendInt(b, r.Point, 10)
		for _, p := range r.Params {
			b = append(b, ',')
			b = csvutil.AppendField(b, p)
		}
		for k, m := range r.Metrics {
			b = append(b, ',')
			if sweepIntMetric[SweepMetricColumns[k]] {
				b = strconv.AppendInt(b, int64(m), 10)
			} else {
				b = strconv.AppendFloat(b, m, 'f', -1, 64)
			}
		}
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}

// WriteParquet writes the table as Parquet (point int64, params string, metrics
// int64 or double; no timestamps: equal tables give equal bytes).
func (t *SweepTable) WriteParquet(w io.Writer) error {
	if err := t.check(); err != nil {
		return err
	}
	np := len(t.Params)
	return writeParquet(w, t.schema(), len(t.Rows), func(b *array.RecordBuilder, lo, hi int) {
		for _, r := range t.Rows[lo:hi] {
			b.Field(0).(*array.Int64Builder).Append(r.Point)
			for k, p := range r.Params {
				b.Field(1 + k).(*array.StringBuilder).Append(p)
			}
			for k, m := range r.Metrics {
				if sweepIntMetric[SweepMetricColumns[k]] {
					b.Field(1 + np + k).(*array.Int64Builder).Append(int64(m))
				} else {
					b.Field(1 + np + k).(*array.Float64Builder).Append(m)
				}
			}
		}
	})
}

// WriteMarkdown writes the table as a Markdown table under a heading.
func (t *SweepTable) WriteMarkdown(w io.Writer, title string) error {
	if err := t.check(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# gpusim sweep: %s\n\n", mdEscape(title))
	cols := t.Columns()
	b.WriteString("| " + strings.Join(cols, " | ") + " |\n|")
	for k := range cols {
		if k == 0 || k > len(t.Params) {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		cells := []string{strconv.FormatInt(r.Point, 10)}
		for _, p := range r.Params {
			cells = append(cells, mdEscape(p))
		}
		for k, m := range r.Metrics {
			if sweepIntMetric[SweepMetricColumns[k]] {
				cells = append(cells, strconv.FormatInt(int64(m), 10))
			} else {
				cells = append(cells, FormatNumber(m))
			}
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\nTimes in seconds; definitions in docs/metrics.md; columns in docs/outputs.md.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadSweepParquet reads a sweep table written by WriteParquet; params are the
// grid columns expected between point and the metrics (an error names the file
// and the first column that differs).
func ReadSweepParquet(path string, params []string) (*SweepTable, error) {
	t := &SweepTable{Params: params}
	np := len(params)
	err := readParquet(path, t.schema(), func(c []arrow.Array, i int) {
		r := SweepRow{Point: c[0].(*array.Int64).Value(i), Params: make([]string, np),
			Metrics: make([]float64, len(SweepMetricColumns))}
		for k := range params {
			r.Params[k] = c[1+k].(*array.String).Value(i)
		}
		for k, m := range SweepMetricColumns {
			if sweepIntMetric[m] {
				r.Metrics[k] = float64(c[1+np+k].(*array.Int64).Value(i))
			} else {
				r.Metrics[k] = c[1+np+k].(*array.Float64).Value(i)
			}
		}
		rows := &t.Rows
		*rows = append(*rows, r)
	})
	if err != nil {
		return nil, err
	}
	if n, err := parquetColumns(path); err == nil && n != 1+np+len(SweepMetricColumns) {
		return nil, fmt.Errorf("%s: %d columns, want %d", path, n, 1+np+len(SweepMetricColumns))
	}
	for _, r := range t.Rows {
		for _, m := range r.Metrics {
			if math.IsNaN(m) || math.IsInf(m, 0) {
				return nil, fmt.Errorf("%s: point %d: metric is not a finite number", path, r.Point)
			}
		}
	}
	return t, nil
}
