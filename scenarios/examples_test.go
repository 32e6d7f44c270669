package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
)

// Every example scenario loads, validates and runs.
func TestExamplesRun(t *testing.T) {
	files, _ := filepath.Glob("examples/*.yaml")
	if len(files) < 4 {
		t.Fatalf("expected the example scenarios, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := Load(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Experiment != nil {
				fr, err := RunFill(context.Background(), sc, RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range fr {
					if r.Summary.Fill.GPUAllocationRatio < 80 || len(r.Summary.Fill.Curve) != 131 {
						t.Errorf("%s: fill result %+v", r.Label, r.Summary.Fill.GPUAllocationRatio)
					}
				}
				return
			}
			// validate's start-up checks accept every example (no false alarm).
			if err := preflightOf(t, sc); err != nil {
				t.Fatalf("Preflight: %v", err)
			}
			runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				if r.Summary.Jobs.Completed == 0 {
					t.Errorf("%s: nothing completed", r.Label)
				}
			}
		})
	}
}

// Replaying every shared Philly VC with fifo and easy-backfill completes every job,
// and backfill's mean wait is never above FIFO's (issue 3 acceptance).
func TestPhillyVCsBackfillNeverWorse(t *testing.T) {
	base, err := os.ReadFile("examples/philly-vc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		vc    string
		nodes int
	}{{"ee9e8c", 40}, {"6214e9", 40}, {"ee9e8c", 16}, {"6214e9", 8}, {"51b7ef", 2}, {"23dbec", 1}, {"925e2b", 1}, {"795a4c", 1}} {
		vc := c.vc
		t.Run(fmt.Sprintf("%s/nodes=%d", vc, c.nodes), func(t *testing.T) {
			sc, err := Parse(base, "examples/philly-vc.yaml", []string{"workload.trace.filter.vcs=[" + vc + "]",
				fmt.Sprintf("cluster.pools[0].nodes=%d", c.nodes), "policies=[{name: fifo}, {name: easy-backfill}]"})
			if err != nil {
				t.Fatal(err)
			}
			// validate's start-up checks accept every example (no false alarm).
			if err := preflightOf(t, sc); err != nil {
				t.Fatalf("Preflight: %v", err)
			}
			runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				for i := range r.Result.Jobs {
					if j := &r.Result.Jobs[i]; j.State != sim.StateCompleted {
						t.Fatalf("%s: job %s ended %s", r.Label, j.Spec.ID, j.State)
					}
				}
			}
			fifo, easy := runs[0].Summary.WaitS.Mean, runs[1].Summary.WaitS.Mean
			t.Logf("VC %s: %d jobs, mean wait fifo %.0f s, easy-backfill %.0f s", vc, runs[0].Summary.Jobs.Total, fifo, easy)
			if easy > fifo {
				t.Errorf("VC %s: easy-backfill mean wait %.1f s > fifo %.1f s", vc, easy, fifo)
			}
		})
	}
}

// workload.trace.targetLoad resamples the trace to an offered load on the
// scenario's cluster (the loader passes the cluster size).
func TestTraceTargetLoad(t *testing.T) {
	base, err := os.ReadFile("examples/philly-vc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse(base, "examples/philly-vc.yaml", []string{"workload.trace.targetLoad=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := sc.Nodes()
	c, _ := sim.NewCluster(nodes)
	jobs, _, err := sc.Jobs(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := traces.OfferedLoad(jobs, c.NumGPUs()); got < 0.45 || got > 0.55 {
		t.Errorf("offered load %.3f, want about 0.5", got)
	}
}

// The openb-fgd example (issue 11, one placement layer): fifo + fgd against fifo +
// best-fit on the openb pod list. At its real creation/deletion times demand
// peaks at 66 of 6,212 GPUs, so every pod starts at creation under both; with
// arrivals 1000x compressed and 4 resampled copies (durations kept) the cluster
// contends and FGD's lower fragmentation shortens the mean wait.
func TestOpenBFGDExample(t *testing.T) {
	for _, tc := range []struct {
		sets  []string
		equal bool
	}{
		{nil, true},
		{[]string{"workload.trace.timeScale=0.001", "workload.trace.loadScale=4"}, false},
	} {
		sc, err := Load("examples/openb-fgd.yaml", tc.sets)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
		if err != nil {
			t.Fatal(err)
		}
		wait := map[string]float64{}
		for _, r := range runs {
			if r.Summary.Jobs.Completed != r.Summary.Jobs.Total {
				t.Fatalf("%v %s: %d of %d completed", tc.sets, r.Label, r.Summary.Jobs.Completed, r.Summary.Jobs.Total)
			}
			wait[r.Label] = r.Summary.WaitS.Mean
		}
		f, b := wait["fifo-fgd"], wait["fifo-best-fit"]
		t.Logf("%v: mean wait fgd %.1f s, best-fit %.1f s", tc.sets, f, b)
		if tc.equal && (f != 0 || b != 0) {
			t.Errorf("real times: mean waits %v, want 0 for both", wait)
		}
		if !tc.equal && !(f < 0.9*b) {
			t.Errorf("compressed: fgd mean wait %.1f s not 10%% below best-fit's %.1f s", f, b)
		}
	}
}
