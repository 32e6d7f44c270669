package scenarios

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
)

// The co-location examples (issue 12: gandiva, antman, lucid) give
// byte-identical outputs for the same scenario and seed, run in parallel and
// one policy at a time.
func TestColocationExamplesDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three example scenarios twice")
	}
	for _, name := range []string{"gandiva-packing", "antman-opportunistic", "lucid-affinity"} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join("examples", name+".yaml")
			d := t.TempDir()
			for _, sub := range []string{"a", "b"} {
				sc, err := Load(f, nil)
				if err != nil {
					t.Fatal(err)
				}
				par := 0
				if sub == "b" {
					prev := runtime.GOMAXPROCS(1)
					defer runtime.GOMAXPROCS(prev)
					par = 1
				}
				if _, err := Run(context.Background(), sc, RunOptions{OutDir: filepath.Join(d, sub), Parallel: par}); err != nil {
					t.Fatal(err)
				}
			}
			sc, _ := Load(f, nil)
			for _, p := range sc.Policies {
				l := p.Label
				if l == "" {
					l = p.Name
				}
				sameFiles(t, filepath.Join(d, "a", l), filepath.Join(d, "b", l), "jobs.csv", "events.parquet", "summary.json")
			}
		})
	}
}

// Direction check on the examples' workload (60% shareable 1-GPU jobs):
// gandiva and lucid beat exclusive FIFO (non-blocking, whole GPUs) on mean
// JCT; antman's guarantee jobs finish sooner than under exclusive FIFO.
func TestColocationBeatsExclusiveFIFO(t *testing.T) {
	if testing.Short() {
		t.Skip("runs example scenarios")
	}
	run := func(file string, sets ...string) map[string]float64 {
		sc, err := Load(filepath.Join("examples", file), sets)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, r := range runs {
			out[r.Label] = r.Summary.JCTS.Mean
			var sum float64
			var n int
			for i := range r.Result.Jobs {
				if j := &r.Result.Jobs[i]; j.Spec.Class == "training" {
					sum += j.End.Sub(j.Spec.Submit).Seconds()
					n++
				}
			}
			out[r.Label+"/training"] = sum / float64(n)
		}
		return out
	}
	excl := run("gandiva-packing.yaml", "cluster.pools[0].sharing.mode=exclusive", "policies=[{name: fifo, params: {strict: false}}]")
	base := excl["fifo"]
	g := run("gandiva-packing.yaml", "policies=[{name: gandiva}]")
	l := run("lucid-affinity.yaml", "policies=[{name: lucid}]")
	a := run("antman-opportunistic.yaml", "policies=[{name: antman, params: {opportunisticClasses: [experiment]}}]")
	t.Logf("mean JCT: exclusive fifo %.0f s, gandiva %.0f s, lucid %.0f s; training jobs: exclusive fifo %.0f s, antman guarantee %.0f s",
		base, g["gandiva"], l["lucid"], excl["fifo/training"], a["antman/training"])
	if !(g["gandiva"] < base) || !(l["lucid"] < base) {
		t.Errorf("co-location does not beat exclusive fifo: gandiva %v lucid %v fifo %v", g["gandiva"], l["lucid"], base)
	}
	if !(a["antman/training"] < excl["fifo/training"]) {
		t.Errorf("antman guarantee jobs %v s, exclusive fifo %v s", a["antman/training"], excl["fifo/training"])
	}
}
