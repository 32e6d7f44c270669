package traces

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// RowError is a problem with one row (or one field) of an input file.
// Error() is "FILE:LINE: column COL: message"; the column part is left out when the
// problem is not tied to one column, and the line part when Line is 0.
type RowError struct {
	File   string
	Line   int    // 1-based line of the row in the file (the header is line 1); Parquet: 1-based row number
	Column string // column name, "" when the whole row is at fault
	Err    error
}

func (e *RowError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Column != "" {
		b.WriteString("column ")
		b.WriteString(e.Column)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *RowError) Unwrap() error { return e.Err }

// rowErr builds a *RowError with a formatted message.
func rowErr(file string, line int, col, format string, args ...any) *RowError {
	return &RowError{File: file, Line: line, Column: col, Err: fmt.Errorf(format, args...)}
}

// IsRowError reports whether err is (or wraps) a *RowError, i.e. a problem with the
// input data rather than with I/O.
func IsRowError(err error) bool {
	var re *RowError
	return errors.As(err, &re)
}

// ImportReport summarises one read of a trace: how many data rows were seen, how many
// became jobs (or nodes), and how many were skipped for which reason.
type ImportReport struct {
	File     string
	Format   string
	Rows     int            // data rows read (the header is not counted)
	Imported int            // rows that became jobs or nodes
	Skipped  map[string]int // reason -> rows skipped for it
	// FirstSkip maps each skip reason to the line of its first occurrence.
	FirstSkip map[string]int
	// Notes are remarks about the whole file (e.g. how times were interpreted).
	Notes []string
}

func newReport(file, format string) *ImportReport {
	return &ImportReport{File: file, Format: format, Skipped: map[string]int{}, FirstSkip: map[string]int{}}
}

// skip counts one skipped row with reason at line.
func (r *ImportReport) skip(reason string, line int) {
	if r.Skipped == nil {
		r.Skipped = map[string]int{}
	}
	if r.FirstSkip == nil {
		r.FirstSkip = map[string]int{}
	}
	if _, ok := r.Skipped[reason]; !ok {
		r.FirstSkip[reason] = line
	}
	r.Skipped[reason]++
}

// SkippedTotal returns the number of skipped rows.
func (r *ImportReport) SkippedTotal() int {
	n := 0
	for _, c := range r.Skipped {
		n += c
	}
	return n
}

// Reasons returns the skip reasons sorted by name.
func (r *ImportReport) Reasons() []string {
	out := make([]string, 0, len(r.Skipped))
	for k := range r.Skipped {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// String renders the report on a few lines, reasons sorted by name.
func (r *ImportReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %d rows, %d imported, %d skipped\n", r.File, r.Format, r.Rows, r.Imported, r.SkippedTotal())
	for _, k := range r.Reasons() {
		fmt.Fprintf(&b, "  skipped %d: %s (first at line %d)\n", r.Skipped[k], k, r.FirstSkip[k])
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}
