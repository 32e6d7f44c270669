package traces

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/gpusim/gpusim/sim"
)

// nativeBatch is the number of rows a native CSV reader parses per batch.
const nativeBatch = 2048

// nativeCSVReader streams a native CSV trace. Parsing is pipelined: one goroutine
// splits records, a few workers turn batches of records into jobs, and Next hands
// them out in file order and checks IDs for duplicates, so results (and the first
// error reported) are exactly those of a sequential read. Memory is a few batches.
type nativeCSVReader struct {
	in    *csvIn
	idx   [numAllCols]int
	rep   *ImportReport
	dups  *dupSet
	deps  *depCheck // nil without a deps column
	order chan chan parsedBatch
	done  chan struct{}
	wg    sync.WaitGroup
	cur   parsedBatch
	pos   int
	err   error // sticky: io.EOF or the first error
	once  sync.Once
	// Batch buffers are recycled through free lists: records by the workers,
	// lines and jobs by Next.
	recFree  chan []string
	lineFree chan []int
	jobFree  chan []sim.JobSpec
}

type rawBatch struct {
	recs  []string // row k is recs[k*width:(k+1)*width]
	lines []int
	err   error // a structural error after the rows
	eof   bool
}

type parsedBatch struct {
	jobs   []sim.JobSpec
	lines  []int
	err    error // error after the jobs
	errRow bool  // err is about the row after the jobs (count it as read)
	eof    bool
}

type workItem struct {
	b   rawBatch
	res chan parsedBatch
}

func openNativeCSV(path string, opts ReadOptions) (JobReader, error) {
	in, err := openCSV(path, ',')
	if err != nil {
		return nil, err
	}
	r := &nativeCSVReader{in: in, rep: newReport(in.file, FormatNative)}
	if err := mapNativeColumns(in.file, in.header, r.idx[:]); err != nil {
		in.close()
		return nil, err
	}
	if !opts.AllowDuplicateIDs {
		r.dups = newDupSet()
	}
	if r.idx[cDeps] >= 0 {
		r.deps = newDepCheck(in.file)
	}
	workers := min(max(runtime.GOMAXPROCS(0)-1, 1), 8)
	r.order = make(chan chan parsedBatch, workers+1)
	r.recFree = make(chan []string, workers+4)
	r.lineFree = make(chan []int, workers+4)
	r.jobFree = make(chan []sim.JobSpec, workers+4)
	r.done = make(chan struct{})
	work := make(chan workItem)
	r.wg.Add(1 + workers)
	go r.produce(work)
	for i := 0; i < workers; i++ {
		go r.parse(work)
	}
	return r, nil
}

func (r *nativeCSVReader) produce(work chan<- workItem) {
	defer r.wg.Done()
	defer close(work)
	defer close(r.order)
	width := len(r.in.header)
	for {
		b := rawBatch{recs: r.getRecs(width), lines: r.getLines()}
		for len(b.lines) < nativeBatch {
			err := r.in.next()
			if err == io.EOF {
				b.eof = true
				break
			}
			if err != nil {
				b.err = err
				break
			}
			b.recs = append(b.recs, r.in.rec...)
			b.lines = append(b.lines, r.in.line)
		}
		res := make(chan parsedBatch, 1)
		select {
		case r.order <- res:
		case <-r.done:
			return
		}
		select {
		case work <- workItem{b, res}:
		case <-r.done:
			return
		}
		if b.eof || b.err != nil {
			return
		}
	}
}

func (r *nativeCSVReader) parse(work <-chan workItem) {
	defer r.wg.Done()
	intern := newInterner()
	f := csvFields{idx: r.idx}
	width := len(r.in.header)
	for it := range work {
		pb := parsedBatch{jobs: r.getJobs(), lines: it.b.lines, eof: it.b.eof}
		for k, line := range it.b.lines {
			f.rec = it.b.recs[k*width : (k+1)*width]
			j, err := nativeRow(&f, r.in.file, line, intern)
			if err != nil {
				pb.err, pb.errRow, pb.eof = err, true, false
				break
			}
			pb.jobs = append(pb.jobs, j)
		}
		if pb.err == nil && it.b.err != nil {
			pb.err = it.b.err
			_, pb.errRow = it.b.err.(*RowError)
		}
		clear(it.b.recs)
		put(r.recFree, it.b.recs[:0])
		it.res <- pb
	}
}

func (r *nativeCSVReader) Next() (sim.JobSpec, error) {
	for {
		if r.err != nil {
			return sim.JobSpec{}, r.err
		}
		if r.pos < len(r.cur.jobs) {
			j, line := r.cur.jobs[r.pos], r.cur.lines[r.pos]
			r.cur.jobs[r.pos] = sim.JobSpec{}
			r.pos++
			r.rep.Rows++
			if r.dups != nil {
				if prev, dup := r.dups.add(j.ID, line); dup {
					r.err = rowErr(r.in.file, line, "id", "duplicate job id %q (first on line %d)", j.ID, prev)
					return sim.JobSpec{}, r.err
				}
			}
			if r.deps != nil {
				r.deps.add(&j, line)
			}
			r.rep.Imported++
			return j, nil
		}
		switch {
		case r.cur.err != nil:
			if r.cur.errRow {
				r.rep.Rows++
			}
			r.err = r.cur.err
			continue
		case r.cur.eof:
			r.err = io.EOF
			if r.deps != nil {
				if err := r.deps.check(); err != nil {
					r.err = err
				}
			}
			continue
		}
		res, ok := <-r.order
		if !ok {
			r.err = io.EOF
			continue
		}
		if r.cur.jobs != nil {
			put(r.jobFree, r.cur.jobs[:0])
			put(r.lineFree, r.cur.lines[:0])
		}
		r.cur, r.pos = <-res, 0
	}
}

func (r *nativeCSVReader) Report() *ImportReport { return r.rep }

// Close stops the pipeline, waits for its goroutines and closes the file.
// rowsHint implements rowsHinter: the file's line count (an upper bound of its
// rows, read through a second descriptor; ~30 ms per 100 MB from the page
// cache, which the parse then hits), 0 on any error or when the file is not
// a regular file.
func (r *nativeCSVReader) rowsHint() int {
	// A pipe or device is not opened again: that could block, or take rows
	// from the parser.
	if st, err := os.Stat(r.in.file); err != nil || !st.Mode().IsRegular() {
		return 0
	}
	f, err := os.Open(r.in.file)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	n := 1 // a last line without a newline
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n
		}
		if err != nil {
			return 0
		}
	}
}

func (r *nativeCSVReader) Close() error {
	var err error
	r.once.Do(func() {
		close(r.done)
		r.wg.Wait()
		err = r.in.close()
	})
	return err
}

func (r *nativeCSVReader) getRecs(width int) []string {
	select {
	case v := <-r.recFree:
		return v
	default:
		return make([]string, 0, nativeBatch*width)
	}
}

func (r *nativeCSVReader) getLines() []int {
	select {
	case v := <-r.lineFree:
		return v
	default:
		return make([]int, 0, nativeBatch)
	}
}

func (r *nativeCSVReader) getJobs() []sim.JobSpec {
	select {
	case v := <-r.jobFree:
		return v
	default:
		return make([]sim.JobSpec, 0, nativeBatch)
	}
}

// put returns a buffer to a free list unless the list is full.
func put[T any](free chan T, v T) {
	select {
	case free <- v:
	default:
	}
}
