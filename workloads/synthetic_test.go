package workloads

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
)

func gen(t *testing.T, s Synthetic, seed uint64, gpus int64, perNode int32) []sim.JobSpec {
	t.Helper()
	jobs, err := s.Generate(seed, gpus, perNode)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return jobs
}

func TestDefaultSyntheticIsValidAndComplete(t *testing.T) {
	s := DefaultSynthetic()
	if fe := s.Validate(); len(fe) > 0 {
		t.Fatalf("default invalid: %v", fe)
	}
	before := s.clone()
	s.SetDefaults()
	if diff := cmp.Diff(before, s); diff != "" {
		t.Fatalf("SetDefaults not idempotent on the default (-before +after):\n%s", diff)
	}
	if len(s.Classes) != 5 || s.Jobs != DefaultJobs || s.Load != DefaultLoad {
		t.Fatalf("unexpected default: %+v", s)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	s := DefaultSynthetic()
	a := gen(t, s, 7, 128, 8)
	b := gen(t, s, 7, 128, 8)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed gave different jobs:\n%s", diff)
	}
	c := gen(t, s, 8, 128, 8)
	if cmp.Equal(a, c) {
		t.Fatal("different seeds gave identical jobs")
	}
}

func TestGenerateDoesNotModifyInput(t *testing.T) {
	s := Synthetic{Jobs: 10, Classes: []ClassMix{{Class: "training", Weight: 1}}}
	before := s.clone()
	gen(t, s, 1, 64, 8)
	if diff := cmp.Diff(before, s); diff != "" {
		t.Fatalf("Generate modified its receiver:\n%s", diff)
	}
}

// Changing one aspect of the mix (here the arrival process or the walltime factors)
// must not reshuffle the draws of the others, since each has its own stream.
func TestStreamsIndependent(t *testing.T) {
	base := DefaultSynthetic()
	base.Jobs = 500
	a := gen(t, base, 3, 128, 8)

	other := base.clone()
	other.Arrival = Arrival{Process: ProcessBursty}
	b := gen(t, other, 3, 128, 8)
	// Poisson and bursty arrivals are both nondecreasing in job order, so job i
	// keeps its attributes; only Submit changes.
	strip := func(js []sim.JobSpec) []sim.JobSpec {
		out := slices.Clone(js)
		for i := range out {
			out[i].Submit = 0
		}
		return out
	}
	if diff := cmp.Diff(strip(a), strip(b)); diff != "" {
		t.Fatalf("changing the arrival process changed job attributes:\n%s", diff)
	}
	if cmp.Equal(a, b) {
		t.Fatal("changing the arrival process changed nothing")
	}

	wt := base.clone()
	wt.Classes = slices.Clone(base.Classes)
	for i := range wt.Classes {
		wt.Classes[i].Walltime = Walltime{FactorMin: 5, FactorMax: 5}
	}
	c := gen(t, wt, 3, 128, 8)
	for i := range a {
		if a[i].Duration != c[i].Duration || a[i].Class != c[i].Class || a[i].User != c[i].User {
			t.Fatalf("job %d: changing walltime factors changed other draws: %+v vs %+v", i, a[i], c[i])
		}
		want := max(sim.Seconds(a[i].Duration.Seconds()*5), sim.Second)
		if d := c[i].Walltime - want; d < -5 || d > 5 {
			t.Fatalf("job %d: walltime %v, want %v", i, c[i].Walltime, want)
		}
	}
}

