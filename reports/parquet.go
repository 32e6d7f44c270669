package reports

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/gpusim/gpusim/sim"
)

// rowGroupRows is the number of rows per Parquet row group (and per in-memory
// record batch while writing).
const rowGroupRows = 1 << 17

// createdBy is the fixed "created by" string of gpusim's Parquet files.
const createdBy = "gpusim"

var (
	jobsSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "submit_s", Type: arrow.PrimitiveTypes.Float64},
		{Name: "start_s", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "end_s", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "wait_s", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "jct_s", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "run_s", Type: arrow.PrimitiveTypes.Float64},
		{Name: "estimate_s", Type: arrow.PrimitiveTypes.Float64},
		{Name: "gpus", Type: arrow.PrimitiveTypes.Int32},
		{Name: "gpus_per_replica", Type: arrow.PrimitiveTypes.Int32},
		{Name: "replicas", Type: arrow.PrimitiveTypes.Int32},
		{Name: "gpu_milli", Type: arrow.PrimitiveTypes.Int32},
		{Name: "class", Type: arrow.BinaryTypes.String},
		{Name: "queue", Type: arrow.BinaryTypes.String},
		{Name: "user", Type: arrow.BinaryTypes.String},
		{Name: "priority", Type: arrow.PrimitiveTypes.Int32},
		{Name: "state", Type: arrow.BinaryTypes.String},
		{Name: "preemptions", Type: arrow.PrimitiveTypes.Int32},
		{Name: "nodes", Type: arrow.BinaryTypes.String},
		{Name: "span", Type: arrow.BinaryTypes.String},
		{Name: "speed", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "wasted_s", Type: arrow.PrimitiveTypes.Float64},
		{Name: "overhead_s", Type: arrow.PrimitiveTypes.Float64},
	}, nil)

	eventsSchema = arrow.NewSchema([]arrow.Field{
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "time_s", Type: arrow.PrimitiveTypes.Float64},
		{Name: "time_us", Type: arrow.PrimitiveTypes.Int64},
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: "job_id", Type: arrow.BinaryTypes.String},
		{Name: "value", Type: arrow.PrimitiveTypes.Int64},
		{Name: "detail", Type: arrow.BinaryTypes.String},
	}, nil)

	// eventsSchemaV0 is events.parquet before the detail column (still readable).
	eventsSchemaV0 = arrow.NewSchema(eventsSchema.Fields()[:6], nil)

	timeseriesSchema = arrow.NewSchema([]arrow.Field{
		{Name: "time_s", Type: arrow.PrimitiveTypes.Float64},
		{Name: "gpus_allocated", Type: arrow.PrimitiveTypes.Float64},
		{Name: "busy_gpus", Type: arrow.PrimitiveTypes.Int32},
		{Name: "utilization", Type: arrow.PrimitiveTypes.Float64},
		{Name: "running", Type: arrow.PrimitiveTypes.Int32},
		{Name: "pending", Type: arrow.PrimitiveTypes.Int32},
		{Name: "pending_gpus", Type: arrow.PrimitiveTypes.Int64},
		{Name: "largest_free_nvlink", Type: arrow.PrimitiveTypes.Int32},
		{Name: "largest_free_pcie", Type: arrow.PrimitiveTypes.Int32},
		{Name: "largest_free_socket", Type: arrow.PrimitiveTypes.Int32},
		{Name: "largest_free_node", Type: arrow.PrimitiveTypes.Int32},
		{Name: "largest_free_leaf", Type: arrow.PrimitiveTypes.Int32},
		{Name: "largest_free_spine", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
)

// dictCols are the dictionary-encoded columns.
var dictCols = map[string]bool{"class": true, "queue": true, "user": true, "state": true, "nodes": true, "span": true, "kind": true, "detail": true}

// EventColumns and TimeseriesColumns are the column names of events.parquet and
// timeseries.parquet, in order.
var (
	EventColumns      = fieldNames(eventsSchema)
	TimeseriesColumns = fieldNames(timeseriesSchema)
)

func fieldNames(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// writeParquet writes n rows with a fixed schema: fill appends rows [lo, hi) to the
// record builder. Output depends only on the rows (no timestamps in metadata).
// Dictionary encoding is used only for the low-cardinality string columns in
// dictCols (it costs much time on unique values such as ids and timestamps).
func writeParquet(w io.Writer, schema *arrow.Schema, n int, fill func(b *array.RecordBuilder, lo, hi int)) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	return writeRowGroups(w, schema, n, func(fw *pqarrow.FileWriter, lo, hi int) error {
		b.Reserve(hi - lo)
		fill(b, lo, hi)
		rec := b.NewRecord()
		defer rec.Release()
		return fw.Write(rec)
	})
}

// writeRowGroups opens a Parquet writer for schema (parquetProps), calls
// group(fw, lo, hi) for each row group [lo, hi) of n rows (once, with 0 rows,
// when n is 0), and closes the file. group writes the row group's data.
func writeRowGroups(w io.Writer, schema *arrow.Schema, n int, group func(fw *pqarrow.FileWriter, lo, hi int) error) error {
	return writeRowGroupsFrom(w, schema, func(int) (int, error) { return n, nil }, group)
}

// writeRowGroupsFrom is writeRowGroups over rows that become available while it
// writes: avail(want) blocks until at least want rows exist or the source has
// ended, and returns how many exist (the total once ended; never fewer than an
// earlier call). The row groups, and so the bytes, are those writeRowGroups
// writes for the final count.
func writeRowGroupsFrom(w io.Writer, schema *arrow.Schema, avail func(want int) (int, error), group func(fw *pqarrow.FileWriter, lo, hi int) error) error {
	fw, err := pqarrow.NewFileWriter(schema, w, parquetProps(schema), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(parquetAlloc)))
	if err != nil {
		return fmt.Errorf("parquet writer: %w", err)
	}
	for lo := 0; ; lo += rowGroupRows {
		n, err := avail(lo + rowGroupRows)
		if err != nil {
			return err
		}
		hi := min(lo+rowGroupRows, n)
		if hi <= lo && lo > 0 {
			break // the rows ended on a row-group boundary
		}
		if err := group(fw, lo, hi); err != nil {
			return fmt.Errorf("parquet write: %w", err)
		}
		if hi < lo+rowGroupRows {
			break // the source ended inside this group (one empty group when it had no rows)
		}
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("parquet close: %w", err)
	}
	return nil
}

func appendOptFloat(b *array.Float64Builder, x float64) {
	if math.IsNaN(x) {
		b.AppendNull()
	} else {
		b.Append(x)
	}
}

// WriteJobsParquet writes rows as jobs.parquet (columns JobColumns).
func WriteJobsParquet(w io.Writer, rows []JobRow) error {
	schema := jobsSchema
	if len(rows) > 0 {
		schema = jobsSchemaWith(rows[0].Share != nil, rows[0].Fail != nil, rows[0].Power != nil, rows[0].Ckpt != nil)
	}
	return writeParquet(w, schema, len(rows), func(b *array.RecordBuilder, lo, hi int) {
		appendJobsRecord(b, rows[lo:hi])
		for i := lo; i < hi; i++ {
			appendJobShareParquet(b, &rows[i])
			appendJobFailParquet(b, &rows[i])
			appendJobPowerParquet(b, &rows[i])
			appendJobCkptParquet(b, &rows[i])
		}
	})
}

// appendJobsRecord appends rows to a record builder of jobsSchema.
func appendJobsRecord(b *array.RecordBuilder, rows []JobRow) {
	id := b.Field(0).(*array.StringBuilder)
	f := func(i int) *array.Float64Builder { return b.Field(i).(*array.Float64Builder) }
	i32 := func(i int) *array.Int32Builder { return b.Field(i).(*array.Int32Builder) }
	str := func(i int) *array.StringBuilder { return b.Field(i).(*array.StringBuilder) }
	for _, r := range rows {
		id.Append(r.ID)
		f(1).Append(r.Submit)
		appendOptFloat(f(2), r.Start)
		appendOptFloat(f(3), r.End)
		appendOptFloat(f(4), r.Wait)
		appendOptFloat(f(5), r.JCT)
		f(6).Append(r.Run)
		f(7).Append(r.Estimate)
		i32(8).Append(r.GPUs)
		i32(9).Append(r.GPUsPerRe)
		i32(10).Append(r.Replicas)
		i32(11).Append(r.GPUMilli)
		str(12).Append(r.Class)
		str(13).Append(r.Queue)
		str(14).Append(r.User)
		i32(15).Append(r.Priority)
		str(16).Append(r.State)
		i32(17).Append(r.Preempt)
		str(18).Append(r.Nodes)
		str(19).Append(r.Span)
		appendOptFloat(f(20), r.Speed)
		f(21).Append(r.Wasted)
		f(22).Append(r.Overhead)
	}
}

// WriteEventsParquet writes the event log of res as events.parquet.
func WriteEventsParquet(w io.Writer, res *sim.Result) error {
	log := res.Log
	return writeParquet(w, eventsSchema, len(log), func(b *array.RecordBuilder, lo, hi int) {
		seq := b.Field(0).(*array.Int64Builder)
		ts := b.Field(1).(*array.Float64Builder)
		tus := b.Field(2).(*array.Int64Builder)
		kind := b.Field(3).(*array.StringBuilder)
		job := b.Field(4).(*array.StringBuilder)
		val := b.Field(5).(*array.Int64Builder)
		det := b.Field(6).(*array.StringBuilder)
		for i := lo; i < hi; i++ {
			e := &log[i]
			seq.Append(int64(i))
			ts.Append(secs(int64(e.Time)))
			tus.Append(int64(e.Time))
			kind.Append(e.Kind.String())
			if e.Job >= 0 && int(e.Job) < len(res.Jobs) {
				job.Append(string(res.Jobs[e.Job].Spec.ID))
			} else {
				job.Append("")
			}
			val.Append(e.Value)
			det.Append(EventDetail(e))
		}
	})
}

// WriteTimeseriesParquet writes res.Samples as timeseries.parquet.
func WriteTimeseriesParquet(w io.Writer, res *sim.Result) error {
	var capMilli float64
	if res.Cluster != nil {
		capMilli = 1000 * float64(res.Cluster.NumGPUs())
	}
	smp := res.Samples
	schema := timeseriesSchema
	if res.Sharing != nil {
		schema = timeseriesSharingSchema
	}
	return writeParquet(w, schema, len(smp), func(b *array.RecordBuilder, lo, hi int) {
		for i := lo; i < hi; i++ {
			s := &smp[i]
			b.Field(0).(*array.Float64Builder).Append(secs(int64(s.Time)))
			b.Field(1).(*array.Float64Builder).Append(float64(s.AllocMilli) / 1000)
			b.Field(2).(*array.Int32Builder).Append(s.BusyGPUs)
			u := 0.0
			if capMilli > 0 {
				u = float64(s.AllocMilli) / capMilli
			}
			b.Field(3).(*array.Float64Builder).Append(u)
			b.Field(4).(*array.Int32Builder).Append(s.Running)
			b.Field(5).(*array.Int32Builder).Append(s.Pending)
			b.Field(6).(*array.Int64Builder).Append(s.PendingGPUs)
			for l := 0; l < int(sim.NumLevels); l++ {
				b.Field(7 + l).(*array.Int32Builder).Append(s.LargestFree[l])
			}
			if res.Sharing != nil {
				appendSampleShareParquet(b, s, capMilli/1000)
			}
		}
	})
}

// readParquet reads a whole Parquet file, checks that it has the expected
// columns (by name and type), and calls fn for every row with the row group's
// column arrays. Reading is sequential on the caller's goroutine, so a panic of
// the Parquet decoder on corrupt input is turned into an error.
// parquetHasColumns reports whether the Parquet file at path starts with the
// columns of want (same names and types); false when it cannot be read (the
// reader that follows reports why).
func parquetHasColumns(path string, want *arrow.Schema) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		return false
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return false
	}
	got, err := fr.Schema()
	if err != nil || got.NumFields() < want.NumFields() {
		return false
	}
	for i, fd := range want.Fields() {
		if got.Field(i).Name != fd.Name || !arrow.TypeEqual(got.Field(i).Type, fd.Type) {
			return false
		}
	}
	return true
}

