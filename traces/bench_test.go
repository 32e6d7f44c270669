package traces

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/sim"
)

// benchRows is the trace size of the conversion benchmark (GPUSIM_BENCH_ROWS,
// default 10,000,000).
func benchRows() int {
	if s := os.Getenv("GPUSIM_BENCH_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 10_000_000
}

// writeBenchCSV writes n native rows with realistic variety (queues, users, models,
// fractional and multi-replica jobs).
func writeBenchCSV(tb testing.TB, path string, n int) {
	err := fsutil.WriteFileAtomic(path, func(w io.Writer) error {
		cw := NewNativeCSVWriter(w)
		rng := sim.Stream(1, "bench")
		models := [][]string{nil, {"A100"}, {"V100M16", "V100M32"}, {"T4"}}
		classes := []sim.JobClass{sim.ClassTraining, sim.ClassExperiment, sim.ClassServing, sim.ClassUnknown}
		var t sim.Time
		for i := 0; i < n; i++ {
			t += sim.Time(rng.IntN(2_000_000))
			j := sim.JobSpec{ID: sim.JobID("job-" + strconv.Itoa(i)), Submit: t, Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000,
				Duration: sim.Duration(rng.Int64N(int64(24 * sim.Hour))), Queue: "vc" + strconv.Itoa(rng.IntN(16)),
				User: "u" + strconv.Itoa(rng.IntN(2000)), Class: classes[rng.IntN(len(classes))], GPUModels: models[rng.IntN(len(models))],
				CPUMilli: 4000, MemoryMiB: 16384, Priority: int32(rng.IntN(3))}
			switch k := rng.IntN(10); {
			case k < 3:
				j.GPUMilli = sim.MilliGPU(100 + rng.IntN(900))
			case k < 5:
				j.GPUsPerReplica = 8
				j.Replicas = int32(1 + rng.IntN(4))
			}
			if rng.IntN(2) == 0 {
				j.Walltime = j.Duration * 2
			}
			if err := cw.Write(&j); err != nil {
				return err
			}
		}
		return cw.Close()
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// peakRSS returns the process's peak resident set (VmHWM) in MiB, or -1.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytesReader(b))
	for sc.Scan() {
		var kb float64
		if _, err := fmt.Sscanf(sc.Text(), "VmHWM: %f kB", &kb); err == nil {
			return kb / 1024
		}
	}
	return -1
}

// BenchmarkConvert converts a native CSV of benchRows() rows to Parquet and replays
// it (streams every job back), reporting rows/s (wall clock) and CPU seconds of each
// step and the process's peak RSS.
// Run: GPUSIM_BENCH_ROWS=10000000 go test ./traces -run XXX -bench Convert -benchtime 1x
func BenchmarkConvert(b *testing.B) {
	n := benchRows()
	dir := b.TempDir()
	csvPath := filepath.Join(dir, "big.csv")
	writeBenchCSV(b, csvPath, n)
	fi, _ := os.Stat(csvPath)
	pq := filepath.Join(dir, "big.parquet")
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0, c0 := time.Now(), cpuTime()
		rep, err := ConvertFile(FormatNative, csvPath, pq, ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		conv, convCPU := time.Since(t0), cpuTime()-c0
		if rep.Imported != n {
			b.Fatalf("converted %d of %d", rep.Imported, n)
		}
		t1, c1 := time.Now(), cpuTime()
		r, err := OpenJobs(FormatNative, pq)
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		var demand int64
		for {
			j, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			demand += j.GPUDemandMilli()
			count++
		}
		r.Close()
		replay, replayCPU := time.Since(t1), cpuTime()-c1
		if count != n {
			b.Fatalf("replayed %d of %d", count, n)
		}
		b.ReportMetric(float64(n)/conv.Seconds(), "convert-rows/s")
		b.ReportMetric(float64(n)/replay.Seconds(), "replay-rows/s")
		b.ReportMetric(convCPU.Seconds(), "convert-cpu-s")
		b.ReportMetric(replayCPU.Seconds(), "replay-cpu-s")
	}
	b.StopTimer()
	pfi, _ := os.Stat(pq)
	b.ReportMetric(peakRSS(), "peakRSS-MiB")
	b.ReportMetric(float64(fi.Size())/(1<<20), "csv-MiB")
	b.ReportMetric(float64(pfi.Size())/(1<<20), "parquet-MiB")
}

func bytesReader(b []byte) io.Reader { return &sliceR{b: b} }

type sliceR struct{ b []byte }

func (s *sliceR) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}
