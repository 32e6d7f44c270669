package pollux

import (
	"math"
	"strings"
	"testing"
	"testing/fstest"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

// The goodput model on hand-picked parameters, worked out by hand from
// goodput.py's formulas.
func TestGoodputByHand(t *testing.T) {
	g := Goodput{
		Perf:          PerfParams{AlphaC: 0.1, BetaC: 0.01, AlphaN: 0.2, BetaN: 0.05, AlphaR: 0.05, BetaR: 0.01, Gamma: 2},
		Grad:          GradParams{Sqr: 1, Var: 3},
		InitBatchSize: 20,
	}
	// 2 nodes, 4 GPUs, atomic 10, 1 accumulation step: batch 80.
	// T_accum = 0.1 + 0.01·10 = 0.2; T_network = 0.2 + 0.05·(4−2) = 0.3 (inter-node);
	// T_optim = sqrt(0.2² + 0.3²) = sqrt(0.13); T_step = 1·0.2 + sqrt(0.13).
	near(t, "throughput", g.Throughput(2, 4, 10, 1), 80/(0.2+math.Sqrt(0.13)), 1e-12)
	// scale = 80/20 = 4; gain = (3+1)/(3/4+1) = 4/1.75; efficiency = gain/4.
	near(t, "efficiency", g.Efficiency(80), 4/1.75/4, 1e-12)
	near(t, "goodput", g.Evaluate(2, 4, 10, 1), 80/(0.2+math.Sqrt(0.13))*(4/1.75/4), 1e-12)
	// One node, 4 GPUs: the intra-node link, T_network = 0.05 + 0.01·2 = 0.07.
	near(t, "network 1 node", g.Perf.NetworkTime(1, 4), 0.07, 1e-12)
	// One GPU: no network (1e-8 + 1e-8·1e-8).
	near(t, "network 1 GPU", g.Perf.NetworkTime(1, 1), 1e-8+1e-16, 1e-12)
	// Efficiency is 1 at the initial batch size.
	near(t, "efficiency at B0", g.Efficiency(20), 1, 1e-15)

	// Optimize searches batch sizes geomspace(max(B0, 5·1)=20, 80, 50): on one GPU
	// above B0 at least one accumulation step; atomic sizes outside [5, 10] are
	// invalid. Check the result against brute force over the same grid.
	lim := BatchLimits{MaxBatchSize: 80, MinAtomic: 5, MaxAtomic: 10, Accumulation: true}
	gp, a, s := g.Optimize(1, 1, lim)
	var bs [50]float64
	geomspace(bs[:], 20, 80)
	if bs[0] != 20 || bs[49] != 80 || math.Abs(bs[1]-20*math.Pow(4, 1.0/49)) > 1e-9 {
		t.Fatalf("geomspace %v", bs[:3])
	}
	best := -1.0
	for _, b := range bs {
		st := int(math.Ceil(b/10-1e-8)) - 1
		if b > 20+1e-8 {
			st = max(st, 1)
		}
		at := int(math.Ceil(b/float64(st+1) - 1e-8))
		v := 0.0
		if at >= 5 && at <= 10 {
			v = g.Evaluate(1, 1, at, st)
		}
		best = math.Max(best, v)
	}
	near(t, "optimize goodput", gp, best, 1e-12)
	if a < 5 || a > 10 || g.Evaluate(1, 1, a, s) != gp {
		t.Errorf("optimize config a=%d s=%d", a, s)
	}
}

// Data points read off the embedded artifact files.
func TestAppProfilesByHand(t *testing.T) {
	apps, err := Apps()
	if err != nil {
		t.Fatal(err)
	}
	c := apps["cifar10"]
	if c.InitBatchSize != 128 || c.MaxBatchSize != 4096 || c.MinLocalBsz != 32 || c.MaxLocalBsz != 1024 || c.MaxEpochs != 100 {
		t.Errorf("cifar10 constants %+v", c)
	}
	if y := apps["yolov3"]; y.MaxLocalBsz != 8 {
		t.Errorf("yolov3 max local %d, want 8 (APPLICATIONS cap)", y.MaxLocalBsz)
	}
	// placements.csv: "1,32,0.0427886962890625,0.0004995360016822816" and
	// "1,45,0.05048525333404541,0.000504022404551506"; local 40 is 8/13 of the way.
	st, sy, err := c.Throughput([]int{1}, 40)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "step(1,40)", st, 0.0427886962890625+8.0/13*(0.05048525333404541-0.0427886962890625), 1e-12)
	near(t, "sync(1,40)", sy, 0.0004995360016822816+8.0/13*(0.000504022404551506-0.0004995360016822816), 1e-12)
	// A rotation of a profiled placement reads the same row: 3,1 → "13".
	if CanonicalPlacement([]int{3, 1}) != "13" || CanonicalPlacement([]int{2, 0, 1, 3}) != "132" {
		t.Errorf("canonical placement")
	}
	// Outside the profiled local batch sizes is an error, not an extrapolation.
	if _, _, err := c.Throughput([]int{1}, 2000); err == nil {
		t.Error("local batch 2000 accepted")
	}
	// validation-128.csv row 0: grad_sqr 8.947307535897329, grad_var 5.066593295150894;
	// validation-256.csv row 0: 17.379458169870425, 13.937760473946334. Batch 192 is halfway.
	sqr, vr, err := c.GradStats(192, 0)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "grad_sqr(192)", sqr, (8.947307535897329+17.379458169870425)/2, 1e-12)
	near(t, "grad_var(192)", vr, (5.066593295150894+13.937760473946334)/2, 1e-12)
	// Epoch 1 ends at the minimum progress of the curves' first rows (390.714… at 256).
	if p := c.Progress(1); p > 390.72 || p < 390.71 {
		t.Errorf("progress(1) = %v", p)
	}
	// README "total progress to finish".
	for name, want := range map[string]float64{"bert": 14774.0, "cifar10": 39062.9, "deepspeech2": 28536.0, "imagenet": 576525.6, "ncf": 194174.0, "yolov3": 103444.0} {
		near(t, name+" total progress", apps[name].TotalProgress(), want, 1e-6)
	}
	// Beyond 4 nodes: the 3-D interpolation reproduces a scalability.csv point
	// exactly (imagenet "16,64,20,...").
	im := apps["imagenet"]
	st, _, err = im.Throughput([]int{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, 20)
	if err != nil {
		t.Fatal(err)
	}
	if st <= 0 {
		t.Errorf("imagenet 16x4 step %v", st)
	}
}