func TestGeneratedJobsAreValid(t *testing.T) {
	s := DefaultSynthetic()
	jobs := gen(t, s, 11, 128, 8)
	if len(jobs) != s.Jobs {
		t.Fatalf("got %d jobs, want %d", len(jobs), s.Jobs)
	}
	for i := range jobs {
		j := &jobs[i]
		if err := j.Validate(); err != nil {
			t.Fatalf("job %d invalid: %v (%+v)", i, err, j)
		}
		if want := sim.JobID("job-" + pad6(i+1)); j.ID != want {
			t.Fatalf("job %d id %q, want %q", i, j.ID, want)
		}
		if i > 0 && j.Submit < jobs[i-1].Submit {
			t.Fatalf("jobs not sorted by submit at %d", i)
		}
		if j.GPUsPerReplica > 8 {
			t.Fatalf("job %d: %d GPUs per replica > 8", i, j.GPUsPerReplica)
		}
		if j.Walltime < sim.Second || j.Walltime.Seconds() < j.Duration.Seconds()*DefaultWallFactorMin-1e-6 {
			t.Fatalf("job %d: walltime %v below factorMin x duration %v", i, j.Walltime, j.Duration)
		}
		if math.Mod(j.Walltime.Seconds(), DefaultWallRoundToS) != 0 {
			t.Fatalf("job %d: walltime %v not a multiple of %gs", i, j.Walltime, DefaultWallRoundToS)
		}
		if j.Class == sim.ClassServing && j.Priority != 100 {
			t.Fatalf("serving job %d has priority %d", i, j.Priority)
		}
		if j.Class == sim.ClassServing && j.Team != "platform" {
			t.Fatalf("serving job %d in team %q", i, j.Team)
		}
		if !strings.HasPrefix(j.User, j.Team+"-u") {
			t.Fatalf("job %d: user %q not in team %q", i, j.User, j.Team)
		}
	}
}

