package scenarios

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func runDemoInto(t *testing.T, dir string, par int, sets []string, policies ...string) {
	t.Helper()
	sc, err := Demo(append([]string{"workload.synthetic.jobs=400"}, sets...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), sc, RunOptions{OutDir: dir, Parallel: par, Policies: policies}); err != nil {
		t.Fatal(err)
	}
}

func sameFiles(t *testing.T, a, b string, names ...string) {
	t.Helper()
	for _, n := range names {
		x, err := os.ReadFile(filepath.Join(a, n))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and %s", n, a, b)
		}
	}
}

// Same scenario + seed gives byte-identical jobs.csv and events.parquet: twice,
// under GOMAXPROCS=1 with one policy at a time, and each policy run alone.
func TestDeterminism(t *testing.T) {
	d := t.TempDir()
	runDemoInto(t, filepath.Join(d, "a"), 0, nil)
	runDemoInto(t, filepath.Join(d, "b"), 0, nil)
	prev := runtime.GOMAXPROCS(1)
	runDemoInto(t, filepath.Join(d, "c"), 1, nil)
	runtime.GOMAXPROCS(prev)
	runDemoInto(t, filepath.Join(d, "alone"), 0, nil, "easy-backfill")
	files := []string{"jobs.csv", "jobs.parquet", "events.parquet", "timeseries.parquet"}
	for _, pol := range []string{"fifo", "sjf", "easy-backfill", "conservative-backfill"} {
		sameFiles(t, filepath.Join(d, "a", pol), filepath.Join(d, "b", pol), files...)
		sameFiles(t, filepath.Join(d, "a", pol), filepath.Join(d, "c", pol), files...)
	}
	sameFiles(t, filepath.Join(d, "a", "easy-backfill"), filepath.Join(d, "alone", "easy-backfill"), files...)
	// A different seed gives a different workload.
	runDemoInto(t, filepath.Join(d, "s7"), 0, []string{"seed=7"}, "fifo")
	x, _ := os.ReadFile(filepath.Join(d, "a", "fifo", "jobs.csv"))
	y, _ := os.ReadFile(filepath.Join(d, "s7", "fifo", "jobs.csv"))
	if bytes.Equal(x, y) {
		t.Error("seed has no effect")
	}
}
