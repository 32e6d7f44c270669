package traces

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/apache/arrow/go/v15/parquet/schema"

	"github.com/gpusim/gpusim/sim"
)

// parquetBatch is the number of rows per written row group and per read batch; it
// bounds the memory of both directions.
const parquetBatch = 1 << 17

var nativeArrowTypes = [numAllCols]arrow.DataType{
	cSharing: arrow.BinaryTypes.String, cGPUMemMiB: arrow.PrimitiveTypes.Int64, cMIGProfile: arrow.BinaryTypes.String,
	cSMUtil: arrow.PrimitiveTypes.Float64, cWorkload: arrow.BinaryTypes.String,
	cServingRate: arrow.PrimitiveTypes.Float64, cServingService: arrow.PrimitiveTypes.Float64, cServingSLA: arrow.PrimitiveTypes.Float64,
	cDeps: arrow.BinaryTypes.String, cJobName: arrow.BinaryTypes.String,
	cID: arrow.BinaryTypes.String, cSubmit: arrow.PrimitiveTypes.Float64, cGPUs: arrow.PrimitiveTypes.Int32,
	cDuration: arrow.PrimitiveTypes.Float64, cReplicas: arrow.PrimitiveTypes.Int32, cWalltime: arrow.PrimitiveTypes.Float64,
	cGPUMilli: arrow.PrimitiveTypes.Int32, cGPUModel: arrow.BinaryTypes.String, cQueue: arrow.BinaryTypes.String,
	cUser: arrow.BinaryTypes.String, cTeam: arrow.BinaryTypes.String, cClass: arrow.BinaryTypes.String,
	cPriority: arrow.PrimitiveTypes.Int32, cCPUMilli: arrow.PrimitiveTypes.Int64, cMemory: arrow.PrimitiveTypes.Int64,
}

// NativeArrowSchema is the Arrow schema of native Parquet files written by gpusim:
// the NativeColumns with seconds as float64, counts as int32/int64 and text as
// UTF-8 strings (empty = not given). Readers also accept other integer/float
// widths and nullable columns (null = not given).
func NativeArrowSchema() *arrow.Schema {
	fields := make([]arrow.Field, numNativeCols)
	for i := range fields {
		fields[i] = arrow.Field{Name: NativeColumns[i], Type: nativeArrowTypes[i]}
	}
	return arrow.NewSchema(fields, nil)
}

// NativeParquetWriter writes jobs as a native Parquet file with the schema of
// NativeArrowSchema: one row group per 131072 jobs, plain encoding, snappy
// compression (repeated text such as queues compresses well and writing stays
// fast). Columns are buffered as plain slices; full row groups are encoded by a
// background goroutine while Write fills the next one. An encoding error is
// returned by a later Write or by Close. Close must be called.
type NativeParquetWriter struct {
	fw     *file.Writer
	cur    *pqCols
	todo   chan *pqCols
	free   chan *pqCols
	exited chan struct{}
	encErr error       // the encoder's first error; read after failed or exited
	failed atomic.Bool // set after encErr
	done   bool
}

// pqCols is one row group of buffered column values.
type pqCols struct {
	n    int
	f64  [numNativeCols][]float64
	i32  [numNativeCols][]int32
	i64  [numNativeCols][]int64
	text [numNativeCols][]byte  // concatenated strings of a text column
	ends [numNativeCols][]int32 // end offset of each string in text
	ba   []parquet.ByteArray
}

func (c *pqCols) reset() {
	c.n = 0
	for i := 0; i < numNativeCols; i++ {
		c.f64[i], c.i32[i], c.i64[i] = c.f64[i][:0], c.i32[i][:0], c.i64[i][:0]
		c.text[i], c.ends[i] = c.text[i][:0], c.ends[i][:0]
	}
	c.ba = c.ba[:0]
}

