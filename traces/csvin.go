package traces

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// csvIn reads a CSV file with a header row, one record at a time, tracking the line
// of each record. It strips a UTF-8 byte-order mark, accepts CRLF line ends, quoted
// fields and blank lines (which are ignored).
type csvIn struct {
	file   string
	f      *os.File
	r      *csv.Reader
	header []string
	cols   map[string]int // trimmed, lower-cased header name -> index
	rec    []string
	line   int // line of the current record
	// lenient makes a record with the wrong number of fields a *skipError.
	lenient bool
}

// openCSV opens path and reads its header. comma is the field separator.
func openCSV(path string, comma rune) (*csvIn, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := newCSVIn(path, f, comma, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.f = f
	return c, nil
}

// newCSVIn wraps r; when header is true the first record is read as the header.
func newCSVIn(name string, r io.Reader, comma rune, header bool) (*csvIn, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if b, err := br.Peek(3); err == nil && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.Comma = comma
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	c := &csvIn{file: name, r: cr}
	if !header {
		return c, nil
	}
	rec, err := cr.Read()
	if err == io.EOF {
		return nil, &RowError{File: name, Line: 1, Err: errors.New("empty file: a header row is required")}
	}
	if err != nil {
		return nil, c.wrapErr(err)
	}
	c.header = make([]string, len(rec))
	c.cols = make(map[string]int, len(rec))
	for i, h := range rec {
		h = strings.ToLower(strings.TrimSpace(h))
		c.header[i] = h
		if j, dup := c.cols[h]; dup {
			return nil, rowErr(name, 1, h, "duplicate column (fields %d and %d)", j+1, i+1)
		}
		c.cols[h] = i
	}
	return c, nil
}

func (c *csvIn) wrapErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &RowError{File: c.file, Line: pe.Line, Err: fmt.Errorf("malformed CSV at character %d: %w", pe.Column, pe.Err)}
	}
	return fmt.Errorf("%s: %w", c.file, err)
}

// next reads the next record (io.EOF at the end). With a header, a record with a
// different number of fields is an error.
func (c *csvIn) next() error {
	rec, err := c.r.Read()
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return c.wrapErr(err)
	}
	c.rec = rec
	c.line, _ = c.r.FieldPos(0)
	if c.header != nil && len(rec) != len(c.header) {
		// A lone empty field is a line of spaces; treat it as blank.
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			return c.next()
		}
		if c.lenient {
			return &skipError{Reason: "wrong number of fields", Detail: fmt.Sprintf("row has %d fields, the header has %d", len(rec), len(c.header))}
		}
		return rowErr(c.file, c.line, "", "row has %d fields, the header has %d", len(rec), len(c.header))
	}
	return nil
}

// col returns the index of the named column, or -1.
func (c *csvIn) col(name string) int {
	if i, ok := c.cols[name]; ok {
		return i
	}
	return -1
}

// get returns field i of the current record, trimmed; "" when i < 0.
func (c *csvIn) get(i int) string {
	if i < 0 || i >= len(c.rec) {
		return ""
	}
	return strings.TrimSpace(c.rec[i])
}

// raw returns field i untrimmed.
func (c *csvIn) raw(i int) string {
	if i < 0 || i >= len(c.rec) {
		return ""
	}
	return c.rec[i]
}

func (c *csvIn) close() error {
	if c.f != nil {
		return c.f.Close()
	}
	return nil
}

// requireCols returns an error naming every missing column.
func (c *csvIn) requireCols(names ...string) error {
	var miss []string
	for _, n := range names {
		if c.col(n) < 0 {
			miss = append(miss, n)
		}
	}
	if len(miss) > 0 {
		return rowErr(c.file, 1, strings.Join(miss, ", "), "missing required column (header has: %s)", strings.Join(c.header, ","))
	}
	return nil
}

// parseNum parses a decimal number, rejecting NaN and infinities.
func parseNum(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", s)
	}
	if v != v || v > 1e300 || v < -1e300 {
		return 0, fmt.Errorf("bad number %q", s)
	}
	return v, nil
}

// parseInt parses an integer; an integral decimal ("4.0") is accepted too.
func parseInt(s string, bits int) (int64, error) {
	v, err := strconv.ParseInt(s, 10, bits)
	if err == nil {
		return v, nil
	}
	f, ferr := strconv.ParseFloat(s, 64)
	lim := float64(int64(1) << (bits - 1))
	if ferr != nil || f != f || f != float64(int64(f)) || f >= lim || f < -lim {
		return 0, fmt.Errorf("bad integer %q", s)
	}
	return int64(f), nil
}

// interner deduplicates repeated short strings (queues, users, ...) so that a trace
// held in memory does not keep one copy per row. It stops growing at a bound.
type interner map[string]string

func (in interner) get(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(in) < 1<<16 {
		in[v] = v
	}
	return v
}

// openHeaderless opens a CSV file without a header row; names are its columns.
func openHeaderless(path string, comma rune, names []string) (*csvIn, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := newCSVIn(path, f, comma, false)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.f = f
	c.header = names
	c.cols = make(map[string]int, len(names))
	for i, h := range names {
		c.cols[h] = i
	}
	return c, nil
}
