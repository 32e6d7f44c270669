package workloads

import (
	"errors"
	"math"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

func near(t *testing.T, what string, got, want, relTol float64) {
	t.Helper()
	if math.Abs(got-want) > relTol*math.Abs(want) {
		t.Errorf("%s: got %.4g, want %.4g +-%.0f%%", what, got, want, relTol*100)
	}
}

func nearAbs(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s: got %.4g, want %.4g +-%.3g", what, got, want, tol)
	}
}

func distWeight[T comparable](d Dist[T], v T) float64 {
	var tot, w float64
	for i, x := range d.Values {
		wi := 1.0
		if len(d.Weights) == len(d.Values) {
			wi = d.Weights[i]
		}
		tot += wi
		if x == v {
			w = wi
		}
	}
	if tot == 0 {
		return 0
	}
	return w / tot
}

// Generate from known parameters, fit, and compare the parameters.
func TestFitRoundTrip(t *testing.T) {
	truth := DefaultSynthetic()
	truth.Jobs = 30000
	truth.Arrival = Arrival{Process: ProcessDiurnal, PeakToTrough: 3, PeriodS: DefaultPeriodS, PeakHour: 15}
	truth.UserSkew = 1.2
	// Wide duration bounds so truncation does not bias the log-normal fit.
	for i := range truth.Classes {
		truth.Classes[i].Duration.MinS = 1
		truth.Classes[i].Duration.MaxS = 1e7
	}
	jobs := gen(t, truth, 42, 256, 8)
	fit, err := Fit(jobs)
	if err != nil {
		t.Fatal(err)
	}
	if fit.Jobs != truth.Jobs {
		t.Errorf("jobs %d, want %d", fit.Jobs, truth.Jobs)
	}
	if fe := fit.Validate(); len(fe) > 0 {
		t.Fatalf("fit invalid: %v", fe)
	}
	if fit.Arrival.Process != ProcessDiurnal {
		t.Fatalf("arrival process %q, want diurnal", fit.Arrival.Process)
	}
	near(t, "peakToTrough", fit.Arrival.PeakToTrough, 3, 0.15)
	if st, _ := Stats(jobs); st.DiurnalScore < 10*DiurnalScoreMin {
		t.Errorf("diurnal score %.1f is weak", st.DiurnalScore)
	}
	nearAbs(t, "peakHour", fit.Arrival.PeakHour, 15, 0.5)
	nearAbs(t, "userSkew", fit.UserSkew, 1.2, 0.3)

	byClass := map[string]ClassMix{}
	for _, c := range fit.Classes {
		byClass[c.Class] = c
	}
	if len(byClass) != len(truth.Classes) {
		t.Fatalf("fitted %d classes, want %d", len(byClass), len(truth.Classes))
	}
	for _, want := range truth.Classes {
		got, ok := byClass[want.Class]
		if !ok {
			t.Errorf("class %s missing", want.Class)
			continue
		}
		nearAbs(t, want.Class+" weight", got.Weight, want.Weight, 0.015)
		for _, v := range want.GPUs.Values {
			nearAbs(t, want.Class+" gpus share", distWeight(got.GPUs, v), distWeight(want.GPUs, v), 0.03)
		}
		for _, v := range want.GPUMilli.Values {
			nearAbs(t, want.Class+" gpuMilli share", distWeight(got.GPUMilli, v), distWeight(want.GPUMilli, v), 0.04)
		}
		near(t, want.Class+" median", float64(got.Duration.MedianS), float64(want.Duration.MedianS), 0.06)
		near(t, want.Class+" sigma", got.Duration.Sigma, want.Duration.Sigma, 0.05)
		near(t, want.Class+" factorMin", got.Walltime.FactorMin, want.Walltime.FactorMin, 0.1)
		near(t, want.Class+" factorMax", got.Walltime.FactorMax, want.Walltime.FactorMax, 0.1)
		if got.Walltime.RoundToS != want.Walltime.RoundToS {
			t.Errorf("%s roundToS %g, want %g", want.Class, got.Walltime.RoundToS, want.Walltime.RoundToS)
		}
		if *got.Priority != *want.Priority {
			t.Errorf("%s priority %d, want %d", want.Class, *got.Priority, *want.Priority)
		}
		if got.CPUMilliPerGPU != want.CPUMilliPerGPU || got.MemoryMiBPerGPU != want.MemoryMiBPerGPU {
			t.Errorf("%s cpu/mem per GPU %d/%d, want %d/%d", want.Class, got.CPUMilliPerGPU, got.MemoryMiBPerGPU, want.CPUMilliPerGPU, want.MemoryMiBPerGPU)
		}
	}
	// Teams: same names, shares and user counts (every user is active at 30k jobs).
	if len(fit.Teams) != len(truth.Teams) {
		t.Fatalf("teams %v", fit.Teams)
	}
	want := map[string]TeamMix{}
	for _, tm := range truth.Teams {
		want[tm.Name] = tm
	}
	for _, tm := range fit.Teams {
		w := want[tm.Name]
		if tm.Users != w.Users {
			t.Errorf("team %s users %d, want %d", tm.Name, tm.Users, w.Users)
		}
	}
	// Team job shares depend on the class restrictions; compare with the trace.
	if byClass["serving"].Weight > 0 {
		for _, tm := range fit.Teams {
			if tm.Name == "vision" && len(tm.Classes) != 4 {
				t.Errorf("vision classes %v, want the 4 research classes", tm.Classes)
			}
		}
	}

	// The fitted workload regenerates a trace with the same load on the same cluster.
	st, err := Stats(jobs)
	if err != nil {
		t.Fatal(err)
	}
	fit.Load = st.Load(256)
	near(t, "trace load", fit.Load, truth.Load, 0.05)
	again, err := fit.Generate(7, 256, 8)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "regenerated load", OfferedLoad(again, 256), truth.Load, 0.06)
}

