package pollux_test

import (
	"testing"

	"github.com/gpusim/gpusim/policies/pollux"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
	"github.com/gpusim/gpusim/traces"
	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// engineOptimusMeanJCT runs the engine's Optimus on workload w of a load (the
// artifact's cluster: 16 nodes × 4 GPUs, 60 s rounds, 30 s restarts) and
// returns the mean JCT in seconds.
func engineOptimusMeanJCT(tb testing.TB, load string, w int) float64 {
	tb.Helper()
	pol, err := pollux.NewEngineOptimus(pollux.EngineParams{})
	if err != nil {
		tb.Fatal(err)
	}
	return engineMeanJCT(tb, pol, traces.FormatPolluxElastic, load, w)
}

// TestEngineOptimusFidelity: the engine's Optimus on elastic gangs (format
// pollux-elastic) within 10 % of the published means on every workload of
// both loads; the log lines give the table of docs/elastic.md (engine,
// standalone reproduction, published).
func TestEngineOptimusFidelity(t *testing.T) {
	ws := []int{1, 2, 3, 4, 5, 6, 7, 8}
	if testing.Short() {
		ws = []int{6}
	}
	for _, load := range pollux.Loads {
		for _, w := range ws {
			jobs, err := pollux.ArtifactWorkload(load, w)
			if err != nil {
				t.Fatal(err)
			}
			std, err := pollux.Simulate(jobs, "optimus", pollux.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			got := engineOptimusMeanJCT(t, load, w)
			pub := pollux.Published[[2]string{"optimus", load}][w-1]
			t.Logf("load %s workload-%d: engine %.1f s, standalone %.1f s (%+.1f %%), published %.1f s (%+.1f %%)", load, w, got, std.MeanJCT(), 100*(got/std.MeanJCT()-1), pub, 100*(got/pub-1))
			if d := got/pub - 1; d > 0.10 || d < -0.10 {
				t.Errorf("load %s workload-%d: engine Optimus mean JCT %.1f s, published %.1f s (%+.1f %%)", load, w, got, pub, 100*d)
			}
		}
	}
}

// BenchmarkEngineOptimus runs the engine's Optimus on all 8 load-1.0
// workloads (elastic gangs, 60 s rounds) and reports the mean JCT ratio to
// the published one.
func BenchmarkEngineOptimus(b *testing.B) {
	for b.Loop() {
		r := 0.0
		for w := 1; w <= 8; w++ {
			r += engineOptimusMeanJCT(b, "1.0", w) / pollux.Published[[2]string{"optimus", "1.0"}][w-1] / 8
		}
		b.ReportMetric(r, "optimus/published")
	}
}

// TestEngineOptimusFirstRound: the hand-worked marginal-gain allocation of
// TestOptimusMarginalGainByHand (bert batch 12 and bert batch 24 on 4 GPUs →
// 2 and 2) is what the engine policy starts at its first round (t = 60 s),
// on elastic gangs read through pollux.ElasticModel.
func TestEngineOptimusFirstRound(t *testing.T) {
	var jobs []sim.JobSpec
	for _, c := range []struct {
		id    string
		batch int
	}{{"a", 12}, {"b", 24}} {
		m, err := pm.NewElasticModel(pm.Job{Name: c.id, App: "bert", Replicas: 1, BatchSize: c.batch}, 4)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, sim.JobSpec{ID: sim.JobID(c.id), Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: m.Duration(),
			Elastic: &sim.ElasticSpec{Min: 1, Max: int32(pollux.OptimusMaxReplicas(m.App, c.batch)), Step: 1, Rate: m}})
	}
	pol, err := pollux.NewEngineOptimus(pollux.EngineParams{})
	if err != nil {
		t.Fatal(err)
	}
	delay := 30 * sim.Second
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(1, 4)), Jobs: jobs, Policy: pol, RescaleDelay: &delay, CheckpointRestore: delay})
	for i := range res.Jobs {
		segs := res.Elastic.Segs[i]
		if len(segs) == 0 || segs[0].At != sim.Time(60*sim.Second) || segs[0].Replicas != 2 {
			t.Errorf("job %s: first segment %v, want 2 replicas from 60s", res.Jobs[i].Spec.ID, segs)
		}
		if res.Jobs[i].State != sim.StateCompleted {
			t.Errorf("job %s: %s", res.Jobs[i].Spec.ID, res.Jobs[i].State)
		}
	}
}

// TestEngineOptimusGeneric: Optimus's rule on elastic jobs without a Pollux
// model, worked by hand. Jobs a (100 s of work at its preferred 1 replica)
// and b (400 s), linear rate, sizes 1..4, 4 GPUs, first round at 60 s (no
// work done yet). One replica each, 2 GPUs left. Remaining time on k
// replicas is work/k:
//
//	a 1→2: 100 − 50 = 50    b 1→2: 400 − 200 = 200  → b gets the third GPU
//	a 1→2: 50               b 2→3: 200 − 133.3 = 66.7 → b gets the fourth
//
// so a runs on 1 replica and b on 3.
func TestEngineOptimusGeneric(t *testing.T) {
	job := func(id string, dur float64) sim.JobSpec {
		s := simtest.MakeJob(id).GPUs(1).Replicas(1).Dur(dur).Obj()
		s.Elastic = &sim.ElasticSpec{Min: 1, Max: 4, Step: 1}
		return s
	}
	pol, err := pollux.NewEngineOptimus(pollux.EngineParams{})
	if err != nil {
		t.Fatal(err)
	}
	delay := 10 * sim.Second
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(1, 4)), Jobs: []sim.JobSpec{job("a", 100), job("b", 400)},
		Policy: pol, RescaleDelay: &delay, Oracle: true})
	for i, want := range []int32{1, 3} {
		segs := res.Elastic.Segs[i]
		if len(segs) == 0 || segs[0].At != sim.Time(60*sim.Second) || segs[0].Replicas != want {
			t.Errorf("job %s: first segment %v, want %d replicas from 60s", res.Jobs[i].Spec.ID, segs, want)
		}
	}
	// a ends at 160 s; at the round of 180 s b (400 − 3·120 = 40 s of work
	// left at rate 3) grows to 4: 40/3 − 40/4 > 0.
	if a := &res.Jobs[0]; a.End != sim.Time(160*sim.Second) {
		t.Errorf("a ends at %s, want 160s", a.End)
	}
	if segs := res.Elastic.Segs[1]; len(segs) < 2 || segs[1].At != sim.Time(180*sim.Second) || segs[1].Replicas != 4 {
		t.Errorf("b's segments %v, want 4 replicas from 180s", segs)
	}
}
