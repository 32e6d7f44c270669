package traces

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/gpusim/gpusim/sim"
)

func readAll(t *testing.T, path string) ([]sim.JobSpec, error) {
	t.Helper()
	r, err := OpenJobs(FormatNative, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []sim.JobSpec
	for {
		j, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, j)
	}
}

// writeParquet writes b's record (its schema and the values appended so far)
// to the Parquet file path and returns path.
func writeParquet(t *testing.T, path string, b *array.RecordBuilder) string {
	t.Helper()
	rec := b.NewRecord()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// The optional sharing columns are read from native CSV and Parquet; bad values
// name the file, line and column.
func TestNativeSharingColumns(t *testing.T) {
	d := t.TempDir()
	csv := filepath.Join(d, "j.csv")
	os.WriteFile(csv, []byte("id,submit_s,gpus,duration_s,sharing,gpu_mem_mib,mig_profile,sm_util,workload\n"+
		"a,0,1,10,any,16000,,0.4,resnet50\nb,1,1,10,mig,,1g.10gb,,\nc,2,4,10,,,,,\n"), 0o644)
	jobs, err := readAll(t, csv)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		sh      sim.JobSharing
		mem     int64
		mig, wl string
		smutil  float64
	}{{sim.AcceptAny, 16000, "", "resnet50", 0.4}, {sim.AcceptMIG, 0, "1g.10gb", "", 0}, {sim.AcceptExclusive, 0, "", "", 0}}
	for i, w := range want {
		j := jobs[i]
		if j.Sharing != w.sh || j.GPUMemMiB != w.mem || j.MIGProfile != w.mig || j.Workload != w.wl || j.SMUtil != w.smutil {
			t.Errorf("job %s: %v %d %q %q %v", j.ID, j.Sharing, j.GPUMemMiB, j.MIGProfile, j.Workload, j.SMUtil)
		}
	}
	for _, c := range []struct{ row, err string }{
		{"x,0,1,10,some,,,,", "j.csv:2: column sharing: unknown sharing"},
		{"x,0,1,10,any,-5,,,", "j.csv:2: column gpu_mem_mib: must be >= 0"},
		{"x,0,1,10,any,,,1.5,", "j.csv:2: column sm_util: must be in [0, 1]"},
		{"x,0,2,10,any,,,,", "j.csv:2: column sharing: a job that shares a GPU needs exactly 1 replica with 1 GPU"},
	} {
		os.WriteFile(csv, []byte("id,submit_s,gpus,duration_s,sharing,gpu_mem_mib,mig_profile,sm_util,workload\n"+c.row+"\n"), 0o644)
		if _, err := readAll(t, csv); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want %q", c.row, err, c.err)
		}
	}

	// Parquet with the native columns it needs and the sharing columns.
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "submit_s", Type: arrow.PrimitiveTypes.Float64},
		{Name: "gpus", Type: arrow.PrimitiveTypes.Int32}, {Name: "duration_s", Type: arrow.PrimitiveTypes.Float64},
		{Name: "sharing", Type: arrow.BinaryTypes.String}, {Name: "gpu_mem_mib", Type: arrow.PrimitiveTypes.Int64},
		{Name: "sm_util", Type: arrow.PrimitiveTypes.Float64}, {Name: "workload", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"p", "q"}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{0, 1}, nil)
	b.Field(2).(*array.Int32Builder).AppendValues([]int32{1, 1}, nil)
	b.Field(3).(*array.Float64Builder).AppendValues([]float64{5, 5}, nil)
	b.Field(4).(*array.StringBuilder).AppendValues([]string{"timeslice", ""}, nil)
	b.Field(5).(*array.Int64Builder).AppendValues([]int64{24000, 0}, nil)
	b.Field(6).(*array.Float64Builder).AppendValues([]float64{0.7, 0}, nil)
	b.Field(7).(*array.StringBuilder).AppendValues([]string{"lm", ""}, nil)
	jobs, err = readAll(t, writeParquet(t, filepath.Join(d, "j.parquet"), b))
	if err != nil {
		t.Fatal(err)
	}
	if j := jobs[0]; j.Sharing != sim.AcceptTimeSlice || j.GPUMemMiB != 24000 || j.SMUtil != 0.7 || j.Workload != "lm" {
		t.Errorf("parquet job p: %+v", j)
	}
	if j := jobs[1]; j.Sharing != sim.AcceptExclusive || j.Workload != "" {
		t.Errorf("parquet job q: %+v", j)
	}
}