var nativeParquetSchema = func() *schema.GroupNode {
	fields := make(schema.FieldList, numNativeCols)
	for c := 0; c < numNativeCols; c++ {
		name, req := NativeColumns[c], parquet.Repetitions.Required
		switch nativeArrowTypes[c].ID() {
		case arrow.STRING:
			n, err := schema.NewPrimitiveNodeLogical(name, req, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
			if err != nil {
				panic(err) // static schema
			}
			fields[c] = n
		case arrow.FLOAT64:
			fields[c] = schema.NewFloat64Node(name, req, -1)
		case arrow.INT32:
			fields[c] = schema.NewInt32Node(name, req, -1)
		case arrow.INT64:
			fields[c] = schema.NewInt64Node(name, req, -1)
		}
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		panic(err) // static schema
	}
	return root
}()

// NewNativeParquetWriter starts a Parquet file on w. Close must be called to write
// the footer.
func NewNativeParquetWriter(w io.Writer) (*NativeParquetWriter, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(false),
		parquet.WithStats(false),
		parquet.WithMaxRowGroupLength(parquetBatch),
		parquet.WithCreatedBy("gpusim"),
	)
	p := &NativeParquetWriter{
		fw:     file.NewParquetWriter(w, nativeParquetSchema, file.WithWriterProps(props)),
		cur:    &pqCols{},
		todo:   make(chan *pqCols, 1),
		free:   make(chan *pqCols, 2),
		exited: make(chan struct{}),
	}
	go p.encoder()
	return p, nil
}

// encoder writes the row groups handed over by Write, in order.
func (p *NativeParquetWriter) encoder() {
	defer close(p.exited)
	for c := range p.todo {
		if p.encErr == nil {
			if err := p.encode(c); err != nil {
				p.encErr = err
				p.failed.Store(true)
			}
		}
		c.reset()
		select {
		case p.free <- c:
		default:
		}
	}
}

func (b *pqCols) str(c int, s string) {
	b.text[c] = append(b.text[c], s...)
	b.ends[c] = append(b.ends[c], int32(len(b.text[c])))
}

// Write appends one job.
func (p *NativeParquetWriter) Write(j *sim.JobSpec) error {
	if p.done {
		return errors.New("parquet writer is closed")
	}
	if p.failed.Load() {
		return p.encErr
	}
	b := p.cur
	b.str(cID, string(j.ID))
	b.f64[cSubmit] = append(b.f64[cSubmit], sim.Duration(j.Submit).Seconds())
	b.i32[cGPUs] = append(b.i32[cGPUs], j.GPUsPerReplica)
	b.f64[cDuration] = append(b.f64[cDuration], j.Duration.Seconds())
	b.i32[cReplicas] = append(b.i32[cReplicas], j.Replicas)
	b.f64[cWalltime] = append(b.f64[cWalltime], j.Walltime.Seconds())
	b.i32[cGPUMilli] = append(b.i32[cGPUMilli], int32(j.GPUMilli))
	switch len(j.GPUModels) {
	case 0:
		b.str(cGPUModel, "")
	case 1:
		b.str(cGPUModel, j.GPUModels[0])
	default:
		b.str(cGPUModel, strings.Join(j.GPUModels, "|"))
	}
	b.str(cQueue, j.Queue)
	b.str(cUser, j.User)
	b.str(cTeam, j.Team)
	if j.Class == sim.ClassUnknown {
		b.str(cClass, "")
	} else {
		b.str(cClass, string(j.Class))
	}
	b.i32[cPriority] = append(b.i32[cPriority], j.Priority)
	b.i64[cCPUMilli] = append(b.i64[cCPUMilli], j.CPUMilli)
	b.i64[cMemory] = append(b.i64[cMemory], j.MemoryMiB)
	b.n++
	if b.n >= parquetBatch {
		p.todo <- b
		select {
		case p.cur = <-p.free:
		default:
			p.cur = &pqCols{}
		}
	}
	return nil
}

// encode writes one buffered row group.
func (p *NativeParquetWriter) encode(b *pqCols) (err error) {
	if b.n == 0 {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet: %v", r)
		}
	}()
	rg := p.fw.AppendRowGroup()
	for c := 0; c < numNativeCols; c++ {
		cw, err := rg.NextColumn()
		if err != nil {
			return err
		}
		switch w := cw.(type) {
		case *file.Float64ColumnChunkWriter:
			_, err = w.WriteBatch(b.f64[c], nil, nil)
		case *file.Int32ColumnChunkWriter:
			_, err = w.WriteBatch(b.i32[c], nil, nil)
		case *file.Int64ColumnChunkWriter:
			_, err = w.WriteBatch(b.i64[c], nil, nil)
		case *file.ByteArrayColumnChunkWriter:
			b.ba = b.ba[:0]
			start := int32(0)
			for _, e := range b.ends[c] {
				b.ba = append(b.ba, parquet.ByteArray(b.text[c][start:e]))
				start = e
			}
			_, err = w.WriteBatch(b.ba, nil, nil)
		default:
			err = fmt.Errorf("unexpected column writer %T", cw)
		}
		if err != nil {
			return err
		}
		if err := cw.Close(); err != nil {
			return err
		}
	}
	return rg.Close()
}

