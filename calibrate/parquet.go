package calibrate

import (
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// SampleRow is one row of samples.parquet: an NVML sample plus the cell it was
// taken in (cell columns are omitted in telemetry files).
type SampleRow struct {
	Cell       string
	Mode       string
	Group      string // members joined by "+"
	Repetition int
	Phase      string // startup, warmup or measure
	Sample
}

// SampleColumns lists the Parquet columns written by WriteSamplesParquet, in
// order; the first five only when withCell is set. Documented in
// docs/calibrate.md.
func SampleColumns(withCell bool) []string {
	var cols []string
	for _, f := range sampleSchema(withCell).Fields() {
		cols = append(cols, f.Name)
	}
	return cols
}

func sampleSchema(withCell bool) *arrow.Schema {
	var fs []arrow.Field
	if withCell {
		fs = append(fs,
			arrow.Field{Name: "cell", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "mode", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "group", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "repetition", Type: arrow.PrimitiveTypes.Int32},
			arrow.Field{Name: "phase", Type: arrow.BinaryTypes.String},
		)
	}
	fs = append(fs,
		arrow.Field{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		arrow.Field{Name: "gpu", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "sm_util_pct", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "mem_util_pct", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "mem_used_mib", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "power_w", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "sm_clock_mhz", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "mem_clock_mhz", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "throttle_reasons", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "throttle_names", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "pcie_rx_kbps", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "pcie_tx_kbps", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "ecc_corrected", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "ecc_uncorrected", Type: arrow.PrimitiveTypes.Int64},
	)
	return arrow.NewSchema(fs, nil)
}

// SampleWriter streams sample rows into a Parquet file (Snappy compression),
// one row group per Flush (automatic every rowGroupRows rows), so long telemetry
// runs use bounded memory. Unsupported numeric fields are written as -1.
type SampleWriter struct {
	withCell bool
	b        *array.RecordBuilder
	fw       *pqarrow.FileWriter
	n        int
}

const rowGroupRows = 8192

// NewSampleWriter starts a Parquet file on w; withCell adds the five cell columns.
func NewSampleWriter(w io.Writer, withCell bool) (*SampleWriter, error) {
	schema := sampleSchema(withCell)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	return &SampleWriter{withCell: withCell, b: array.NewRecordBuilder(memory.NewGoAllocator(), schema), fw: fw}, nil
}

// Write appends rows in order.
func (sw *SampleWriter) Write(rows ...SampleRow) error {
	for _, r := range rows {
		i := 0
		next := func() array.Builder { f := sw.b.Field(i); i++; return f }
		if sw.withCell {
			next().(*array.StringBuilder).Append(r.Cell)
			next().(*array.StringBuilder).Append(r.Mode)
			next().(*array.StringBuilder).Append(r.Group)
			next().(*array.Int32Builder).Append(int32(r.Repetition))
			next().(*array.StringBuilder).Append(r.Phase)
		}
		s := r.Sample
		next().(*array.TimestampBuilder).Append(arrow.Timestamp(s.Time.UnixMicro()))
		next().(*array.Int32Builder).Append(int32(s.GPU))
		for _, v := range []float64{s.SMUtilPct, s.MemUtilPct, s.MemUsedMiB, s.PowerW, s.SMClockMHz, s.MemClockMHz, s.TempC} {
			next().(*array.Float64Builder).Append(v)
		}
		next().(*array.Int64Builder).Append(s.ThrottleReasons)
		next().(*array.StringBuilder).Append(ThrottleNames(s.ThrottleReasons))
		next().(*array.Float64Builder).Append(s.PCIeRxKBps)
		next().(*array.Float64Builder).Append(s.PCIeTxKBps)
		next().(*array.Int64Builder).Append(s.ECCCorrected)
		next().(*array.Int64Builder).Append(s.ECCUncorrected)
		sw.n++
		if sw.n >= rowGroupRows {
			if err := sw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush writes the buffered rows as a row group.
func (sw *SampleWriter) Flush() error {
	if sw.n == 0 {
		return nil
	}
	rec := sw.b.NewRecord()
	defer rec.Release()
	sw.n = 0
	if err := sw.fw.Write(rec); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}

// Close flushes and finishes the file (it does not close the underlying writer).
func (sw *SampleWriter) Close() error {
	defer sw.b.Release()
	err := sw.Flush()
	if cerr := sw.fw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("parquet: %w", cerr)
	}
	return err
}

// WriteSamplesParquet writes rows (in the given order) as one Parquet file.
func WriteSamplesParquet(w io.Writer, rows []SampleRow, withCell bool) error {
	sw, err := NewSampleWriter(w, withCell)
	if err != nil {
		return err
	}
	if err := sw.Write(rows...); err != nil {
		sw.Close()
		return err
	}
	return sw.Close()
}