func pad6(n int) string {
	s := "000000" + itoa(n)
	return s[len(s)-6:]
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestSplitIntoReplicas(t *testing.T) {
	for _, tc := range []struct {
		gpus, perNode int32
		cluster       int64
		reps, per     int32
	}{
		{16, 8, 128, 2, 8},
		{32, 8, 128, 4, 8},
		{12, 8, 128, 2, 6},
		{13, 8, 128, 13, 1},
		{8, 8, 128, 1, 8},
		{4, 8, 128, 1, 4},
		{32, 8, 16, 2, 8}, // capped at the cluster size
	} {
		s := Synthetic{Jobs: 3, Classes: []ClassMix{{Class: "training", Weight: 1, GPUs: Dist[int32]{Values: []int32{tc.gpus}}}}}
		jobs := gen(t, s, 1, tc.cluster, tc.perNode)
		for _, j := range jobs {
			if j.Class != sim.ClassTraining {
				continue
			}
			if j.Replicas != tc.reps || j.GPUsPerReplica != tc.per {
				t.Errorf("%d GPUs on %d/node: got %dx%d, want %dx%d", tc.gpus, tc.perNode, j.Replicas, j.GPUsPerReplica, tc.reps, tc.per)
			}
		}
	}
}

func TestFractionalOnlyForSingleGPU(t *testing.T) {
	s := Synthetic{Jobs: 2000, Classes: []ClassMix{{Class: "serving", Weight: 1,
		GPUs:     Dist[int32]{Values: []int32{1, 2}},
		GPUMilli: Dist[sim.MilliGPU]{Values: []sim.MilliGPU{250}}}}}
	jobs := gen(t, s, 5, 64, 8)
	var frac, whole int
	for _, j := range jobs {
		switch {
		case j.GPUsPerReplica == 1 && j.GPUMilli == 250:
			frac++
			if j.CPUMilli != 1000 { // 4000 per GPU x 0.25
				t.Fatalf("fractional job CPU %d, want 1000", j.CPUMilli)
			}
		case j.GPUsPerReplica == 2 && j.GPUMilli == sim.WholeGPU:
			whole++
		default:
			t.Fatalf("unexpected job %+v", j)
		}
	}
	if frac < 900 || whole < 900 {
		t.Fatalf("frac=%d whole=%d", frac, whole)
	}
}

func TestOfferedLoadMatchesTarget(t *testing.T) {
	for _, p := range []string{ProcessPoisson, ProcessDiurnal, ProcessBursty} {
		for _, seed := range []uint64{1, 2, 3} {
			s := DefaultSynthetic()
			// Bursty arrivals are overdispersed: with the default burst settings the
			// span of 20k jobs has a relative sd of about 3%, so use 100k jobs there.
			s.Jobs = 20000
			if p == ProcessBursty {
				s.Jobs = 100000
			}
			s.Load = 0.7
			s.Arrival = Arrival{Process: p}
			s.SetDefaults()
			jobs := gen(t, s, seed, 128, 8)
			got := OfferedLoad(jobs, 128)
			t.Logf("%s seed %d: offered load %.4f (target %.2f)", p, seed, got, s.Load)
			if math.Abs(got/s.Load-1) > 0.05 {
				t.Errorf("%s seed %d: offered load %.4f, target %.2f", p, seed, got, s.Load)
			}
		}
	}
}

func TestLogNormalMedianAndSigma(t *testing.T) {
	s := Synthetic{Jobs: 20000, Classes: []ClassMix{{Class: "training", Weight: 1,
		GPUs:     Dist[int32]{Values: []int32{1}},
		Duration: LogNormal{MedianS: 1000, Sigma: 1.2, MinS: 1e-3, MaxS: 1e8}}}}
	jobs := gen(t, s, 9, 64, 8)
	logs := make([]float64, len(jobs))
	for i, j := range jobs {
		logs[i] = math.Log(j.Duration.Seconds())
	}
	sort.Float64s(logs)
	med := math.Exp(logs[len(logs)/2])
	if math.Abs(med/1000-1) > 0.05 {
		t.Errorf("median %.1f, want 1000 +-5%%", med)
	}
	mu, sd := meanSD(logs)
	if math.Abs(mu-math.Log(1000)) > 0.03 || math.Abs(sd/1.2-1) > 0.03 {
		t.Errorf("log mean %.4f sd %.4f, want %.4f, 1.2", mu, sd, math.Log(1000))
	}
}

func TestLogNormalTruncation(t *testing.T) {
	s := Synthetic{Jobs: 5000, Classes: []ClassMix{{Class: "training", Weight: 1,
		GPUs:     Dist[int32]{Values: []int32{1}},
		Duration: LogNormal{MedianS: 1000, Sigma: 2, MinS: 500, MaxS: 3000}}}}
	jobs := gen(t, s, 9, 64, 8)
	atMin := 0
	for _, j := range jobs {
		d := j.Duration.Seconds()
		if d < 500 || d > 3000 {
			t.Fatalf("duration %g outside [500, 3000]", d)
		}
		if d == 500 {
			atMin++
		}
	}
	if atMin > 5 {
		t.Fatalf("%d durations exactly at minS: truncation should not pile up at the bound", atMin)
	}
}

func meanSD(x []float64) (float64, float64) {
	var m float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(x)-1))
}

func TestClassMixProportions(t *testing.T) {
	s := DefaultSynthetic()
	s.Jobs = 20000
	jobs := gen(t, s, 4, 128, 8)
	count := map[sim.JobClass]int{}
	for _, j := range jobs {
		count[j.Class]++
	}
	var total float64
	for _, c := range s.Classes {
		total += c.Weight
	}
	for _, c := range s.Classes {
		want := c.Weight / total
		got := float64(count[sim.JobClass(c.Class)]) / float64(len(jobs))
		// 4 standard errors of a binomial proportion.
		tol := 4 * math.Sqrt(want*(1-want)/float64(len(jobs)))
		if math.Abs(got-want) > tol {
			t.Errorf("class %s: share %.4f, want %.4f +- %.4f", c.Class, got, want, tol)
		}
	}
}

