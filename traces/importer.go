package traces

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// skipError marks a row an importer skips (counted in the ImportReport under
// "COLUMN: REASON", or "REASON" when no column) unless ReadOptions.Strict is set, in
// which case it becomes a *RowError.
type skipError struct {
	Column string
	Reason string // short, countable (no row-specific values)
	Detail string // row-specific detail for the strict error
}

func (s *skipError) Error() string {
	if s.Detail != "" {
		return s.Reason + ": " + s.Detail
	}
	return s.Reason
}

func (s *skipError) key() string {
	if s.Column != "" {
		return s.Column + ": " + s.Reason
	}
	return s.Reason
}

func skipf(col, reason, format string, args ...any) *skipError {
	return &skipError{Column: col, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// rowParser turns the current record of in into a job. It returns a *skipError for
// a row to skip and any other error to stop.
type rowParser func(in *csvIn, line int) (sim.JobSpec, error)

// csvJobReader is the common streaming loop of the CSV importers.
type csvJobReader struct {
	in    *csvIn
	rep   *ImportReport
	opts  ReadOptions
	dups  *dupSet
	parse rowParser
}

// openCSVImporter opens path, checks the required columns and returns a reader
// running parse on every row.
func openCSVImporter(path, format string, comma rune, opts ReadOptions, required []string, setup func(in *csvIn, rep *ImportReport) (rowParser, error)) (JobReader, error) {
	in, err := openCSV(path, comma)
	if err != nil {
		return nil, err
	}
	in.lenient = true
	if err := in.requireCols(required...); err != nil {
		in.close()
		return nil, err
	}
	r := &csvJobReader{in: in, rep: newReport(path, format), opts: opts}
	if r.parse, err = setup(in, r.rep); err != nil {
		in.close()
		return nil, err
	}
	if !opts.AllowDuplicateIDs {
		r.dups = newDupSet()
	}
	return r, nil
}

func (r *csvJobReader) Next() (sim.JobSpec, error) {
	for {
		err := r.in.next()
		if err == io.EOF {
			return sim.JobSpec{}, io.EOF
		}
		var j sim.JobSpec
		if err == nil {
			r.rep.Rows++
			j, err = r.parse(r.in, r.in.line)
		} else if _, ok := err.(*skipError); ok {
			r.rep.Rows++
		}
		if err == nil {
			if col, msg := checkLimits(&j); col != "" {
				err = &skipError{Reason: "value out of range", Detail: col + ": " + msg}
			} else if verr := j.Validate(); verr != nil {
				err = &skipError{Reason: "invalid job", Detail: verr.Error()}
			}
		}
		var se *skipError
		if errors.As(err, &se) {
			if r.opts.Strict {
				return sim.JobSpec{}, &RowError{File: r.in.file, Line: r.in.line, Column: se.Column, Err: se}
			}
			r.rep.skip(se.key(), r.in.line)
			continue
		}
		if err != nil {
			return sim.JobSpec{}, err
		}
		if r.dups != nil {
			if prev, dup := r.dups.add(j.ID, r.in.line); dup {
				se := skipf("", "duplicate job id", "%q (first on line %d)", j.ID, prev)
				if r.opts.Strict {
					return sim.JobSpec{}, &RowError{File: r.in.file, Line: r.in.line, Err: se}
				}
				r.rep.skip(se.key(), r.in.line)
				continue
			}
		}
		r.rep.Imported++
		return j, nil
	}
}

func (r *csvJobReader) Report() *ImportReport { return r.rep }
func (r *csvJobReader) Close() error          { return r.in.close() }

// Field helpers for importers: they return a *skipError naming the column.

// reqStr returns the trimmed value of column col or a skip when it is empty.
func reqStr(in *csvIn, col string) (string, error) {
	s := in.get(in.col(col))
	if s == "" {
		return "", &skipError{Column: col, Reason: "missing value"}
	}
	return s, nil
}

// optNum parses column col as a number; ok is false when absent or empty.
func optNum(in *csvIn, col string) (v float64, ok bool, err error) {
	s := in.get(in.col(col))
	if s == "" {
		return 0, false, nil
	}
	v, err = parseNum(s)
	if err != nil {
		return 0, true, &skipError{Column: col, Reason: "bad number", Detail: fmt.Sprintf("%q", s)}
	}
	return v, true, nil
}

// reqNum parses a required number.
func reqNum(in *csvIn, col string) (float64, error) {
	v, ok, err := optNum(in, col)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, &skipError{Column: col, Reason: "missing value"}
	}
	return v, nil
}

// reqTime parses a required non-negative time in seconds.
func reqTime(in *csvIn, col string) (float64, error) {
	v, err := reqNum(in, col)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, skipf(col, "negative time", "%v", v)
	}
	return v, nil
}

// optInt parses an optional non-negative integer column (def when empty).
func optInt(in *csvIn, col string, def int64, bits int) (int64, error) {
	s := in.get(in.col(col))
	if s == "" {
		return def, nil
	}
	v, err := parseInt(s, bits)
	if err != nil {
		return 0, &skipError{Column: col, Reason: "bad integer", Detail: fmt.Sprintf("%q", s)}
	}
	if v < 0 {
		return 0, skipf(col, "negative value", "%d", v)
	}
	return v, nil
}

// reqInt parses a required non-negative integer column.
func reqInt(in *csvIn, col string, bits int) (int64, error) {
	if in.get(in.col(col)) == "" {
		return 0, &skipError{Column: col, Reason: "missing value"}
	}
	return optInt(in, col, 0, bits)
}

// knownModels checks a model list against a set of known names.
func knownModels(col string, models []string, known map[string]bool) error {
	for _, m := range models {
		if !known[m] {
			return skipf(col, "unknown GPU model", "%q (known: %s)", m, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	return nil
}

// asErr is errors.As.
func asErr(err error, target any) bool { return errors.As(err, target) }
