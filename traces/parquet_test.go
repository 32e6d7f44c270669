package traces

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
)

// More than two row groups round-trip exactly, in order.
func TestParquetManyRowGroups(t *testing.T) {
	n := 2*parquetBatch + 1234
	jobs := make([]sim.JobSpec, n)
	models := [][]string{nil, {"A100"}, {"V100M16", "V100M32"}}
	for i := range jobs {
		jobs[i] = sim.JobSpec{ID: sim.JobID("j" + strconv.Itoa(i)), Submit: sim.Time(i) * 1001, Replicas: 1, GPUsPerReplica: int32(i % 9),
			GPUMilli: 1000, Duration: sim.Duration(i%5000) * sim.Second, Queue: "q" + strconv.Itoa(i%7), Class: sim.Classes[i%len(sim.Classes)],
			GPUModels: models[i%3], CPUMilli: int64(i), MemoryMiB: int64(2 * i), Priority: int32(i % 3), Walltime: sim.Duration(i % 2 * 77)}
		if jobs[i].GPUsPerReplica == 1 && i%2 == 0 {
			jobs[i].GPUMilli = sim.MilliGPU(1 + i%999)
		}
		if len(jobs[i].GPUModels) == 0 {
			jobs[i].GPUModels = nil
		}
	}
	p := filepath.Join(t.TempDir(), "many.parquet")
	if k, err := WriteNativeFile(p, SliceReader(jobs)); err != nil || k != n {
		t.Fatalf("%d %v", k, err)
	}
	back, rep, err := ReadJobs(FormatNative, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows != n {
		t.Fatal(rep)
	}
	if d := cmp.Diff(jobs, back); d != "" {
		t.Fatal(d)
	}
}

type brokenWriter struct{ n int }

func (b *brokenWriter) Write(p []byte) (int, error) {
	b.n += len(p)
	if b.n > 1<<16 {
		return 0, errors.New("device full")
	}
	return len(p), nil
}

// An I/O error while encoding surfaces from Write or Close.
func TestParquetWriteError(t *testing.T) {
	w, err := NewNativeParquetWriter(&brokenWriter{})
	if err != nil {
		t.Fatal(err)
	}
	j := sim.JobSpec{ID: "x", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000, Class: sim.ClassUnknown}
	var werr error
	for i := 0; i < 3*parquetBatch && werr == nil; i++ {
		j.ID = sim.JobID("x" + strconv.Itoa(i))
		werr = w.Write(&j)
	}
	cerr := w.Close()
	if werr == nil && cerr == nil {
		t.Fatal("no error")
	}
}
