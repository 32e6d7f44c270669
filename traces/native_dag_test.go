package traces

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/gpusim/gpusim/sim"
)

// The optional deps and job_name columns give jobs a sim.JobDAG; unknown IDs,
// self-dependencies and cycles are errors at file:line, column deps.
func TestNativeDAGColumns(t *testing.T) {
	d := t.TempDir()
	csv := filepath.Join(d, "j.csv")
	head := "id,submit_s,gpus,duration_s,deps,job_name\n"
	os.WriteFile(csv, []byte(head+"pre,0,1,10,,preprocess\ntrain,0,1,10, pre | pre ,train\neval,0,1,1,train|pre,\nx,0,1,1,,\n"), 0o644)
	jobs, err := readAll(t, csv)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]sim.JobSpec{}
	for _, j := range jobs {
		byID[string(j.ID)] = j
	}
	if d := byID["pre"].DAG; d == nil || d.Name != "preprocess" || len(d.Deps) != 0 {
		t.Errorf("pre: %+v", d)
	}
	if d := byID["train"].DAG; d == nil || d.Name != "train" || len(d.Deps) != 1 || d.Deps[0] != "pre" {
		t.Errorf("train: %+v", d)
	}
	if d := byID["eval"].DAG; d == nil || d.Name != "" || len(d.Deps) != 2 || d.Deps[0] != "train" || d.Deps[1] != "pre" {
		t.Errorf("eval: %+v", d)
	}
	if byID["x"].DAG != nil {
		t.Errorf("x: %+v, want no DAG", byID["x"].DAG)
	}
	for _, c := range []struct{ rows, want string }{
		{"a,0,1,1,b,\nb,0,1,1,zz,\n", "j.csv:3: column deps: unknown job \"zz\""},
		{"a,0,1,1,a,\n", "j.csv:2: column deps: job \"a\" depends on itself"},
		{"x,0,1,1,,\na,0,1,1,c,\nb,0,1,1,a,\nc,0,1,1,b,\n", "j.csv:3: column deps: dependency cycle: a -> c -> b -> a"},
	} {
		os.WriteFile(csv, []byte(head+c.rows), 0o644)
		_, err := readAll(t, csv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.rows, err, c.want)
		}
	}
}

// Parquet traces read the same columns and get the same graph check.
func TestNativeDAGParquet(t *testing.T) {
	write := func(deps []string) string {
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "submit_s", Type: arrow.PrimitiveTypes.Float64},
			{Name: "gpus", Type: arrow.PrimitiveTypes.Int32}, {Name: "duration_s", Type: arrow.PrimitiveTypes.Float64},
			{Name: "deps", Type: arrow.BinaryTypes.String}, {Name: "job_name", Type: arrow.BinaryTypes.String},
		}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.StringBuilder).AppendValues([]string{"p", "q"}, nil)
		b.Field(1).(*array.Float64Builder).AppendValues([]float64{0, 1}, nil)
		b.Field(2).(*array.Int32Builder).AppendValues([]int32{1, 1}, nil)
		b.Field(3).(*array.Float64Builder).AppendValues([]float64{5, 5}, nil)
		b.Field(4).(*array.StringBuilder).AppendValues(deps, nil)
		b.Field(5).(*array.StringBuilder).AppendValues([]string{"", "train"}, nil)
		return writeParquet(t, filepath.Join(t.TempDir(), "j.parquet"), b)
	}
	jobs, err := readAll(t, write([]string{"", "p"}))
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].DAG != nil || jobs[1].DAG == nil || jobs[1].DAG.Name != "train" || len(jobs[1].DAG.Deps) != 1 || jobs[1].DAG.Deps[0] != "p" {
		t.Errorf("jobs %+v %+v", jobs[0].DAG, jobs[1].DAG)
	}
	_, err = readAll(t, write([]string{"q", "p"}))
	if err == nil || !strings.Contains(err.Error(), "j.parquet:1: column deps: dependency cycle: p -> q -> p") {
		t.Errorf("error %v, want a cycle at row 1", err)
	}
}
