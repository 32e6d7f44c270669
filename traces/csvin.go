package traces

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// csvIn reads a CSV file with a header row, one record at a time, tracking the line
// of each record. It strips a UTF-8 byte-order mark, accepts CRLF line ends, quoted
// fields and blank lines (which are ignored). The header is copied; records are
// valid until the next call.
type csvIn struct {
	file   string
	f      *os.File
	r      *recReader
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
	cr := newRecReader(br, byte(comma))
	c := &csvIn{file: name, r: cr}
	if !header {
		return c, nil
	}
	rec, err := cr.read()
	if err == io.EOF {
		return nil, &RowError{File: name, Line: 1, Err: errors.New("empty file: a header row is required")}
	}
	if err != nil {
		return nil, c.wrapErr(err)
	}
	rec = append([]string(nil), rec...)
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
	var se *csvSyntaxError
	if errors.As(err, &se) {
		return &RowError{File: c.file, Line: se.Line, Err: fmt.Errorf("malformed CSV: %s", se.Msg)}
	}
	return fmt.Errorf("%s: %w", c.file, err)
}

// next reads the next record (io.EOF at the end). With a header, a record with a
// different number of fields is an error.
func (c *csvIn) next() error {
	rec, err := c.r.read()
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return c.wrapErr(err)
	}
	c.rec = rec
	c.line = c.r.recLine
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
	return trimFast(c.rec[i])
}

// trimFast is strings.TrimSpace with a fast path for already-trimmed text.
func trimFast(s string) string {
	if n := len(s); n > 0 && s[0] > ' ' && s[0] < 0x80 && s[n-1] > ' ' && s[n-1] < 0x80 {
		return s
	}
	return strings.TrimSpace(s)
}

// parseMicros parses a plain decimal number of seconds ("-12", "3.5", "0.000001")
// exactly into microseconds. ok is false for anything else (exponents, more than 6
// significant fractional digits, more than 12 integer digits, no digits), which
// callers parse as a float instead.
func parseMicros(s string) (int64, bool) {
	i, neg := 0, false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var whole, frac int64
	nd, fd := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if nd == 12 {
			return 0, false
		}
		whole = whole*10 + int64(s[i]-'0')
		nd++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if fd == 6 {
				if s[i] != '0' {
					return 0, false
				}
				continue
			}
			frac = frac*10 + int64(s[i]-'0')
			fd++
		}
	}
	if i != len(s) || nd+fd == 0 {
		return 0, false
	}
	for ; fd < 6; fd++ {
		frac *= 10
	}
	us := whole*1_000_000 + frac
	if neg {
		us = -us
	}
	return us, true
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
	if n := len(s); n > 0 && n < 10 {
		var v int64
		i := 0
		for ; i < n && s[i] >= '0' && s[i] <= '9'; i++ {
			v = v*10 + int64(s[i]-'0')
		}
		if i == n {
			return v, nil // at most 9 digits: fits every width used here (>= 32 bits)
		}
	}
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

// interner deduplicates repeated short strings (queues, users, ...) and GPU model
// lists so that a trace held in memory does not keep one copy per row. It stops
// growing at a bound. The zero value is not usable: call newInterner.
type interner struct {
	strs  map[string]string
	lists map[string][]string
}

func newInterner() interner {
	return interner{strs: map[string]string{}, lists: map[string][]string{}}
}

func (in interner) get(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.strs[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(in.strs) < 1<<16 {
		in.strs[v] = v
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
