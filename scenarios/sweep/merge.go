package sweep

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/reports"
)

// WriteOutputs writes a sweep table into dir (created if missing), each file
// atomically: sweep.csv, sweep.parquet, sweep.json (meta), sweep.md and, when
// the grid has a numeric axis, sweep.png and sweep.svg (reports.SweepTable.Figure).
func WriteOutputs(dir string, t *reports.SweepTable, m *Meta) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, reports.SweepCSVFile), t.WriteCSV); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, reports.SweepParquetFile), t.WriteParquet); err != nil {
		return err
	}
	title := m.Name
	if m.Shard != "0/1" {
		title += fmt.Sprintf(" (shard %s: %d of %d points)", m.Shard, m.Rows, m.Points)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, reports.SweepMDFile), func(w io.Writer) error {
		return t.WriteMarkdown(w, title)
	}); err != nil {
		return err
	}
	if f := t.Figure(m.Name); f != nil {
		for _, format := range []string{"png", "svg"} {
			b, err := f.Render(format)
			if err != nil {
				return err
			}
			if err := fsutil.WriteBytesAtomic(filepath.Join(dir, f.Name+"."+format), b); err != nil {
				return err
			}
		}
	}
	b, err := MarshalMeta(m)
	if err != nil {
		return err
	}
	return fsutil.WriteBytesAtomic(filepath.Join(dir, reports.SweepMetaFile), b)
}

// RunDirs lists the per-point run directories below a sweep output directory
// (runs/point-*/<policy>), in point order; nil when it has none.
func RunDirs(dir string, t *reports.SweepTable) []string {
	var out []string
	runs := filepath.Join(dir, "runs")
	ents, err := os.ReadDir(runs)
	if err != nil {
		return nil
	}
	byPoint := map[int64]string{}
	for _, e := range ents {
		var k int64
		if _, err := fmt.Sscanf(e.Name(), "point-%d", &k); err == nil && e.IsDir() {
			byPoint[k] = filepath.Join(runs, e.Name())
		}
	}
	for _, r := range t.Rows {
		pd, ok := byPoint[r.Point]
		if !ok {
			continue
		}
		sub, err := os.ReadDir(pd)
		if err != nil {
			continue
		}
		for _, s := range sub {
			if _, err := os.Stat(filepath.Join(pd, s.Name(), reports.SummaryFile)); err == nil && s.IsDir() {
				out = append(out, filepath.Join(pd, s.Name()))
			}
		}
	}
	return out
}

// Merge combines the (partial) tables of sweep output directories: they must
// come from the same sweep file (sweep_sha256), cover every point exactly once
// between them, and agree on the columns. It returns the whole table in point
// order, its meta (shard "0/1") and the run directories of the parts (in point
// order; nil unless every part saved them). Errors name the directory.
func Merge(dirs []string) (*reports.SweepTable, *Meta, []string, error) {
	if len(dirs) == 0 {
		return nil, nil, nil, fmt.Errorf("merge: no directories given")
	}
	var first *Meta
	all := &reports.SweepTable{}
	from := map[int64]string{}
	runs := true
	var runDirs []string
	for _, d := range dirs {
		m, err := ReadMeta(filepath.Join(d, reports.SweepMetaFile))
		if err != nil {
			return nil, nil, nil, err
		}
		if first == nil {
			first = m
			all.Params = m.Columns
		} else if m.SweepSHA256 != first.SweepSHA256 || m.Points != first.Points || !slices.Equal(m.Columns, first.Columns) {
			return nil, nil, nil, fmt.Errorf("%s: from a different sweep than %s (sweep_sha256, points or columns differ)", d, dirs[0])
		}
		t, err := reports.ReadSweepParquet(filepath.Join(d, reports.SweepParquetFile), m.Columns)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(t.Rows) != m.Rows {
			return nil, nil, nil, fmt.Errorf("%s: %s has %d rows, sweep.json says %d", d, reports.SweepParquetFile, len(t.Rows), m.Rows)
		}
		for _, r := range t.Rows {
			if r.Point < 0 || r.Point >= int64(m.Points) {
				return nil, nil, nil, fmt.Errorf("%s: point %d out of range [0, %d)", d, r.Point, m.Points)
			}
			if prev, dup := from[r.Point]; dup {
				return nil, nil, nil, fmt.Errorf("%s: point %d is also in %s", d, r.Point, prev)
			}
			from[r.Point] = d
			all.Rows = append(all.Rows, r)
		}
		if m.Runs {
			runDirs = append(runDirs, RunDirs(d, t)...)
		} else {
			runs = false
		}
	}
	if len(all.Rows) != first.Points {
		var missing []string
		for k := 0; k < first.Points && len(missing) < 10; k++ {
			if _, ok := from[int64(k)]; !ok {
				missing = append(missing, fmt.Sprint(k))
			}
		}
		return nil, nil, nil, fmt.Errorf("merge: %d of %d points missing (e.g. %s): give every shard's directory",
			first.Points-len(all.Rows), first.Points, strings.Join(missing, ", "))
	}
	slices.SortFunc(all.Rows, func(a, b reports.SweepRow) int {
		switch {
		case a.Point < b.Point:
			return -1
		case a.Point > b.Point:
			return 1
		}
		return 0
	})
	m := *first
	m.Shard, m.Rows, m.Runs = "0/1", first.Points, false // the merged directory holds no runs/
	if !runs {
		runDirs = nil
	} else {
		// point order across parts
		slices.SortStableFunc(runDirs, func(a, b string) int {
			return pointOf(a) - pointOf(b)
		})
	}
	return all, &m, runDirs, nil
}

func pointOf(runDir string) int {
	var k int
	fmt.Sscanf(filepath.Base(filepath.Dir(runDir)), "point-%d", &k)
	return k
}
