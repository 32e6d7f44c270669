package sim_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Hand-worked M/D/1 predictions (docs/serving.md):
//
//	lambda 20/s, s 10 ms, speed 1:   rho 0.2, P99 = 0.01 + 0.01/1.6 ln 20 = 28.7233 ms
//	speed 0.5:                        s' 20 ms, rho 0.4, P99 = 0.02 + 0.02/1.2 ln 40 = 81.4813 ms
//	lambda 80/s, s 10 ms, speed 1:   rho 0.8, W = 20 ms, P99 = 0.01 + 0.025 ln 80 = 119.5507 ms
//	speed 0.9:                        rho 0.8889, P99 = 0.011111 + 0.05 ln 88.889 = 235.4805 ms
//	lambda 0.5/s (rho 0.005 <= 0.01): P99 = s' = 10 ms; rho >= 1: +Inf.
func TestPredictP99HandWorked(t *testing.T) {
	for _, c := range []struct{ lam, s, v, want float64 }{
		{20, 0.01, 1, 0.028723326709712},
		{20, 0.01, 0.5, 0.081481324235232},
		{80, 0.01, 1, 0.119550665866847},
		{80, 0.01, 0.9, 0.235480468627697},
		{0.5, 0.01, 1, 0.01},
		{0, 0.01, 0.25, 0.04},
	} {
		if got := sim.PredictP99(c.lam, c.s, c.v); !near(got, c.want, 1e-12) {
			t.Errorf("PredictP99(%v, %v, %v) = %.15f, want %.15f", c.lam, c.s, c.v, got, c.want)
		}
	}
	for _, c := range [][3]float64{{100, 0.01, 1}, {50, 0.01, 0.5}, {1, 0.01, 0}, {1, 0.01, -1}} {
		if got := sim.PredictP99(c[0], c[1], c[2]); !math.IsInf(got, 1) {
			t.Errorf("PredictP99(%v) = %v, want +Inf (unstable)", c, got)
		}
	}
}

// The approximation against a Monte-Carlo M/D/1 queue (Lindley's recursion,
// 1,000,000 requests per load after 50,000 of warm-up): within [0.95, 1.2] x
// the simulated P99 for rho in [0.05, 0.95]. Measured: +1 % to +18 % above it
// (conservative; largest around rho 0.2), and 1 % below at rho 0.95, where the
// simulated tail itself is noisy.
func TestPredictP99MonteCarlo(t *testing.T) {
	const s = 0.01
	for _, rho := range []float64{0.05, 0.2, 0.5, 0.7, 0.8, 0.9, 0.95} {
		lam := rho / s
		r := rand.New(rand.NewPCG(7, uint64(rho*1000)))
		const warm, n = 50_000, 1_000_000
		xs := make([]float64, 0, n)
		w := 0.0
		for i := 0; i < warm+n; i++ {
			if i >= warm {
				xs = append(xs, w+s)
			}
			w = max(0, w+s-r.ExpFloat64()/lam)
		}
		slices.Sort(xs)
		mc := xs[n*99/100]
		got := sim.PredictP99(lam, s, 1)
		t.Logf("rho %.2f: Monte-Carlo P99 %.4f s, predicted %.4f s (x%.3f)", rho, mc, got, got/mc)
		if got < 0.95*mc || got > 1.2*mc {
			t.Errorf("rho %.2f: predicted P99 %.4f s vs Monte-Carlo %.4f s (want within [0.95, 1.2] x)", rho, got, mc)
		}
	}
}

