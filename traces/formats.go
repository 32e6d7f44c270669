package traces

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/workloads"
)

// FormatNative is the name of gpusim's own job format.
const FormatNative = "native"

// ReadOptions tunes how a trace is read. The zero value is the default.
type ReadOptions struct {
	// Strict makes every row an importer would skip (with a counted reason) an
	// error instead. The native format is always strict.
	Strict bool
	// AllowDuplicateIDs turns off the duplicate-job-ID check, which otherwise keeps
	// a 128-bit hash per job (the only per-job memory of a streaming read).
	AllowDuplicateIDs bool
	// Throughputs and ThroughputRef (a GPU type index of the table) turn work in
	// steps into reference-GPU time for formats that give steps (gavel).
	Throughputs   *workloads.ThroughputTable
	ThroughputRef int
	// NodeGPUs is the GPUs of a full node for a TraceSource with shape split and
	// no nodeGPUs of its own (scenarios set it to the cluster's largest node).
	NodeGPUs int32
}

// JobReader streams a job trace. Next returns io.EOF after the last job; a bad row
// is returned as a *RowError, and once Next has returned an error it returns that
// error again. Report describes the rows read so far. Close releases the file and
// stops any parsing goroutines; it must be called. Jobs may share their GPUModels
// slices: do not modify them.
type JobReader interface {
	Next() (sim.JobSpec, error)
	Report() *ImportReport
	Close() error
}

type jobFormat struct {
	doc  string
	open func(path string, opts ReadOptions) (JobReader, error)
}

type nodeFormat struct {
	doc  string
	read func(path string, opts ReadOptions) ([]sim.NodeSpec, *ImportReport, error)
}

var (
	jobFormats  = map[string]jobFormat{}
	nodeFormats = map[string]nodeFormat{}
)

func registerJobs(name, doc string, open func(string, ReadOptions) (JobReader, error)) {
	jobFormats[name] = jobFormat{doc: doc, open: open}
}

func registerNodes(name, doc string, read func(string, ReadOptions) ([]sim.NodeSpec, *ImportReport, error)) {
	nodeFormats[name] = nodeFormat{doc: doc, read: read}
}

func init() {
	registerJobs(FormatNative, "gpusim native job trace (CSV, or Parquet for *.parquet)", openNative)
}

// IsParquet reports whether path names a Parquet file (by its extension).
func IsParquet(path string) bool {
	return strings.EqualFold(filepath.Ext(path), ".parquet")
}

func openNative(path string, opts ReadOptions) (JobReader, error) {
	if IsParquet(path) {
		return openNativeParquet(path, opts)
	}
	return openNativeCSV(path, opts)
}

// JobFormats returns the names of the job-trace formats, sorted.
func JobFormats() []string { return slices.Sorted(maps.Keys(jobFormats)) }

// NodeFormats returns the names of the node-list formats, sorted.
func NodeFormats() []string { return slices.Sorted(maps.Keys(nodeFormats)) }

// FormatDoc returns a one-line description of a job or node format ("" if unknown).
func FormatDoc(name string) string {
	if f, ok := jobFormats[name]; ok {
		return f.doc
	}
	if f, ok := nodeFormats[name]; ok {
		return f.doc
	}
	return ""
}

// ErrUnknownFormat is wrapped by errors about a format name that is not registered.
var ErrUnknownFormat = errors.New("unknown trace format")

// OpenJobs streams a job trace of the given format with default options.
func OpenJobs(format, path string) (JobReader, error) {
	return OpenJobsWith(format, path, ReadOptions{})
}

// OpenJobsWith streams a job trace of the given format.
func OpenJobsWith(format, path string, opts ReadOptions) (JobReader, error) {
	f, ok := jobFormats[format]
	if !ok {
		return nil, fmt.Errorf("%w %q (job formats: %s)", ErrUnknownFormat, format, strings.Join(JobFormats(), ", "))
	}
	r, err := f.open(path, opts)
	if err != nil {
		return nil, err
	}
	return &stickyReader{JobReader: r}, nil
}

