package traces

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// recReader reads CSV records (RFC 4180: quoted fields may hold separators, doubled
// quotes and line breaks; CRLF or LF line ends; empty lines are skipped). It is a
// faster replacement for encoding/csv that allocates one string per record and
// reports the line each record starts on.
type recReader struct {
	br      *bufio.Reader
	comma   byte
	lazy    bool // allow bare quotes inside unquoted fields and stray quotes in quoted ones
	line    int  // lines consumed so far
	recLine int  // first line of the last record
	buf     []byte
	ends    []int
	fields  []string
	pending []byte // line bytes copied when bufio's buffer must be refilled
}

// csvSyntaxError is a malformed record; Line is where the problem is.
type csvSyntaxError struct {
	Line int
	Msg  string
}

func (e *csvSyntaxError) Error() string { return e.Msg }

func newRecReader(r *bufio.Reader, comma byte) *recReader {
	return &recReader{br: r, comma: comma}
}

// readLine returns the next physical line without its line end (the slice is only
// valid until the next call) and io.EOF when nothing is left.
func (r *recReader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.pending = append(r.pending[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			r.pending = append(r.pending, line...)
		}
		line = r.pending
	}
	if len(line) == 0 && err != nil {
		return nil, err
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	r.line++
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	} else if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n], nil
}

// read returns the next record's fields (valid until the next call; the strings
// share one allocation) or io.EOF.
func (r *recReader) read() ([]string, error) {
	var line []byte
	var err error
	for {
		line, err = r.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) > 0 {
			break
		}
	}
	r.recLine = r.line
	r.buf = r.buf[:0]
	r.ends = r.ends[:0]
	if bytes.IndexByte(line, '"') < 0 {
		// Fast path: no quotes anywhere on the line; the fields are substrings of
		// one copy of it.
		s := string(line)
		r.fields = r.fields[:0]
		start := 0
		for i := 0; i < len(s); i++ {
			if s[i] == r.comma {
				r.fields = append(r.fields, s[start:i])
				start = i + 1
			}
		}
		r.fields = append(r.fields, s[start:])
		return r.fields, nil
	}
	pos := 0
	for {
		if pos < len(line) && line[pos] == '"' {
			// Quoted field.
			pos++
			for {
				i := bytes.IndexByte(line[pos:], '"')
				if i < 0 {
					// The field continues on the next line.
					r.buf = append(r.buf, line[pos:]...)
					r.buf = append(r.buf, '\n')
					line, err = r.readLine()
					if err != nil {
						if err == io.EOF {
							return nil, &csvSyntaxError{Line: r.recLine, Msg: "extraneous or missing \" in quoted-field (unterminated quote)"}
						}
						return nil, err
					}
					pos = 0
					continue
				}
				r.buf = append(r.buf, line[pos:pos+i]...)
				pos += i + 1
				if pos < len(line) && line[pos] == '"' {
					r.buf = append(r.buf, '"')
					pos++
					continue
				}
				if pos == len(line) || line[pos] == r.comma {
					break
				}
				if r.lazy {
					r.buf = append(r.buf, '"')
					continue
				}
				return nil, &csvSyntaxError{Line: r.line, Msg: fmt.Sprintf("extraneous or missing \" in quoted-field at character %d", pos+1)}
			}
		} else {
			i := bytes.IndexByte(line[pos:], r.comma)
			end := len(line)
			if i >= 0 {
				end = pos + i
			}
			f := line[pos:end]
			if !r.lazy && bytes.IndexByte(f, '"') >= 0 {
				return nil, &csvSyntaxError{Line: r.line, Msg: fmt.Sprintf("bare \" in non-quoted field at character %d", pos+bytes.IndexByte(f, '"')+1)}
			}
			r.buf = append(r.buf, f...)
			pos = end
		}
		r.ends = append(r.ends, len(r.buf))
		if pos >= len(line) {
			break
		}
		pos++ // separator
		if pos == len(line) {
			r.ends = append(r.ends, len(r.buf)) // trailing empty field
			break
		}
	}
	return r.strings(), nil
}

func (r *recReader) strings() []string {
	s := string(r.buf)
	r.fields = r.fields[:0]
	start := 0
	for _, e := range r.ends {
		r.fields = append(r.fields, s[start:e])
		start = e
	}
	return r.fields
}
