package traces

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/gpusim/gpusim/sim"
)

// FormatPhilly is the raw Microsoft Philly job log (cluster_job_log, JSON).
const FormatPhilly = "philly"

func init() {
	registerJobs(FormatPhilly, "Microsoft Philly raw cluster_job_log (JSON array of jobs with attempts)", openPhilly)
}

// phillyJobJSON is one element of cluster_job_log.
type phillyJobJSON struct {
	Status        string  `json:"status"`
	VC            string  `json:"vc"`
	JobID         string  `json:"jobid"`
	SubmittedTime *string `json:"submitted_time"`
	User          string  `json:"user"`
	Attempts      []struct {
		StartTime *string `json:"start_time"`
		EndTime   *string `json:"end_time"`
		Detail    []struct {
			IP   string   `json:"ip"`
			GPUs []string `json:"gpus"`
		} `json:"detail"`
	} `json:"attempts"`
}

// openPhilly streams cluster_job_log: a JSON array of jobs
// {status, vc, jobid, submitted_time, user, attempts: [{start_time, end_time,
// detail: [{ip, gpus: [...]}]}]} with times "YYYY-MM-DD HH:MM:SS" (or null/"None").
// The file is read twice: first for the earliest submitted_time (t = 0), then job
// by job. Per job:
//
//	id = jobid; queue = vc; user; class training
//	submit = submitted_time - earliest submitted_time
//	duration = end of the last attempt - start of the first attempt (the Philly
//	           analysis' run time: retries and gaps between them included)
//	gang: from the first attempt's placement: one replica per machine when every
//	      machine got the same number of GPUs, else the total split by gangShape
//
// Jobs without attempts, start or end time are skipped with a reason, as are jobs
// whose placement lists no GPU.
func openPhilly(path string, opts ReadOptions) (JobReader, error) {
	origin, err := phillyOrigin(path)
	if err != nil {
		return nil, err
	}
	r, err := newJSONArray(path)
	if err != nil {
		return nil, err
	}
	pr := &phillyReader{js: r, origin: origin, rep: newReport(path, FormatPhilly), opts: opts, intern: newInterner()}
	if !opts.AllowDuplicateIDs {
		pr.dups = newDupSet()
	}
	return pr, nil
}

func phillyOrigin(path string) (float64, error) {
	r, err := newJSONArray(path)
	if err != nil {
		return 0, err
	}
	defer r.close()
	var min float64
	found := false
	for {
		var j struct {
			SubmittedTime *string `json:"submitted_time"`
		}
		_, err := r.next(&j)
		if err == io.EOF {
			return min, nil
		}
		if err != nil {
			return 0, err
		}
		if j.SubmittedTime == nil {
			continue
		}
		if v, ok, err := parseDate(*j.SubmittedTime); err == nil && ok && (!found || v < min) {
			min, found = v, true
		}
	}
}

type phillyReader struct {
	js     *jsonArray
	origin float64
	rep    *ImportReport
	opts   ReadOptions
	dups   *dupSet
	intern interner
}

func (p *phillyReader) Next() (sim.JobSpec, error) {
	for {
		var raw phillyJobJSON
		line, err := p.js.next(&raw)
		if err == io.EOF {
			return sim.JobSpec{}, io.EOF
		}
		if err != nil {
			return sim.JobSpec{}, err
		}
		p.rep.Rows++
		j, err := p.job(&raw)
		if err == nil && p.dups != nil {
			if prev, dup := p.dups.add(j.ID, line); dup {
				err = skipf("jobid", "duplicate job id", "%q (first on line %d)", j.ID, prev)
			}
		}
		if err == nil {
			if col, msg := checkLimits(&j); col != "" {
				err = &skipError{Reason: "value out of range", Detail: col + ": " + msg}
			} else if verr := j.Validate(); verr != nil {
				err = &skipError{Reason: "invalid job", Detail: verr.Error()}
			}
		}
		if se, ok := err.(*skipError); ok {
			if p.opts.Strict {
				return sim.JobSpec{}, &RowError{File: p.js.file, Line: line, Column: se.Column, Err: se}
			}
			p.rep.skip(se.key(), line)
			continue
		}
		if err != nil {
			return sim.JobSpec{}, err
		}
		p.rep.Imported++
		return j, nil
	}
}