func readParquet(path string, want *arrow.Schema, fn func(cols []arrow.Array, i int)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: corrupt Parquet file: %v", path, r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		return fmt.Errorf("%s: not a Parquet file: %w", path, err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: rowGroupRows}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	got, err := fr.Schema()
	if err != nil {
		return fmt.Errorf("%s: schema: %w", path, err)
	}
	for i, f := range want.Fields() {
		if i >= got.NumFields() || got.Field(i).Name != f.Name || !arrow.TypeEqual(got.Field(i).Type, f.Type) {
			return fmt.Errorf("%s: column %d: want %s %s", path, i, f.Name, f.Type)
		}
	}
	ctx := context.Background()
	nc := want.NumFields()
	cols := make([]arrow.Array, nc)
	for rg := 0; rg < rdr.NumRowGroups(); rg++ {
		n := -1
		for c := 0; c < nc; c++ {
			ch, err := fr.RowGroup(rg).Column(c).Read(ctx)
			if err != nil {
				return fmt.Errorf("%s: row group %d, column %s: %w", path, rg, want.Field(c).Name, err)
			}
			arr, err := array.Concatenate(ch.Chunks(), memory.DefaultAllocator)
			ch.Release()
			if err != nil {
				return fmt.Errorf("%s: row group %d, column %s: %w", path, rg, want.Field(c).Name, err)
			}
			if n >= 0 && arr.Len() != n {
				return fmt.Errorf("%s: row group %d: column %s has %d rows, want %d", path, rg, want.Field(c).Name, arr.Len(), n)
			}
			n = arr.Len()
			cols[c] = arr
		}
		for i := 0; i < n; i++ {
			fn(cols, i)
		}
		for _, a := range cols {
			a.Release()
		}
	}
	return nil
}