func TestFitPoissonAndRate(t *testing.T) {
	s := Synthetic{Jobs: 5000, Classes: []ClassMix{{Class: "experiment", Weight: 1,
		GPUs: Dist[int32]{Values: []int32{2}}, Duration: LogNormal{MedianS: 3600, Sigma: 0.5}}}}
	jobs := gen(t, s, 1, 64, 8)
	fit, err := Fit(jobs)
	if err != nil {
		t.Fatal(err)
	}
	if fit.Arrival.Process != ProcessPoisson {
		t.Errorf("process %q, want poisson", fit.Arrival.Process)
	}
	st, _ := Stats(jobs)
	near(t, "gap CV", st.GapCV, 1, 0.05)
	if st.DiurnalScore > DiurnalScoreMin {
		t.Errorf("poisson trace has a significant daily cycle: score %.1f", st.DiurnalScore)
	}
	// rate = jobs*load*G/D; D ~ jobs * 2 GPUs * mean duration.
	near(t, "load", st.Load(64), DefaultLoad, 0.05)
	if len(fit.Classes) != 1 || fit.Classes[0].GPUs.Values[0] != 2 {
		t.Errorf("classes %+v", fit.Classes)
	}
	if len(fit.Queues) != 1 || fit.Queues[0].Name != DefaultQueue || fit.Queues[0].Classes != nil {
		t.Errorf("queues %+v", fit.Queues)
	}
}

func TestFitErrors(t *testing.T) {
	if _, err := Fit(nil); !errors.Is(err, ErrTooFewJobs) {
		t.Errorf("empty: %v", err)
	}
	same := []sim.JobSpec{
		{ID: "a", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000, Duration: sim.Second},
		{ID: "b", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000, Duration: sim.Second},
	}
	if _, err := Fit(same); err == nil {
		t.Error("same submit time accepted")
	}
	bad := []sim.JobSpec{{ID: "a", Replicas: 0}, {ID: "b", Submit: 5, Replicas: 1}}
	if _, err := Fit(bad); err == nil {
		t.Error("invalid job accepted")
	}
}

// A sparse, odd trace (unknown class, zero durations, no walltimes, empty names)
// still fits into a valid workload.
func TestFitOddTrace(t *testing.T) {
	jobs := []sim.JobSpec{
		{ID: "a", Submit: 0, Replicas: 1, GPUsPerReplica: 0, GPUMilli: 1000, Duration: 0},
		{ID: "b", Submit: sim.Time(sim.Hour), Class: "", Replicas: 3, GPUsPerReplica: 5, GPUMilli: 1000, Duration: sim.Minute, Priority: -3},
		{ID: "c", Submit: sim.Time(2 * sim.Hour), Class: sim.ClassServing, Replicas: 1, GPUsPerReplica: 1, GPUMilli: 300, Duration: sim.Hour, Walltime: 2 * sim.Hour, GPUModels: []string{"A100"}},
	}
	fit, err := Fit(jobs)
	if err != nil {
		t.Fatal(err)
	}
	if fe := fit.Validate(); len(fe) > 0 {
		t.Fatal(fe)
	}
	if _, err := fit.Generate(1, 16, 8); err != nil {
		t.Fatal(err)
	}
	for _, c := range fit.Classes {
		if c.Class == "serving" && (len(c.AllowedModels) != 1 || c.GPUMilli.Values[0] != 300) {
			t.Errorf("serving %+v", c)
		}
	}
}

func TestHistDistMergesRareValues(t *testing.T) {
	counts := map[int32]int{}
	for v := int32(1); v <= 100; v++ {
		counts[v] = int(v)
	}
	d := histDist(counts)
	if len(d.Values) != fitMaxValues {
		t.Fatalf("%d values", len(d.Values))
	}
	var tot float64
	for _, w := range d.Weights {
		tot += w
	}
	nearAbs(t, "weights sum", tot, 1, 1e-3)
}

func TestFitBurstyRoundTrip(t *testing.T) {
	for _, tc := range []Arrival{
		{Process: ProcessBursty, BurstFactor: 10, MeanBurstS: 600, BurstFraction: 0.1},
		{Process: ProcessBursty, BurstFactor: 20, MeanBurstS: 1800, BurstFraction: 0.2},
	} {
		s := DefaultSynthetic()
		s.Jobs = 30000
		s.Arrival = tc
		jobs := gen(t, s, 5, 128, 8)
		st, err := Stats(jobs)
		if err != nil {
			t.Fatal(err)
		}
		got := st.Process()
		t.Logf("truth %+v: fitted %+v (gap CV %.2f, diurnal score %.1f)", tc, got, st.GapCV, st.DiurnalScore)
		if got.Process != ProcessBursty {
			t.Errorf("%+v: fitted process %q", tc, got.Process)
			continue
		}
		near(t, "burstFactor", got.BurstFactor, tc.BurstFactor, 0.2)
		near(t, "burstFraction", got.BurstFraction, tc.BurstFraction, 0.2)
		near(t, "meanBurstS", float64(got.MeanBurstS), float64(tc.MeanBurstS), 0.3)
	}
}