// ServingMinSpeed for lambda 20/s, s 10 ms: SLA 100 ms -> 0.445323 (P99 there is
// exactly the SLA), SLA 50 ms -> 0.679355; no load: s/SLA; an SLA not met alone -> 1.
func TestServingMinSpeed(t *testing.T) {
	for _, c := range []struct {
		spec sim.ServingSpec
		want float64
	}{
		{sim.ServingSpec{Rate: 20, Service: 10 * sim.Millisecond, SLA: 100 * sim.Millisecond}, 0.4453231609666679},
		{sim.ServingSpec{Rate: 20, Service: 10 * sim.Millisecond, SLA: 50 * sim.Millisecond}, 0.6793549954342379},
		{sim.ServingSpec{Rate: 0, Service: 10 * sim.Millisecond, SLA: 40 * sim.Millisecond}, 0.25},
		{sim.ServingSpec{Rate: 5, Series: []sim.RatePoint{{At: sim.Time(sim.Hour), Rate: 20}}, Service: 10 * sim.Millisecond, SLA: 50 * sim.Millisecond}, 0.6793549954342379},
		{sim.ServingSpec{Rate: 80, Service: 10 * sim.Millisecond, SLA: 100 * sim.Millisecond}, 1},
		{sim.ServingSpec{Rate: 200, Service: 10 * sim.Millisecond, SLA: time1h}, 1},
	} {
		got := sim.ServingMinSpeed(&c.spec)
		if !near(got, c.want, 2e-9) {
			t.Errorf("%+v: min speed %.10f, want %.10f", c.spec, got, c.want)
		}
		if c.want < 1 {
			sla := c.spec.SLA.Seconds()
			if p := sim.PredictP99(c.spec.PeakRate(), c.spec.Service.Seconds(), got); p > sla {
				t.Errorf("%+v: P99 at the bound %v > SLA", c.spec, p)
			}
			if p := sim.PredictP99(c.spec.PeakRate(), c.spec.Service.Seconds(), got-1e-6); p <= sla {
				t.Errorf("%+v: P99 just below the bound %v <= SLA", c.spec, p)
			}
		}
	}
}

const time1h = sim.Hour

func TestServingSpecValidate(t *testing.T) {
	for _, s := range []sim.ServingSpec{
		{Rate: -1, Service: 1, SLA: 1},
		{Rate: math.NaN(), Service: 1, SLA: 1},
		{Rate: 1, Service: 0, SLA: 1},
		{Rate: 1, Service: 1, SLA: 0},
		{Rate: 1, Service: 1, SLA: 1, Series: []sim.RatePoint{{At: 5, Rate: 1}, {At: 5, Rate: 2}}},
		{Rate: 1, Service: 1, SLA: 1, Series: []sim.RatePoint{{At: 5, Rate: math.Inf(1)}}},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

func servingJob(id string, dur float64, sla sim.Duration) sim.JobSpec {
	j := shareJob(id, dur, "")
	j.Class = sim.ClassServing
	j.Serving = &sim.ServingSpec{Rate: 20, Service: 10 * sim.Millisecond, SLA: sla}
	return j
}

// Serving job S (20 req/s, 10 ms, SLA 100 ms, 100 s) alone on a time-slicing GPU;
// training T (100 s of work) joins at 10 s with the even split (0.5 each). S's
// bound is 0.4453 <= 0.5, so T joins: S's predicted P99 goes from 28.72 ms to
// 81.48 ms (within the SLA), S still ends at 100 s (a service runs for its wall
// time), T does 90 x 0.5 = 45 s of work beside S, then 55 s alone: ends at 155 s.
// With an SLA of 50 ms (bound 0.6794) the join is refused: T starts at 100 s.
func TestServingCoLocationHandWorked(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	tr := shareJob("T", 100, "")
	tr.Submit = sim.Time(10 * sim.Second)
	s := servingJob("S", 100, 100*sim.Millisecond)
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{s, tr},
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"S": 0, "T": 0}}, Sharing: &sim.SharingConfig{}})
	js, jt := jobByID(t, res, "S"), jobByID(t, res, "T")
	if us(js.End) != 100_000_000 || us(jt.End) != 155_000_000 {
		t.Errorf("S ends %d µs, T ends %d µs; want 100 s, 155 s", us(js.End), us(jt.End))
	}
	sv := res.Serving
	if sv == nil || len(sv.Jobs) != 1 {
		t.Fatalf("serving stats %+v", sv)
	}
	st := sv.Jobs[0]
	if st.Running != 100*sim.Second || st.Violation != 0 || st.MinSpeed != 0.5 ||
		!near(st.MaxP99, 0.081481324235232, 1e-12) || !near(st.MinSpeedBound, 0.4453231609666679, 2e-9) {
		t.Errorf("S stats %+v", st)
	}
	if !near(sv.ColocatedTrainingGPUSeconds, 45, 1e-6) {
		t.Errorf("co-located training work %v GPU s, want 45", sv.ColocatedTrainingGPUSeconds)
	}
	want := []struct {
		at         float64
		speed, p99 float64
	}{{0, 1, 0.028723326709712}, {10, 0.5, 0.081481324235232}, {100, 0, math.NaN()}}
	if len(sv.Points) != len(want) {
		t.Fatalf("points %+v", sv.Points)
	}
	for i, w := range want {
		p := sv.Points[i]
		if p.Time != sim.Time(sim.Seconds(w.at)) || p.Speed != w.speed || p.Rate != 20 ||
			!(near(p.P99, w.p99, 1e-12) || math.IsNaN(w.p99) && math.IsNaN(p.P99)) {
			t.Errorf("point %d %+v, want %+v", i, p, w)
		}
	}

	c2, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	s.Serving = &sim.ServingSpec{Rate: 20, Service: 10 * sim.Millisecond, SLA: 50 * sim.Millisecond}
	if err := s.Serving.Prepare(); err != nil {
		t.Fatal(err)
	}
	res = runShare(t, sim.Config{Cluster: c2, Jobs: []sim.JobSpec{s, tr},
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"S": 0, "T": 0}}, Sharing: &sim.SharingConfig{}})
	if jt := jobByID(t, res, "T"); us(jt.FirstStart) != 100_000_000 || us(jt.End) != 200_000_000 {
		t.Errorf("tight SLA: T runs %d-%d µs, want 100-200 s", us(jt.FirstStart), us(jt.End))
	}
	if res.Serving.ColocatedTrainingGPUSeconds != 0 || res.Serving.Jobs[0].MinSpeed != 1 {
		t.Errorf("tight SLA: %+v", res.Serving)
	}
}