func TestDiurnalRateShape(t *testing.T) {
	s := Synthetic{Jobs: 40000, Arrival: Arrival{Process: ProcessDiurnal, PeakToTrough: 4, PeakHour: 14},
		Classes: []ClassMix{{Class: "experiment", Weight: 1, GPUs: Dist[int32]{Values: []int32{1}},
			GPUMilli: Dist[sim.MilliGPU]{Values: []sim.MilliGPU{1000}},
			Duration: LogNormal{MedianS: 600, Sigma: 0.01}}}}
	jobs := gen(t, s, 21, 64, 8)
	var hours [24]float64
	for _, j := range jobs {
		h := int(math.Mod(j.Submit.Seconds(), 86400) / 3600)
		hours[h]++
	}
	// Compare the 3 hours around the peak (13-15) with those around the trough (1-3):
	// the expected ratio is (1+A cos(1h))/(1-A cos(1h)) averaged; about R for narrow
	// windows. Check it is within 15% of the configured ratio.
	peak := hours[13] + hours[14] + hours[15]
	trough := hours[1] + hours[2] + hours[3]
	amp := DiurnalAmplitude(4)
	// exact expectation of the 1-hour bins' integrals
	binMean := func(h0 float64) float64 {
		a := 2 * math.Pi * (h0 - 14) / 24
		b := 2 * math.Pi * (h0 + 1 - 14) / 24
		return 1 + amp*(math.Sin(b)-math.Sin(a))/(b-a)
	}
	want := (binMean(13) + binMean(14) + binMean(15)) / (binMean(1) + binMean(2) + binMean(3))
	if got := peak / trough; math.Abs(got/want-1) > 0.15 {
		t.Errorf("peak/trough count ratio %.2f, want %.2f", got, want)
	}
	// The hour with the most arrivals is next to the peak hour.
	best := 0
	for h := range hours {
		if hours[h] > hours[best] {
			best = h
		}
	}
	if best < 12 || best > 15 {
		t.Errorf("busiest hour %d, want near 14 (%v)", best, hours)
	}
}

func TestBurstyIsOverdispersed(t *testing.T) {
	mk := func(p string) []sim.JobSpec {
		s := Synthetic{Jobs: 20000, Arrival: Arrival{Process: p},
			Classes: []ClassMix{{Class: "experiment", Weight: 1, GPUs: Dist[int32]{Values: []int32{1}},
				GPUMilli: Dist[sim.MilliGPU]{Values: []sim.MilliGPU{1000}}, Duration: LogNormal{MedianS: 600, Sigma: 0.01}}}}
		return gen(t, s, 2, 64, 8)
	}
	cv := func(jobs []sim.JobSpec) float64 {
		gaps := make([]float64, len(jobs)-1)
		for i := 1; i < len(jobs); i++ {
			gaps[i-1] = jobs[i].Submit.Sub(jobs[i-1].Submit).Seconds()
		}
		m, sd := meanSD(gaps)
		return sd / m
	}
	p, b := cv(mk(ProcessPoisson)), cv(mk(ProcessBursty))
	if math.Abs(p-1) > 0.05 {
		t.Errorf("poisson gap CV %.3f, want 1", p)
	}
	if b < 1.3 {
		t.Errorf("bursty gap CV %.3f, want > 1.3", b)
	}
}

