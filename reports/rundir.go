package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/sim"
)

// File names inside a run directory.
const (
	SummaryFile    = "summary.json"
	JobsCSVFile    = "jobs.csv"
	JobsFile       = "jobs.parquet"
	TimeseriesFile = "timeseries.parquet"
	EventsFile     = "events.parquet"
)

// WriteRunDir writes jobs.csv, timeseries.parquet, events.parquet and
// jobs.parquet into dir (created if missing), concurrently and each atomically,
// then summary.json, so a directory with a summary.json has all its files. Job
// rows are derived and written a chunk at a time (no file is built whole in
// memory). Equal inputs give byte-identical files whatever the scheduling. A nil
// result or summary is an error; with several failures the error of the first
// file in the order above is returned.
func WriteRunDir(dir string, res *sim.Result, s *Summary) error {
	if s == nil {
		return errors.New("write run dir: nil result or summary")
	}
	_, err := WriteRunDirFunc(dir, res, func() *Summary { return s })
	return err
}

// WriteRunDirFunc is WriteRunDir with the summary computed by summarize while the
// data files are written (on the same bounded set of goroutines, summarize
// first); it returns that summary. summarize must not write to res.
func WriteRunDirFunc(dir string, res *sim.Result, summarize func() *Summary) (*Summary, error) {
	return writeRunDir(dir, res, summarize, nil)
}

// WriteRunDirFuncStreamed is WriteRunDirFunc for a run whose events.parquet is
// being written into dir by the caller while it ran (WriteEventsFeed): it writes
// every other file, then waits for events (its error fails the write), and
// writes summary.json last.
func WriteRunDirFuncStreamed(dir string, res *sim.Result, summarize func() *Summary, events func() error) (*Summary, error) {
	if events == nil {
		return nil, errors.New("write run dir: nil events writer")
	}
	return writeRunDir(dir, res, summarize, events)
}

// writeRunDir writes the run directory; events.parquet too when events is nil,
// else events is waited for before summary.json.
func writeRunDir(dir string, res *sim.Result, summarize func() *Summary, events func() error) (*Summary, error) {
	if res == nil || summarize == nil {
		return nil, errors.New("write run dir: nil result or summary")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	var s *Summary
	var js []byte
	files := func(name string, write func(w io.Writer) error) func() error {
		return func() error { return fsutil.WriteFileAtomic(filepath.Join(dir, name), write) }
	}
	tasks := []func() error{
		func() (err error) {
			if s = summarize(); s == nil {
				return errors.New("write run dir: nil result or summary")
			}
			js, err = MarshalSummary(s)
			return err
		},
		// Light tasks first, so the summary overlaps them rather than the
		// row-group buffers of jobs.parquet (the largest writer).
		files(JobsCSVFile, func(w io.Writer) error { return writeJobsCSVOf(w, res) }),
		files(TimeseriesFile, func(w io.Writer) error { return WriteTimeseriesParquet(w, res) }),
		files(JobsFile, func(w io.Writer) error { return writeJobsParquetOf(w, res) }),
	}
	if events == nil {
		tasks = slices.Insert(tasks, 3, files(EventsFile, func(w io.Writer) error { return writeEventsParquetColumns(w, res) }))
	} else {
		// events.parquet was written while the run went on: jobs.parquet, the
		// longest task left, goes first so the others overlap it, and the
		// summary last, so that its buffers are not held beside jobs.csv's (1M
		// jobs: 3.6-3.8 s wall instead of 4.4-4.9 s, peak RSS ~950-975 MiB).
		tasks = []func() error{tasks[3], tasks[1], tasks[2], tasks[0]}
	}
	if res.Serving != nil {
		tasks = append(tasks, files(ServingFile, func(w io.Writer) error { return WriteServingCSV(w, res) }),
			files(ServingP99File, func(w io.Writer) error { return WriteServingP99CSV(w, res) }))
	}
	if (res.Power != nil || res.Failures != nil) && len(res.Phys) > 0 {
		tasks = append(tasks, files(PhysicalFile, func(w io.Writer) error { return WritePhysicalCSV(w, res) }))
	}
	if res.DAG != nil {
		tasks = append(tasks, files(DAGJobsFile, func(w io.Writer) error { return WriteDAGJobsCSV(w, res) }),
			files(WorkflowsFile, func(w io.Writer) error { return WriteWorkflowsCSV(w, res) }))
	}
	if res.Elastic != nil {
		tasks = append(tasks, files(ElasticFile, func(w io.Writer) error { return WriteElasticCSV(w, res) }))
	}
	err := runTasks(tasks)
	if events != nil {
		if eerr := events(); err == nil {
			err = eerr
		}
	}
	if err != nil {
		return nil, err
	}
	return s, fsutil.WriteBytesAtomic(filepath.Join(dir, SummaryFile), js)
}

// Run is a run directory read back.
type Run struct {
	Dir        string
	Summary    *Summary
	Jobs       []JobRow
	Timeseries []SampleRow
	Events     []EventRow // nil unless requested
	// Physical is physical.csv (nil without it: no power or failure model).
	Physical *Physical
}

// ReadRunDir reads a run directory written by WriteRunDir: summary.json,
// jobs.parquet (or jobs.csv when the Parquet file is missing), timeseries.parquet
// (optional) and, when withEvents, events.parquet (optional). Errors name the file.
func ReadRunDir(dir string, withEvents bool) (*Run, error) {
	r := &Run{Dir: dir}
	var err error
	if r.Summary, err = ReadSummary(filepath.Join(dir, SummaryFile)); err != nil {
		return nil, err
	}
	jp := filepath.Join(dir, JobsFile)
	if _, statErr := os.Stat(jp); statErr == nil {
		if r.Jobs, err = ReadJobsParquet(jp); err != nil {
			return nil, err
		}
	} else {
		cp := filepath.Join(dir, JobsCSVFile)
		b, err := os.ReadFile(cp)
		if err != nil {
			return nil, fmt.Errorf("read jobs: %w", err)
		}
		if r.Jobs, err = ParseJobsCSV(cp, bytes.NewReader(b)); err != nil {
			return nil, err
		}
	}
	tp := filepath.Join(dir, TimeseriesFile)
	if _, statErr := os.Stat(tp); statErr == nil {
		if r.Timeseries, err = ReadTimeseriesParquet(tp); err != nil {
			return nil, err
		}
	}
	if pp := filepath.Join(dir, PhysicalFile); fileExists(pp) {
		if r.Physical, err = ReadPhysicalCSV(pp); err != nil {
			return nil, err
		}
	}
	if withEvents {
		ep := filepath.Join(dir, EventsFile)
		if _, statErr := os.Stat(ep); statErr == nil {
			if r.Events, err = ReadEventsParquet(ep); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// StartEventsFeed starts writing dir/events.parquet (atomically) from feed on a
// goroutine, while the engine that feeds it runs, and returns the function
// that waits for it and returns its error (sim.ErrRunAborted when the run
// failed; then no file is left). Pass it to WriteRunDirFuncStreamed, or call it
// after a failed run so the goroutine is not left behind.
func StartEventsFeed(dir string, feed *sim.LogFeed) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		done <- fsutil.WriteFileAtomic(filepath.Join(dir, EventsFile), func(w io.Writer) error { return WriteEventsFeed(w, feed) })
	}()
	var err error
	var waited bool
	return func() error {
		if !waited {
			err, waited = <-done, true
		}
		return err
	}
}
