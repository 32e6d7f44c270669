package slurm

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// AccountingStorageEnforce decides whether an ended run's usage since the
// last calc step is recorded (acct_policy.c _adjust_limit_usage calls
// priority_g_job_end only with limits). Hand-worked, no decay, calcPeriod
// 5m: alice's 2-GPU job runs 0..400. The step at 300 records 2 x 300 = 600
// GPU-s. With limits (and by default) the 100 s after it (200 GPU-s) are
// recorded at the step at 600: 800. With associations only they are lost:
// 600 at 600 too.
func TestAccountingStorageEnforce(t *testing.T) {
	for _, tc := range []struct {
		enforce string
		want600 float64
	}{
		{"", 800},
		{"accountingStorageEnforce: associations,limits", 800},
		{"accountingStorageEnforce: safe", 800},
		{"accountingStorageEnforce: associations", 600},
		{"accountingStorageEnforce: none", 600},
	} {
		s := newSlurm(t, `
priority: {weights: {fairshare: 1000}, calcPeriod: 5m, decayHalfLife: 0s}
accounts: [{name: research, users: [{name: alice}]}]
`+tc.enforce)
		got := map[float64]float64{}
		pr := &probe{Slurm: s}
		pr.rec = func(v *sim.View) {
			got[v.Now().Seconds()] = s.tree.a[s.tree.users["alice"][0]].usage
		}
		cpu := func(id string, at float64) sim.JobSpec { return user(MakeJob(id).GPUs(0).At(at).Obj(), "probe") }
		Run(t, Nodes(1, 8), pr,
			user(MakeJob("a").GPUs(2).Dur(400).Wall(600).Obj(), "alice"),
			cpu("p1", 301), cpu("p2", 601))
		for at, w := range map[float64]float64{301: 600, 601: tc.want600} {
			if math.Abs(got[at]-w) > 1e-9 {
				t.Errorf("%q: usage at %v = %v, want %v", tc.enforce, at, got[at], w)
			}
		}
	}
}

func TestAccountingStorageEnforceErrors(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(`accountingStorageEnforce: associations,limit`), &n); err != nil {
		t.Fatal(err)
	}
	_, err := policies.New("slurm", n.Content[0])
	if want := `accountingStorageEnforce: unknown "limit"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to mention %q", err, want)
	}
}

// usageModel slurm, hand-worked: half-life 100 s, so priority_multifactor.c's
// per-second factor is df = 1 - 0.693/100; calcPeriod 50 s. Alice's 2-GPU job
// runs 0..120.
//
//	step 50:  charge 2*50*df^50                        = 100 d   (d = df^50)
//	step 100: decay 100d*d, charge 100d                = 100d^2 + 100d
//	end 120:  2*20*df^20 = 40 df^20, charged at the end (limits)
//	step 150: (100d^2 + 100d + 40 df^20) * d
//
// exact: 100; 100/√2 + 100; (100/√2 + 100)/√2 + 40 (2^(-50/100) per step).
// calcUptime 20 s moves the steps to 30, 80, 130 (exact: 60 at 30).
func TestUsageModelSlurm(t *testing.T) {
	df := 1 - 0.693/100
	d := math.Pow(df, 50)
	r := math.Sqrt2
	for _, tc := range []struct {
		model, extra string
		want         map[float64]float64
	}{
		{"slurm", "", map[float64]float64{51: 100 * d, 101: 100*d*d + 100*d, 151: (100*d*d + 100*d + 40*math.Pow(df, 20)) * d}},
		{"exact", "", map[float64]float64{51: 100, 101: 100/r + 100, 151: (100/r+100)/r + 40}},
		{"exact", "calcUptime: 20s", map[float64]float64{31: 60, 81: 60/r + 100}},
	} {
		s := newSlurm(t, `
priority: {weights: {fairshare: 1000}, calcPeriod: 50s, decayHalfLife: 100s, usageModel: `+tc.model+`}
accounts: [{name: research, users: [{name: alice}]}]
`+tc.extra)
		got := map[float64]float64{}
		pr := &probe{Slurm: s}
		pr.rec = func(v *sim.View) {
			got[v.Now().Seconds()] = s.tree.a[s.tree.users["alice"][0]].usage
		}
		cpu := func(id string, at float64) sim.JobSpec { return user(MakeJob(id).GPUs(0).At(at).Obj(), "probe") }
		var probes []sim.JobSpec
		for at := range tc.want {
			probes = append(probes, cpu(fmt.Sprint("p", at), at))
		}
		Run(t, Nodes(1, 8), pr, append([]sim.JobSpec{user(MakeJob("a").GPUs(2).Dur(120).Wall(600).Obj(), "alice")}, probes...)...)
		for at, w := range tc.want {
			if math.Abs(got[at]-w) > 1e-9*w {
				t.Errorf("%s %s: usage at %v = %v, want %v", tc.model, tc.extra, at, got[at], w)
			}
		}
	}
}

// Classic fair share in Slurm's usage model ranks by the usage before a calc
// step (classicLag). No decay, calcPeriod 50 s, accounts x and y with 1 share
// each and one user each (the probe's account has 0 shares), limits (runs
// charged at their end): xu's 8-GPU job
// runs 0..200, yu's 8-GPU job 0..30 (240 GPU-s, charged at 30). At the step
// at 50 the usage before the step is x 0 (running jobs are charged at the
// step), y 240: UE x 0, y 1, so F = 2^(-UE/0.5): x 1, y 1/4. Without the lag
// (usageModel exact) the step's usage counts: x 400, y 240 of 640, F x
// 2^(-1.25), y 2^(-0.75).
func TestClassicFairShareLag(t *testing.T) {
	for _, tc := range []struct {
		model  string
		fx, fy float64
	}{
		{"slurm", 1, 0.25},
		{"exact", math.Pow(2, -1.25), math.Pow(2, -0.75)},
	} {
		s := newSlurm(t, `
priority: {weights: {fairshare: 1000}, calcPeriod: 50s, decayHalfLife: 0s, fairTree: false, usageModel: `+tc.model+`}
accounts: [{name: x, users: [{name: xu}]}, {name: y, users: [{name: yu}]}, {name: p, shares: 0, users: [{name: probe}]}]
`)
		var fx, fy float64
		pr := &probe{Slurm: s}
		pr.rec = func(v *sim.View) {
			if v.Now() == sim.Time(51*sim.Second) {
				fx, fy = s.tree.a[s.tree.users["xu"][0]].fs, s.tree.a[s.tree.users["yu"][0]].fs
			}
		}
		Run(t, Nodes(2, 8), pr,
			user(MakeJob("x1").GPUs(8).Dur(200).Wall(300).Obj(), "xu"),
			user(MakeJob("y1").GPUs(8).Dur(30).Wall(300).Obj(), "yu"),
			user(MakeJob("p").GPUs(0).At(51).Obj(), "probe"))
		if math.Abs(fx-tc.fx) > 1e-12 || math.Abs(fy-tc.fy) > 1e-12 {
			t.Errorf("usageModel %s: fair share at 51 x %v y %v, want %v %v", tc.model, fx, fy, tc.fx, tc.fy)
		}
	}
}