// A rate series: S alone at full speed, 20 req/s, 120 req/s (rho 1.2: unstable)
// from 30 s to 50 s, then 20 again; 100 s. Violation 20 s, max P99 +Inf, points
// at 0, 30, 50 and the stop at 100. Without sharing configured the engine turns
// it on for the serving record (an exclusive cluster).
func TestServingRateSeriesViolation(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareExclusive, 1))
	s := servingJob("S", 100, 100*sim.Millisecond)
	s.Sharing = sim.AcceptExclusive
	s.Serving.Series = []sim.RatePoint{{At: sim.Time(30 * sim.Second), Rate: 120}, {At: sim.Time(50 * sim.Second), Rate: 20}}
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{s}, Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"S": 0}}})
	st := res.Serving.Jobs[0]
	if st.Violation != 20*sim.Second || !math.IsInf(st.MaxP99, 1) || st.Running != 100*sim.Second || st.MinSpeedBound != 1 {
		t.Errorf("stats %+v", st)
	}
	var at []float64
	for _, p := range res.Serving.Points {
		at = append(at, p.Time.Seconds())
	}
	if !slices.Equal(at, []float64{0, 30, 50, 100}) || !math.IsInf(res.Serving.Points[1].P99, 1) {
		t.Errorf("points %+v", res.Serving.Points)
	}
	if j := jobByID(t, res, "S"); us(j.End) != 100_000_000 {
		t.Errorf("S ends at %d µs", us(j.End))
	}
}

// MIG isolation: a MIG GPU laid out as 1g.10gb, 2g.20gb, 3g.40gb; serving job S
// (20 req/s, 5 ms, SLA 50 ms: bound 0.3397, 5 GB) would get the 1g instance by
// the least-memory rule (speed 1/7, P99 282.8 ms); the engine skips the 1g and
// 2g (2/7 = 0.286) instances and gives it the 3g one (3/7: P99 35.6 ms). A
// training job T then takes the 1g instance.
func TestServingMIGPicksAnInstanceFastEnough(t *testing.T) {
	c, _ := sim.NewCluster(migNodes("1g.10gb", "2g.20gb", "3g.40gb"))
	s := servingJob("S", 100, 50*sim.Millisecond)
	s.Sharing, s.GPUMemMiB = sim.AcceptMIG, 5000
	s.Serving.Service = 5 * sim.Millisecond
	tr := shareJob("T", 10, "")
	tr.Sharing, tr.GPUMemMiB, tr.Submit = sim.AcceptMIG, 5000, sim.Time(sim.Second)
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{s, tr}, Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"S": 0, "T": 0}},
		Sharing: &sim.SharingConfig{MIG: migLookup}})
	st := res.Serving.Jobs[0]
	if !near(st.MinSpeed, 3.0/7, 1e-12) || st.Violation != 0 || !near(st.MaxP99, 0.035633167398915, 1e-12) {
		t.Errorf("S %+v, want the 3g.40gb instance (3/7)", st)
	}
	// T: 10 s of work at 1/7 from 1 s
	if jt := jobByID(t, res, "T"); us(jt.FirstStart) != 1_000_000 || us(jt.End) != 71_000_000 {
		t.Errorf("T runs %d-%d µs, want 1-71 s on the 1g instance", us(jt.FirstStart), us(jt.End))
	}
}