// Close encodes the last row group, waits for the encoder and writes the footer.
func (p *NativeParquetWriter) Close() error {
	if p.done {
		return nil
	}
	p.done = true
	if p.cur.n > 0 {
		p.todo <- p.cur
	}
	close(p.todo)
	<-p.exited
	err := p.encErr
	if cerr := p.fw.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteNativeParquet writes jobs as a native Parquet file to w.
func WriteNativeParquet(w io.Writer, jobs []sim.JobSpec) error {
	p, err := NewNativeParquetWriter(w)
	if err != nil {
		return err
	}
	for i := range jobs {
		if err := p.Write(&jobs[i]); err != nil {
			p.Close()
			return err
		}
	}
	return p.Close()
}

// nativeParquetReader streams a native Parquet trace one record batch at a time.
type nativeParquetReader struct {
	path   string
	f      *os.File
	pf     *file.Reader
	rr     pqarrow.RecordReader
	idx    [numAllCols]int
	rec    arrow.Record
	cols   [numAllCols]arrow.Array
	row    int // row inside rec
	line   int // rows read so far
	rep    *ImportReport
	dups   *dupSet
	deps   *depCheck // nil without a deps column
	intern interner
}

// ErrCorruptParquet is wrapped by every error about a Parquet input that is not
// a readable Parquet file (truncated, not Parquet at all, undecodable data): bad
// input, which the command line reports with exit code 2.
var ErrCorruptParquet = errors.New("not a readable Parquet file")

func openNativeParquet(path string, opts ReadOptions) (jr JobReader, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := &nativeParquetReader{path: path, f: f, rep: newReport(path, FormatNative), intern: newInterner()}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v", path, ErrCorruptParquet, p)
		}
		if err != nil {
			r.Close()
			jr = nil
		}
	}()
	r.pf, err = file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrCorruptParquet, err)
	}
	fr, err := pqarrow.NewFileReader(r.pf, pqarrow.ArrowReadProperties{BatchSize: parquetBatch}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrCorruptParquet, err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrCorruptParquet, err)
	}
	header := make([]string, schema.NumFields())
	for i, fld := range schema.Fields() {
		header[i] = fld.Name
	}
	if err := mapNativeColumns(path, header, r.idx[:]); err != nil {
		return nil, err
	}
	for c, pos := range r.idx {
		if pos < 0 {
			continue
		}
		if err := checkArrowType(schema.Field(pos).Type, nativeArrowTypes[c]); err != nil {
			return nil, rowErr(path, 0, colName(c), "%v", err)
		}
	}
	r.rr, err = fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrCorruptParquet, err)
	}
	if !opts.AllowDuplicateIDs {
		r.dups = newDupSet()
	}
	if r.idx[cDeps] >= 0 {
		r.deps = newDepCheck(path)
	}
	return r, nil
}

func checkArrowType(got, want arrow.DataType) error {
	isNum := func(t arrow.DataType) bool {
		switch t.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64:
			return true
		}
		return false
	}
	isStr := func(t arrow.DataType) bool { return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING }
	if isStr(want) && !isStr(got) {
		return fmt.Errorf("type %s, want a string column", got)
	}
	if isNum(want) && !isNum(got) {
		return fmt.Errorf("type %s, want a numeric column", got)
	}
	return nil
}