func TestValidatePaths(t *testing.T) {
	bad := func(mut func(s *Synthetic)) Synthetic {
		s := DefaultSynthetic()
		mut(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		s    Synthetic
		path string
	}{
		{"jobs", bad(func(s *Synthetic) { s.Jobs = -1 }), "jobs"},
		{"load", bad(func(s *Synthetic) { s.Load = math.NaN() }), "load"},
		{"process", bad(func(s *Synthetic) { s.Arrival.Process = "weibull" }), "arrival.process"},
		{"ratio", bad(func(s *Synthetic) {
			s.Arrival = Arrival{Process: ProcessDiurnal, PeakToTrough: 0.5, PeriodS: 10, PeakHour: 3}
		}), "arrival.peakToTrough"},
		{"burst", bad(func(s *Synthetic) {
			s.Arrival = Arrival{Process: ProcessBursty, BurstFactor: 2, MeanBurstS: 60, BurstFraction: 1}
		}), "arrival.burstFraction"},
		{"class", bad(func(s *Synthetic) { s.Classes[2].Class = "gaming" }), "classes[2].class"},
		{"weight", bad(func(s *Synthetic) { s.Classes[1].Weight = -1 }), "classes[1].weight"},
		{"median", bad(func(s *Synthetic) { s.Classes[1].Duration.MedianS = 0 }), "classes[1].duration.medianS"},
		{"sigma", bad(func(s *Synthetic) { s.Classes[0].Duration.Sigma = math.Inf(1) }), "classes[0].duration.sigma"},
		{"maxS", bad(func(s *Synthetic) { s.Classes[0].Duration.MaxS = 1 }), "classes[0].duration.maxS"},
		{"gpus", bad(func(s *Synthetic) { s.Classes[0].GPUs.Values[3] = -8 }), "classes[0].gpus.values[3]"},
		{"gpusw", bad(func(s *Synthetic) { s.Classes[0].GPUs.Weights = []float64{1} }), "classes[0].gpus.weights"},
		{"milli", bad(func(s *Synthetic) { s.Classes[1].GPUMilli.Values[0] = 1001 }), "classes[1].gpuMilli.values[0]"},
		{"factor", bad(func(s *Synthetic) { s.Classes[3].Walltime.FactorMax = 0.5 }), "classes[3].walltime.factorMax"},
		{"cpu", bad(func(s *Synthetic) { s.Classes[4].CPUMilli = -1 }), "classes[4].cpuMilli"},
		{"elastic", bad(func(s *Synthetic) { s.Classes[0].Elastic = &Elastic{MinReplicas: 4, MaxReplicas: 2} }), "classes[0].elastic.maxReplicas"},
		{"queue", bad(func(s *Synthetic) { s.Queues = []QueueMix{{Name: "q", Weight: 1, Classes: []string{"training"}}} }), "classes[1].class"},
		{"qclass", bad(func(s *Synthetic) { s.Queues[0].Classes = []string{"nope"} }), "queues[0].classes[0]"},
		{"team", bad(func(s *Synthetic) { s.Teams[1].Users = -1 }), "teams[1].users"},
		{"dupteam", bad(func(s *Synthetic) { s.Teams[2].Name = "vision" }), "teams[2].name"},
		{"skew", bad(func(s *Synthetic) { s.UserSkew = -1 }), "userSkew"},
		{"allzero", bad(func(s *Synthetic) {
			s.Classes = []ClassMix{{Class: "training"}, {Class: "experiment"}}
			s.SetDefaults()
			s.Classes[0].Weight, s.Classes[1].Weight = 0, 0
		}), "classes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := tc.s.Validate()
			var paths []string
			for _, e := range fe {
				paths = append(paths, e.Path)
			}
			if !slices.Contains(paths, tc.path) {
				t.Fatalf("want an error at %q, got %v", tc.path, fe)
			}
			// (All-zero class weights mean "not given": Generate's SetDefaults fills them.)
			if _, err := tc.s.Generate(1, 128, 8); err == nil && tc.name != "allzero" {
				t.Fatal("Generate accepted an invalid workload")
			}
		})
	}
}

func TestGenerateRejectsBadArgs(t *testing.T) {
	s := DefaultSynthetic()
	if _, err := s.Generate(1, 0, 8); err == nil {
		t.Error("clusterGPUs 0 accepted")
	}
	if _, err := s.Generate(1, 128, 0); err == nil {
		t.Error("maxGPUsPerNode 0 accepted")
	}
	cpu := Synthetic{Jobs: 5, Classes: []ClassMix{{Class: "preprocessing", Weight: 1, GPUs: Dist[int32]{Values: []int32{0}}}}}
	if _, err := cpu.Generate(1, 128, 8); err == nil || !strings.Contains(err.Error(), "no GPU time") {
		t.Errorf("CPU-only mix: got %v, want a no-GPU-time error", err)
	}
}