// The Delaunay interpolation is exact on affine data, whatever triangulation it
// picks, and returns data points unchanged.
func TestNDInterpAffine(t *testing.T) {
	var pts [][3]float64
	var vals [][2]float64
	f := func(p [3]float64) float64 { return 1 + 2*p[0] - 0.5*p[1] + 0.25*p[2] }
	for x := 0.0; x <= 3; x++ {
		for y := 0.0; y <= 4; y += 2 {
			for z := 0.0; z <= 10; z += 5 {
				p := [3]float64{x, y, z}
				pts = append(pts, p)
				vals = append(vals, [2]float64{f(p), -f(p)})
			}
		}
	}
	in := newNDInterp(pts, vals)
	for _, q := range [][3]float64{{0.5, 1, 2}, {2.9, 3.9, 9.9}, {1, 2, 5}, {3, 4, 10}} {
		y, ok := in.at(q)
		if !ok {
			t.Fatalf("%v outside", q)
		}
		near(t, "affine", y[0], f(q), 1e-9)
		near(t, "affine neg", y[1], -f(q), 1e-9)
	}
	if _, ok := in.at([3]float64{4, 0, 0}); ok {
		t.Error("point outside the hull interpolated")
	}
}

// The fit reaches the artifact's objective at least as low as the parameters
// that generated the data (with ±3 % deterministic noise, so that the minimum
// is not at the kink of the RMSE at zero error) and predicts the data.
func TestFitPerfParamsRecovers(t *testing.T) {
	truth := PerfParams{AlphaC: 0.05, BetaC: 0.002, AlphaN: 0.3, BetaN: 0.01, AlphaR: 0.04, BetaR: 0.005, Gamma: 1.5}
	var pts []ProfilePoint
	for i, c := range [][3]int{{1, 1, 32}, {1, 1, 64}, {1, 2, 32}, {1, 4, 64}, {2, 8, 32}, {3, 12, 64}, {2, 6, 128}, {4, 16, 128}} {
		acc := truth.AccumTime(float64(c[2]))
		noise := 1 + 0.03*float64(i%3-1)
		pts = append(pts, ProfilePoint{Nodes: c[0], Replicas: c[1], AtomicBsz: c[2], AccumTime: acc * noise,
			StepTime: truth.OptimTime(acc, truth.NetworkTime(c[0], c[1])) / noise})
	}
	p := FitPerfParams(pts)
	// The fit minimises the artifact's objective (with its regularisers, which
	// pull β/α towards 0), so it is at least as good as the truth on it …
	fp, _ := perfObjective(p.vec(), pts)
	ft, _ := perfObjective(truth.vec(), pts)
	if fp > ft+1e-9 {
		t.Errorf("objective at fit %v > at truth %v", fp, ft)
	}
	// … and predicts the data within 10 %.
	for _, pt := range pts {
		acc := p.AccumTime(float64(pt.AtomicBsz))
		got := p.OptimTime(acc, p.NetworkTime(pt.Nodes, pt.Replicas))
		near(t, "fitted step time", got, pt.StepTime, 0.1)
		near(t, "fitted accum time", acc, pt.AccumTime, 0.1)
	}
	// One point: αc fixed at half the accum time, network terms at their bounds.
	one := FitPerfParams(pts[:1])

	near(t, "alpha_c fixed", one.AlphaC, pts[0].AccumTime/2, 1e-12)
	if one.AlphaN < 1.1*one.AlphaR-1e-15 || one.BetaN < 1.1*one.BetaR-1e-15 {
		t.Errorf("prior alpha_n >= 1.1 alpha_r violated: %+v", one)
	}
}

func TestReadWorkloadErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"name,time,application,num_replicas,batch_size\na,1,cifar10,2,256\n", ""},
		{"name,time,application\n", "w.csv:1: header: missing column num_replicas"},
		{"name,time,application,num_replicas,batch_size\na,-1,cifar10,2,256\n", "w.csv:2: column time"},
		{"name,time,application,num_replicas,batch_size\na,1,resnet,2,256\n", "w.csv:2: column application: unknown \"resnet\""},
		{"name,time,application,num_replicas,batch_size\na,1,cifar10,0,256\n", "w.csv:2: column num_replicas"},
		{"name,time,application,num_replicas,batch_size\na,1,cifar10,2,99999\n", "w.csv:2: column batch_size"},
		{"name,time,application,num_replicas,batch_size\na,1,cifar10,2,256\na,2,ncf,1,256\n", "w.csv:3: column name: \"a\" already on line 2"},
		{"name,time,application,num_replicas,batch_size\n", "w.csv: no jobs"},
	} {
		_, err := ReadWorkload(strings.NewReader(c.in), "w.csv")
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
}

func TestLoadAppErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"x/validation-8.csv": {Data: []byte("progress,iteration,metric,grad_sqr,grad_var\n1,1,1,1,oops\n")},
	}
	if _, err := LoadApp(fsys, "x", "bert"); err == nil || !strings.Contains(err.Error(), "x/validation-8.csv:2: column grad_var") {
		t.Errorf("got %v", err)
	}
	if _, err := LoadApp(fsys, "x", "nope"); err == nil {
		t.Error("unknown app accepted")
	}
}