func (r *nativeParquetReader) Next() (j sim.JobSpec, err error) {
	defer func() {
		if p := recover(); p != nil {
			j, err = sim.JobSpec{}, fmt.Errorf("%s: %w near row %d: %v", r.path, ErrCorruptParquet, r.line+1, p)
		}
	}()
	for r.rec == nil || r.row >= int(r.rec.NumRows()) {
		if r.rr == nil {
			return sim.JobSpec{}, r.eof()
		}
		if !r.rr.Next() {
			if err := r.rr.Err(); err != nil && err != io.EOF {
				return sim.JobSpec{}, fmt.Errorf("%s: %w: %w", r.path, ErrCorruptParquet, err)
			}
			return sim.JobSpec{}, r.eof()
		}
		r.rec = r.rr.Record()
		r.row = 0
		for c, pos := range r.idx {
			r.cols[c] = nil
			if pos >= 0 {
				r.cols[c] = r.rec.Column(pos)
			}
		}
	}
	r.line++
	r.rep.Rows++
	j, err = nativeRow(r, r.path, r.line, r.intern)
	r.row++
	if err != nil {
		return sim.JobSpec{}, err
	}
	if r.dups != nil {
		if prev, dup := r.dups.add(j.ID, r.line); dup {
			return sim.JobSpec{}, rowErr(r.path, r.line, "id", "duplicate job id %q (first at row %d)", j.ID, prev)
		}
	}
	if r.deps != nil {
		r.deps.add(&j, r.line)
	}
	r.rep.Imported++
	return j, nil
}

// eof is the end of the table: io.EOF, or the dependency graph's error.
func (r *nativeParquetReader) eof() error {
	if r.deps != nil {
		if err := r.deps.check(); err != nil {
			return err
		}
	}
	return io.EOF
}

func (r *nativeParquetReader) str(col int) (string, bool) {
	a := r.cols[col]
	if a == nil || a.IsNull(r.row) {
		return "", false
	}
	var s string
	switch x := a.(type) {
	case *array.String:
		s = x.Value(r.row)
	case *array.LargeString:
		s = x.Value(r.row)
	default:
		return "", false
	}
	if strings.TrimSpace(s) == "" {
		return "", false
	}
	return s, true
}

func (r *nativeParquetReader) num(col int) (float64, bool, error) {
	a := r.cols[col]
	if a == nil || a.IsNull(r.row) {
		return 0, false, nil
	}
	var v float64
	switch x := a.(type) {
	case *array.Float64:
		v = x.Value(r.row)
	case *array.Float32:
		v = float64(x.Value(r.row))
	default:
		i, _, err := r.integer(col, 64)
		return float64(i), true, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e300 {
		return 0, true, fmt.Errorf("bad number %v", v)
	}
	return v, true, nil
}

func (r *nativeParquetReader) micros(col int) (int64, bool, error) {
	v, ok, err := r.num(col)
	return int64(sim.Seconds(v)), ok, err
}

func (r *nativeParquetReader) integer(col, bits int) (int64, bool, error) {
	a := r.cols[col]
	if a == nil || a.IsNull(r.row) {
		return 0, false, nil
	}
	var v int64
	switch x := a.(type) {
	case *array.Int8:
		v = int64(x.Value(r.row))
	case *array.Int16:
		v = int64(x.Value(r.row))
	case *array.Int32:
		v = int64(x.Value(r.row))
	case *array.Int64:
		v = x.Value(r.row)
	case *array.Uint8:
		v = int64(x.Value(r.row))
	case *array.Uint16:
		v = int64(x.Value(r.row))
	case *array.Uint32:
		v = int64(x.Value(r.row))
	case *array.Uint64:
		u := x.Value(r.row)
		if u > math.MaxInt64 {
			return 0, true, fmt.Errorf("integer %d out of range", u)
		}
		v = int64(u)
	case *array.Float32, *array.Float64:
		f, _, err := r.num(col)
		if err != nil {
			return 0, true, err
		}
		iv, err := parseInt(strconv.FormatFloat(f, 'f', -1, 64), bits)
		return iv, true, err
	default:
		return 0, true, fmt.Errorf("unsupported type %s", a.DataType())
	}
	lim := int64(1) << (bits - 1)
	if bits < 64 && (v >= lim || v < -lim) {
		return 0, true, fmt.Errorf("integer %d out of range", v)
	}
	return v, true, nil
}

func (r *nativeParquetReader) Report() *ImportReport { return r.rep }

func (r *nativeParquetReader) Close() error {
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	var err error
	if r.pf != nil {
		err = r.pf.Close() // closes f too
		r.pf = nil
		r.f = nil
	}
	if r.f != nil {
		err = r.f.Close()
		r.f = nil
	}
	return err
}
