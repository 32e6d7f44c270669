package scenarios

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
)

// The sia-elastic example (Sia's heterogeneous cluster, Pollux workload 3 as
// batch-size-adaptive elastic jobs): every job finishes under sia, pollux and
// optimus; the mean JCT orders sia < pollux < optimus (the paper's ordering,
// Sia Table 3); the adaptive policies change rates without resizes (AddRate)
// and Optimus never does; outputs are byte-identical in parallel and under
// GOMAXPROCS=1.
func TestSiaElasticExample(t *testing.T) {
	sc, err := Load("examples/sia-elastic.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	a, b := filepath.Join(d, "a"), filepath.Join(d, "b")
	runs, err := Run(context.Background(), sc, RunOptions{OutDir: a})
	if err != nil {
		t.Fatal(err)
	}
	mean := map[string]float64{}
	for _, r := range runs {
		name := r.Summary.Policy
		if r.Summary.Jobs.Completed != len(r.Result.Jobs) {
			t.Fatalf("%s: %d of %d completed", name, r.Summary.Jobs.Completed, len(r.Result.Jobs))
		}
		var sum float64
		rerates := int32(0)
		for i := range r.Result.Jobs {
			j := &r.Result.Jobs[i]
			sum += (j.End - j.Spec.Submit).Seconds()
			rerates += r.Result.Elastic.Rerates[i]
		}
		mean[name] = sum / float64(len(r.Result.Jobs))
		if (rerates == 0) != (name == "optimus") {
			t.Errorf("%s: %d rate changes", name, rerates)
		}
	}
	t.Logf("mean JCT: sia %.1f s, pollux %.1f s, optimus %.1f s", mean["sia"], mean["pollux"], mean["optimus"])
	if !(mean["sia"] < mean["pollux"] && mean["pollux"] < mean["optimus"]) {
		t.Errorf("mean JCT sia %.1f, pollux %.1f, optimus %.1f: want sia < pollux < optimus", mean["sia"], mean["pollux"], mean["optimus"])
	}
	prev := runtime.GOMAXPROCS(1)
	_, err = Run(context.Background(), sc, RunOptions{OutDir: b, Parallel: 1})
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []string{"sia", "pollux", "optimus"} {
		sameFiles(t, filepath.Join(a, pol), filepath.Join(b, pol), "jobs.csv", "elastic.csv", "events.parquet", "timeseries.parquet")
	}
}
