package reports

import (
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/gpusim/gpusim/sim"
)

// parquetProps are the writer properties of every gpusim Parquet file with the
// given schema (see writeParquet).
func parquetProps(schema *arrow.Schema) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(rowGroupRows),
		parquet.WithCreatedBy(createdBy),
		parquet.WithDictionaryDefault(false),
		parquet.WithAllocator(parquetAlloc),
	}
	for _, f := range schema.Fields() {
		if dictCols[f.Name] {
			opts = append(opts, parquet.WithDictionaryFor(f.Name, true))
		}
	}
	return parquet.NewWriterProperties(opts...)
}

// writeParquetColumns writes the same file as writeParquet (row groups of
// rowGroupRows rows; one empty row group when n is 0) but builds one column of
// one row group at a time, so only that column's values are in memory
// (pqarrow.FileWriter.Write is NewRowGroup plus WriteColumnData per column, which
// this does directly). For each row group [lo, hi) it calls group(lo, hi) once
// (group may be nil), then col(c, b, lo, hi) for every column c in schema order;
// col appends hi-lo values to b, a builder of column c's type.
func writeParquetColumns(w io.Writer, schema *arrow.Schema, n int, group func(lo, hi int), col func(c int, b array.Builder, lo, hi int)) error {
	return writeParquetColumnsFrom(w, schema, func(int) (int, error) { return n, nil }, group, col)
}