// stickyReader repeats the first error of Next (io.EOF included).
type stickyReader struct {
	JobReader
	err error
}

// rowsHinter is a JobReader that can bound cheaply the rows it will return (0
// when it cannot), so a caller can size the result once.
type rowsHinter interface{ rowsHint() int }

func (s *stickyReader) rowsHint() int {
	if h, ok := s.JobReader.(rowsHinter); ok {
		return h.rowsHint()
	}
	return 0
}

func (s *stickyReader) Next() (sim.JobSpec, error) {
	if s.err != nil {
		return sim.JobSpec{}, s.err
	}
	j, err := s.JobReader.Next()
	if err != nil {
		s.err = err
	}
	return j, err
}

// ReadJobs reads a whole job trace of the given format with default options. For
// the native format any bad row is an error; importers of public traces may skip
// rows, counting the reasons in the report.
func ReadJobs(format, path string) ([]sim.JobSpec, *ImportReport, error) {
	return ReadJobsWith(format, path, ReadOptions{})
}

// ReadJobsWith reads a whole job trace of the given format.
func ReadJobsWith(format, path string, opts ReadOptions) ([]sim.JobSpec, *ImportReport, error) {
	r, err := OpenJobsWith(format, path, opts)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var jobs []sim.JobSpec
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, r.Report(), err
		}
		jobs = append(jobs, j)
	}
	return jobs, r.Report(), r.Close()
}

// ReadNodes reads a node/machine list of the given format into cluster nodes, in
// file order.
func ReadNodes(format, path string) ([]sim.NodeSpec, error) {
	nodes, _, err := ReadNodesWith(format, path, ReadOptions{})
	return nodes, err
}

// ReadNodesWith reads a node list and also returns the import report.
func ReadNodesWith(format, path string, opts ReadOptions) ([]sim.NodeSpec, *ImportReport, error) {
	f, ok := nodeFormats[format]
	if !ok {
		return nil, nil, fmt.Errorf("%w %q (node formats: %s)", ErrUnknownFormat, format, strings.Join(NodeFormats(), ", "))
	}
	return f.read(path, opts)
}

// SliceReader returns a JobReader over jobs (its report counts them as imported).
func SliceReader(jobs []sim.JobSpec) JobReader {
	return &sliceReader{jobs: jobs, rep: newReport("", "memory")}
}

type sliceReader struct {
	jobs []sim.JobSpec
	i    int
	rep  *ImportReport
}

func (s *sliceReader) Next() (sim.JobSpec, error) {
	if s.i >= len(s.jobs) {
		return sim.JobSpec{}, io.EOF
	}
	s.i++
	s.rep.Rows++
	s.rep.Imported++
	return s.jobs[s.i-1], nil
}
func (s *sliceReader) Report() *ImportReport { return s.rep }
func (s *sliceReader) Close() error          { return nil }

// WriteNativeFile streams every job of src into a native trace at path (Parquet if
// path ends in ".parquet", else CSV), atomically: on error path is left untouched.
// It returns the number of jobs written.
func WriteNativeFile(path string, src JobReader) (int, error) {
	n := 0
	err := fsutil.WriteFileAtomic(path, func(w io.Writer) error {
		var dst JobWriter
		if IsParquet(path) {
			p, err := NewNativeParquetWriter(w)
			if err != nil {
				return err
			}
			dst = p
		} else {
			dst = NewNativeCSVWriter(w)
		}
		var err error
		n, err = CopyJobs(dst, src)
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		return err
	})
	return n, err
}

// ConvertFile streams the trace at in (of format) into a native trace at out.
func ConvertFile(format, in, out string, opts ReadOptions) (*ImportReport, error) {
	r, err := OpenJobsWith(format, in, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := WriteNativeFile(out, r); err != nil {
		return r.Report(), err
	}
	return r.Report(), nil
}