func (p *phillyReader) job(raw *phillyJobJSON) (sim.JobSpec, error) {
	j := sim.JobSpec{ID: sim.JobID(raw.JobID), Queue: p.intern.get(raw.VC), User: p.intern.get(raw.User), Class: sim.ClassTraining, GPUMilli: sim.WholeGPU}
	if raw.JobID == "" {
		return j, &skipError{Column: "jobid", Reason: "missing value"}
	}
	date := func(col string, s *string) (float64, error) {
		if s == nil {
			return 0, &skipError{Column: col, Reason: "missing value"}
		}
		v, ok, err := parseDate(*s)
		if err != nil {
			return 0, &skipError{Column: col, Reason: "bad timestamp", Detail: err.Error()}
		}
		if !ok {
			return 0, &skipError{Column: col, Reason: "missing value"}
		}
		return v, nil
	}
	sub, err := date("submitted_time", raw.SubmittedTime)
	if err != nil {
		return j, err
	}
	if len(raw.Attempts) == 0 {
		return j, &skipError{Column: "attempts", Reason: "never ran"}
	}
	first, last := raw.Attempts[0], raw.Attempts[len(raw.Attempts)-1]
	start, err := date("attempts.start_time", first.StartTime)
	if err != nil {
		return j, err
	}
	end, err := date("attempts.end_time", last.EndTime)
	if err != nil {
		return j, err
	}
	if end < start {
		return j, skipf("attempts.end_time", "ends before start", "%v < %v", end, start)
	}
	var total, per int64
	same := true
	for i, d := range first.Detail {
		n := int64(len(d.GPUs))
		total += n
		if i == 0 {
			per = n
		} else if n != per {
			same = false
		}
	}
	if total == 0 {
		return j, &skipError{Column: "attempts.detail", Reason: "no GPUs in placement"}
	}
	if same && per > 0 {
		j.Replicas, j.GPUsPerReplica = int32(len(first.Detail)), int32(per)
	} else {
		j.Replicas, j.GPUsPerReplica = gangShape(total, phillyNodeGPUs)
	}
	j.Submit = sim.Time(sim.Seconds(sub - p.origin))
	j.Duration = sim.Seconds(end - start)
	return j, nil
}

func (p *phillyReader) Report() *ImportReport { return p.rep }
func (p *phillyReader) Close() error          { return p.js.close() }

// jsonArray streams the elements of a top-level JSON array, reporting the line each
// element starts on.
type jsonArray struct {
	file  string
	f     *os.File
	lines *lineCounter
	dec   *json.Decoder
	done  bool
}

func newJSONArray(path string) (*jsonArray, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	lc := &lineCounter{r: bufio.NewReaderSize(f, 1<<20)}
	a := &jsonArray{file: path, f: f, lines: lc, dec: json.NewDecoder(lc)}
	tok, err := a.dec.Token()
	if err != nil || tok != json.Delim('[') {
		f.Close()
		if err == nil || err == io.EOF {
			err = fmt.Errorf("want a JSON array of jobs")
		}
		return nil, &RowError{File: path, Line: lc.line(a.dec.InputOffset()), Err: fmt.Errorf("not a JSON array: %v", err)}
	}
	return a, nil
}

// next decodes the next element into v and returns its line; io.EOF after "]".
func (a *jsonArray) next(v any) (int, error) {
	if a.done {
		return 0, io.EOF
	}
	if !a.dec.More() {
		a.done = true
		if _, err := a.dec.Token(); err != nil {
			return 0, &RowError{File: a.file, Line: a.lines.line(a.dec.InputOffset()), Err: fmt.Errorf("malformed JSON: %v", err)}
		}
		return 0, io.EOF
	}
	// Skip the separator and white space so the offset points at the element.
	line := a.lines.line(a.dec.InputOffset() + a.lines.skipSpace(a.dec.InputOffset()))
	if err := a.dec.Decode(v); err != nil {
		a.done = true
		var ute *json.UnmarshalTypeError
		if asErr(err, &ute) {
			return line, &RowError{File: a.file, Line: line, Column: ute.Field, Err: fmt.Errorf("want %s, got JSON %s", ute.Type, ute.Value)}
		}
		return line, &RowError{File: a.file, Line: line, Err: fmt.Errorf("malformed JSON: %v", err)}
	}
	return line, nil
}

func (a *jsonArray) close() error { return a.f.Close() }

// lineCounter passes bytes through and maps byte offsets to 1-based lines. It keeps
// only the bytes the decoder may still point into (offsets are queried in
// increasing order).
type lineCounter struct {
	r      io.Reader
	base   int64  // offset of buf[0]
	before int    // newlines before base
	buf    []byte // bytes read but not yet passed by a queried offset
}

func (l *lineCounter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.buf = append(l.buf, p[:n]...)
	return n, err
}

// line returns the line of byte offset off and forgets the bytes before it.
func (l *lineCounter) line(off int64) int {
	k := int(off - l.base)
	if k < 0 {
		k = 0
	}
	if k > len(l.buf) {
		k = len(l.buf)
	}
	l.before += bytes.Count(l.buf[:k], []byte{'\n'})
	l.buf = append(l.buf[:0], l.buf[k:]...)
	l.base += int64(k)
	return l.before + 1
}

// skipSpace returns how many separator/space bytes follow offset off in the
// buffered input.
func (l *lineCounter) skipSpace(off int64) int64 {
	k := int(off - l.base)
	n := int64(0)
	for i := k; i >= 0 && i < len(l.buf); i++ {
		switch l.buf[i] {
		case ' ', '\t', '\r', '\n', ',':
			n++
			continue
		}
		break
	}
	return n
}