func TestSetDefaultsPartialClass(t *testing.T) {
	s := Synthetic{Classes: []ClassMix{
		{Class: "training", Weight: 2, Duration: LogNormal{MedianS: 100, Sigma: 0.5}, Walltime: Walltime{FactorMin: 2}},
		{Class: "serving", Weight: 1, Priority: new(int32)},
	}}
	s.SetDefaults()
	tr, sv := s.Classes[0], s.Classes[1]
	if tr.Duration.MinS != DefaultMinDurationS || tr.Duration.MaxS != DefaultMaxDurationS || tr.Walltime.FactorMax != 2 {
		t.Errorf("partial blocks not completed: %+v %+v", tr.Duration, tr.Walltime)
	}
	if *tr.Priority != 10 || len(tr.GPUs.Values) != 6 {
		t.Errorf("training defaults not applied: %+v", tr)
	}
	if *sv.Priority != 0 {
		t.Errorf("explicit priority 0 overwritten: %d", *sv.Priority)
	}
	if fe := s.Validate(); len(fe) > 0 {
		t.Fatal(fe)
	}
}

// The default block round-trips through YAML (with unknown fields rejected) and
// the documented example in testdata decodes to a valid workload.
func TestYAMLRoundTrip(t *testing.T) {
	s := DefaultSynthetic()
	out, err := yaml.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	var back Synthetic
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Fatalf("round trip differs:\n%s", diff)
	}
}

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// testdata/default.yaml is the embedded default rendered as YAML (the block shown in
// docs/workloads.md). Regenerate with: go test ./workloads -run Golden -update
func TestDefaultGolden(t *testing.T) {
	s := DefaultSynthetic()
	got, err := s.MarshalYAMLBlock()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "default.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("default block changed (run with -update if intended):\n%s", diff)
	}
	var back Synthetic
	dec := yaml.NewDecoder(bytes.NewReader(got))
	dec.KnownFields(true)
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Fatalf("block round trip differs:\n%s", diff)
	}
}

func TestDecodeYAML(t *testing.T) {
	bare := "jobs: 7\narrival: {process: diurnal}\n"
	nested := "name: demo\ncluster: {nodes: 3}\nworkload:\n  synthetic:\n    jobs: 7\n    arrival: {process: diurnal}\n"
	for _, doc := range []string{bare, nested} {
		s, err := DecodeYAML([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if s.Jobs != 7 || s.Arrival.Process != ProcessDiurnal {
			t.Fatalf("%q: got %+v", doc, s)
		}
	}
	if s, err := DecodeYAML(nil); err != nil || s.Jobs != 0 {
		t.Fatalf("empty: %+v %v", s, err)
	}
	for _, doc := range []string{
		"jobs: 7\nbogus: 1\n",
		"workload:\n  synthetic:\n    jobz: 1\n",
		"workload:\n  trace: x.csv\n",
		"jobs: [1\n",
		"- 1\n",
	} {
		if _, err := DecodeYAML([]byte(doc)); err == nil {
			t.Errorf("%q: accepted", doc)
		}
	}
}

func TestSetDefaultsWeights(t *testing.T) {
	s := Synthetic{
		Classes: []ClassMix{{Class: "training"}, {Class: "serving"}},
		Queues:  []QueueMix{{Name: "a"}, {Name: "b"}},
		Teams:   []TeamMix{{Name: "x", Users: 3}},
	}
	s.SetDefaults()
	if s.Classes[0].Weight != 0.25 || s.Classes[1].Weight != 0.10 {
		t.Errorf("class weights %g %g, want the class defaults", s.Classes[0].Weight, s.Classes[1].Weight)
	}
	if s.Queues[0].Weight != 1 || s.Queues[1].Weight != 1 || s.Teams[0].Weight != 1 {
		t.Errorf("queue/team weights not equalized: %+v %+v", s.Queues, s.Teams)
	}
	// Some weights given: zeros stay zeros (the class is switched off).
	p := Synthetic{Classes: []ClassMix{{Class: "training", Weight: 1}, {Class: "serving"}}}
	p.SetDefaults()
	if p.Classes[1].Weight != 0 {
		t.Errorf("explicitly weighted mix: serving weight %g, want 0", p.Classes[1].Weight)
	}
	if fe := s.Validate(); len(fe) > 0 {
		t.Fatal(fe)
	}
}