// writeParquetColumnsFrom is writeParquetColumns over rows that become
// available while it writes (see writeRowGroupsFrom).
func writeParquetColumnsFrom(w io.Writer, schema *arrow.Schema, avail func(want int) (int, error), group func(lo, hi int), col func(c int, b array.Builder, lo, hi int)) error {
	return writeRowGroupsFrom(w, schema, avail, func(fw *pqarrow.FileWriter, lo, hi int) error {
		if group != nil {
			group(lo, hi)
		}
		fw.NewRowGroup()
		for c, f := range schema.Fields() {
			b := array.NewBuilder(builderAlloc(f.Type), f.Type)
			b.Reserve(hi - lo)
			col(c, b, lo, hi)
			arr := b.NewArray()
			b.Release()
			err := fw.WriteColumnData(arr)
			arr.Release()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// builderAlloc is the allocator of a column builder of type t: the pool for
// fixed-width numbers, whose values the writer copies (plain encoding,
// statistics by value), so their buffers can be reused for the next column
// instead of allocating ~0.5 GB for a 1M-job run; the Go allocator for
// strings, since the writer may keep references into a byte-array column
// (statistics, dictionary) after the array is released.
func builderAlloc(t arrow.DataType) memory.Allocator {
	switch t.ID() {
	case arrow.INT32, arrow.INT64, arrow.FLOAT64:
		return parquetAlloc
	}
	return memory.DefaultAllocator
}

// jobColumns append one jobs.parquet column (by index in jobsSchema) of rows.
var jobColumns = [...]func(b array.Builder, rows []JobRow){
	strCol(func(r *JobRow) string { return r.ID }),
	f64Col(func(r *JobRow) float64 { return r.Submit }),
	optF64Col(func(r *JobRow) float64 { return r.Start }),
	optF64Col(func(r *JobRow) float64 { return r.End }),
	optF64Col(func(r *JobRow) float64 { return r.Wait }),
	optF64Col(func(r *JobRow) float64 { return r.JCT }),
	f64Col(func(r *JobRow) float64 { return r.Run }),
	f64Col(func(r *JobRow) float64 { return r.Estimate }),
	i32Col(func(r *JobRow) int32 { return r.GPUs }),
	i32Col(func(r *JobRow) int32 { return r.GPUsPerRe }),
	i32Col(func(r *JobRow) int32 { return r.Replicas }),
	i32Col(func(r *JobRow) int32 { return r.GPUMilli }),
	strCol(func(r *JobRow) string { return r.Class }),
	strCol(func(r *JobRow) string { return r.Queue }),
	strCol(func(r *JobRow) string { return r.User }),
	i32Col(func(r *JobRow) int32 { return r.Priority }),
	strCol(func(r *JobRow) string { return r.State }),
	i32Col(func(r *JobRow) int32 { return r.Preempt }),
	strCol(func(r *JobRow) string { return r.Nodes }),
	strCol(func(r *JobRow) string { return r.Span }),
	optF64Col(func(r *JobRow) float64 { return r.Speed }),
	f64Col(func(r *JobRow) float64 { return r.Wasted }),
	f64Col(func(r *JobRow) float64 { return r.Overhead }),
}

// strCol reserves the column's bytes first: letting the value buffer grow by
// doubling would copy it and leave the smaller copies as garbage.
func strCol(get func(*JobRow) string) func(array.Builder, []JobRow) {
	return func(b array.Builder, rows []JobRow) {
		sb := b.(*array.StringBuilder)
		n := 0
		for i := range rows {
			n += len(get(&rows[i]))
		}
		sb.ReserveData(n)
		for i := range rows {
			sb.Append(get(&rows[i]))
		}
	}
}

func f64Col(get func(*JobRow) float64) func(array.Builder, []JobRow) {
	return func(b array.Builder, rows []JobRow) {
		fb := b.(*array.Float64Builder)
		for i := range rows {
			fb.Append(get(&rows[i]))
		}
	}
}

// optF64Col is f64Col with NaN written as null.
func optF64Col(get func(*JobRow) float64) func(array.Builder, []JobRow) {
	return func(b array.Builder, rows []JobRow) {
		fb := b.(*array.Float64Builder)
		for i := range rows {
			appendOptFloat(fb, get(&rows[i]))
		}
	}
}

func i32Col(get func(*JobRow) int32) func(array.Builder, []JobRow) {
	return func(b array.Builder, rows []JobRow) {
		ib := b.(*array.Int32Builder)
		for i := range rows {
			ib.Append(get(&rows[i]))
		}
	}
}

// writeJobsParquetOf writes the job rows of res as jobs.parquet; the bytes equal
// WriteJobsParquet(w, JobRows(res)). It holds the rows of one row group and one
// column's values at a time.
func writeJobsParquetOf(w io.Writer, res *sim.Result) error {
	var rows []JobRow
	extra := extraJobColumns(res.Sharing != nil, res.Failures != nil, res.Power != nil, res.Storage != nil)
	schema := jobsSchemaWith(res.Sharing != nil, res.Failures != nil, res.Power != nil, res.Storage != nil)
	return writeParquetColumns(w, schema, len(res.Jobs),
		func(lo, hi int) { rows = appendJobRows(rows[:0], res, lo, hi) },
		func(c int, b array.Builder, _, _ int) {
			if c < len(jobColumns) {
				jobColumns[c](b, rows)
			} else {
				extra[c-len(jobColumns)](b, rows)
			}
		})
}

// jobsSchemaWith is jobs.parquet's schema: jobsSchema, then the extra column
// groups that are on, in the fixed order sharing, failures, power, checkpoint
// I/O (the order of jobs.csv's columns).
func jobsSchemaWith(share, fail, power, ckpt bool) *arrow.Schema {
	if !share && !fail && !power && !ckpt {
		return jobsSchema
	}
	n := len(jobsSchema.Fields())
	fields := append([]arrow.Field(nil), jobsSchema.Fields()...)
	if share {
		fields = append(fields, jobsSharingSchema.Fields()[n:]...)
	}
	if fail {
		fields = append(fields, jobsFailureSchema.Fields()[n:]...)
	}
	if power {
		fields = append(fields, jobsPowerSchema.Fields()[n:]...)
	}
	if ckpt {
		fields = append(fields, jobsCkptSchema.Fields()[n:]...)
	}
	return arrow.NewSchema(fields, nil)
}

// extraJobColumns lists the column writers of the extra groups that are on, in
// jobsSchemaWith's order.
func extraJobColumns(share, fail, power, ckpt bool) []func(b array.Builder, rows []JobRow) {
	var cols []func(b array.Builder, rows []JobRow)
	if share {
		cols = append(cols, sharingJobColumns[:]...)
	}
	if fail {
		cols = append(cols, failureJobColumns[:]...)
	}
	if power {
		cols = append(cols, powerJobColumns[:]...)
	}
	if ckpt {
		cols = append(cols, ckptJobColumns[:]...)
	}
	return cols
}

// sharingJobColumns append the extra jobs.parquet columns of runs with GPU
// sharing (jobsSharingSchema after jobsSchema).
var sharingJobColumns = [...]func(b array.Builder, rows []JobRow){
	optF64Col(func(r *JobRow) float64 { return r.Share.MeanSpeed }),
	optF64Col(func(r *JobRow) float64 { return r.Share.MinSpeed }),
	f64Col(func(r *JobRow) float64 { return r.Share.SharedS }),
}

// writeEventsParquetColumns writes the event log of res as events.parquet; the
// bytes equal WriteEventsParquet's. It holds one column of one row group at a
// time.
func writeEventsParquetColumns(w io.Writer, res *sim.Result) error {
	return writeEventsFrom(w, res.Jobs, func(int) ([]sim.Event, error) { return res.Log, nil })
}

// WriteEventsFeed writes events.parquet from feed while the engine that feeds
// it runs (call it after NewEngine); the bytes are those WriteRunDir writes for
// the finished run. It returns sim.ErrRunAborted if the run failed.
func WriteEventsFeed(w io.Writer, feed *sim.LogFeed) error {
	return writeEventsFrom(w, feed.Jobs(), func(want int) ([]sim.Event, error) {
		log, _, err := feed.Wait(want)
		return log, err
	})
}

// writeEventsFrom writes events.parquet from the log that logAt(want) returns:
// at least want events, or the whole log once the run has ended.
func writeEventsFrom(w io.Writer, jobs []sim.Job, logAt func(want int) ([]sim.Event, error)) error {
	var log []sim.Event
	avail := func(want int) (int, error) {
		l, err := logAt(want)
		if err != nil {
			return 0, err
		}
		log = l
		return len(log), nil
	}
	return writeParquetColumnsFrom(w, eventsSchema, avail, nil, func(c int, b array.Builder, lo, hi int) {
		evs := log[lo:hi]
		switch c {
		case 0: // seq
			ib := b.(*array.Int64Builder)
			for i := lo; i < hi; i++ {
				ib.Append(int64(i))
			}
		case 1: // time_s
			fb := b.(*array.Float64Builder)
			for i := range evs {
				fb.Append(secs(int64(evs[i].Time)))
			}
		case 2: // time_us
			ib := b.(*array.Int64Builder)
			for i := range evs {
				ib.Append(int64(evs[i].Time))
			}
		case 3: // kind
			sb := b.(*array.StringBuilder)
			n := 0
			for i := range evs {
				n += len(evs[i].Kind.String())
			}
			sb.ReserveData(n)
			for i := range evs {
				sb.Append(evs[i].Kind.String())
			}
		case 4: // job_id
			sb := b.(*array.StringBuilder)
			n := 0
			for i := range evs {
				if j := evs[i].Job; j >= 0 && int(j) < len(jobs) {
					n += len(jobs[j].Spec.ID)
				}
			}
			sb.ReserveData(n)
			for i := range evs {
				if j := evs[i].Job; j >= 0 && int(j) < len(jobs) {
					sb.Append(string(jobs[j].Spec.ID))
				} else {
					sb.Append("")
				}
			}
		case 5: // value
			ib := b.(*array.Int64Builder)
			for i := range evs {
				ib.Append(evs[i].Value)
			}
		case 6: // detail
			sb := b.(*array.StringBuilder)
			n := 0
			for i := range evs {
				n += len(EventDetail(&evs[i]))
			}
			sb.ReserveData(n)
			for i := range evs {
				sb.Append(EventDetail(&evs[i]))
			}
		default:
			panic(fmt.Sprintf("events.parquet has no column %d", c))
		}
	})
}
