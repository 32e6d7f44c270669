package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	err := runTasks([]func() error{
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
		files(EventsFile, func(w io.Writer) error { return writeEventsParquetColumns(w, res) }),
		files(JobsFile, func(w io.Writer) error { return writeJobsParquetOf(w, res) }),
	})
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