// parquetColumns returns the number of leaf columns of a Parquet file.
func parquetColumns(path string) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: corrupt Parquet file: %v", path, r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		return 0, err
	}
	defer rdr.Close()
	return rdr.MetaData().Schema.NumColumns(), nil
}

func optFloat(a arrow.Array, i int) float64 {
	if a.IsNull(i) {
		return math.NaN()
	}
	return a.(*array.Float64).Value(i)
}

// ReadJobsParquet reads jobs.parquet back into rows.
func ReadJobsParquet(path string) ([]JobRow, error) {
	var rows []JobRow
	err := readParquet(path, jobsSchema, func(c []arrow.Array, i int) {
		f := func(k int) float64 { return c[k].(*array.Float64).Value(i) }
		n := func(k int) int32 { return c[k].(*array.Int32).Value(i) }
		s := func(k int) string { return c[k].(*array.String).Value(i) }
		rows = append(rows, JobRow{
			ID: s(0), Submit: f(1), Start: optFloat(c[2], i), End: optFloat(c[3], i),
			Wait: optFloat(c[4], i), JCT: optFloat(c[5], i), Run: f(6), Estimate: f(7),
			GPUs: n(8), GPUsPerRe: n(9), Replicas: n(10), GPUMilli: n(11),
			Class: s(12), Queue: s(13), User: s(14), Priority: n(15), State: s(16),
			Preempt: n(17), Nodes: s(18), Span: s(19), Speed: optFloat(c[20], i),
			Wasted: f(21), Overhead: f(22),
		})
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// EventDetail returns the detail column of an event: the wait reason's short
// name (sim.Reason.String) for wait events, "" for every other kind.
func EventDetail(e *sim.Event) string {
	if e.Kind == sim.EvWait {
		return sim.Reason(e.Value).String()
	}
	return ""
}

// EventRow is one row of events.parquet.
type EventRow struct {
	Seq    int64
	TimeS  float64
	TimeU  int64 // microseconds
	Kind   string
	JobID  string
	Value  int64
	Detail string // wait reason name for "wait" events; "" otherwise
}

// ReadEventsParquet reads events.parquet back. Files written before the detail
// column existed (six columns) are accepted; their Detail is derived from the
// value of wait events.
func ReadEventsParquet(path string) ([]EventRow, error) {
	schema := eventsSchema
	if n, err := parquetColumns(path); err == nil && n == eventsSchemaV0.NumFields() {
		schema = eventsSchemaV0
	}
	var rows []EventRow
	err := readParquet(path, schema, func(c []arrow.Array, i int) {
		r := EventRow{
			Seq: c[0].(*array.Int64).Value(i), TimeS: c[1].(*array.Float64).Value(i),
			TimeU: c[2].(*array.Int64).Value(i), Kind: c[3].(*array.String).Value(i),
			JobID: c[4].(*array.String).Value(i), Value: c[5].(*array.Int64).Value(i),
		}
		if len(c) > 6 {
			r.Detail = c[6].(*array.String).Value(i)
		} else if r.Kind == sim.EvWait.String() {
			r.Detail = sim.Reason(r.Value).String()
		}
		rows = append(rows, r)
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// SampleRow is one row of timeseries.parquet.
type SampleRow struct {
	TimeS         float64
	GPUsAllocated float64 // allocated milli-GPU / 1000
	BusyGPUs      int32
	Utilization   float64 // allocated milli-GPU / (1000 x capacity)
	Running       int32
	Pending       int32
	PendingGPUs   int64
	// LargestFree is, per topology level (nvlink, pcie, socket, node, leaf, spine),
	// the most whole free GPUs in one domain of that level.
	LargestFree [sim.NumLevels]int32
	// HasUseful: the run had device-level sharing on (docs/sharing.md) and the
	// file has its columns; UsefulUtilization is then the work done at reference
	// speed / capacity (useful_utilization), next to the allocated Utilization.
	HasUseful         bool
	UsefulUtilization float64
}

// ReadTimeseriesParquet reads timeseries.parquet back.
func ReadTimeseriesParquet(path string) ([]SampleRow, error) {
	var rows []SampleRow
	want := timeseriesSchema
	shared := parquetHasColumns(path, timeseriesSharingSchema)
	if shared {
		want = timeseriesSharingSchema
	}
	nBase := len(timeseriesSchema.Fields())
	err := readParquet(path, want, func(c []arrow.Array, i int) {
		rows = append(rows, SampleRow{
			TimeS: c[0].(*array.Float64).Value(i), GPUsAllocated: c[1].(*array.Float64).Value(i),
			BusyGPUs: c[2].(*array.Int32).Value(i), Utilization: c[3].(*array.Float64).Value(i),
			Running: c[4].(*array.Int32).Value(i), Pending: c[5].(*array.Int32).Value(i),
			PendingGPUs: c[6].(*array.Int64).Value(i),
		})
		r := &rows[len(rows)-1]
		for l := 0; l < int(sim.NumLevels); l++ {
			r.LargestFree[l] = c[7+l].(*array.Int32).Value(i)
		}
		if shared {
			r.HasUseful, r.UsefulUtilization = true, c[nBase+1].(*array.Float64).Value(i)
		}
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}
