package gandiva_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/gandiva"
	"github.com/gpusim/gpusim/policies/internal/policytest"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// pairFactor gives every job of a co-located group the factor f (1 alone).
type pairFactor struct{ f float64 }

func (pairFactor) WorkloadID(string) (int32, bool) { return -1, false }
func (p pairFactor) Factors(_ string, _ sim.SharingMode, ws []int32, _ []float64, out []float64) bool {
	for i := range out {
		out[i] = p.f
	}
	return true
}

func job(id string, submit, dur float64, util float64) sim.JobSpec {
	s := sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sim.Seconds(submit)), Replicas: 1, GPUsPerReplica: 1,
		GPUMilli: sim.WholeGPU, Duration: sim.Seconds(dur), Walltime: sim.Seconds(dur), SMUtil: util, GPUMemMiB: 10000}
	if util > 0 {
		s.Sharing = sim.AcceptAny
	}
	return s
}

func run(t *testing.T, gpus int32, pol sim.Policy, f float64, jobs ...sim.JobSpec) *sim.Result {
	t.Helper()
	c, err := sim.NewCluster([]sim.NodeSpec{{Name: "n0", GPUModel: "h100", GPUs: gpus, GPUMemMiB: 80000,
		CPUMilli: 64000, MemoryMiB: 1 << 20, Sharing: sim.ShareTimeSlice, SharingClients: 4}})
	if err != nil {
		t.Fatal(err)
	}
	return simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Sharing: &sim.SharingConfig{Interference: pairFactor{f}}})
}

func byID(t *testing.T, res *sim.Result, id string) *sim.Job {
	t.Helper()
	for i := range res.Jobs {
		if string(res.Jobs[i].Spec.ID) == id {
			return &res.Jobs[i]
		}
	}
	t.Fatalf("no job %s", id)
	return nil
}

func newPolicy(t *testing.T, params string) *gandiva.Policy {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(params), &n); err != nil {
		t.Fatal(err)
	}
	p, err := policies.New("gandiva", n.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	return p.(*gandiva.Policy)
}

// Hand-worked: two GPUs time-sliced, co-located jobs run at 0.8 each, migration
// delay 5 s. At 0, A (sm_util 0.3, 100 s) takes GPU 0 and X (exclusive, 60 s)
// GPU 1. At 10, B (sm_util 0.4, 100 s) finds no free GPU; 0.3 + 0.4 <= 1, so it
// is packed with A. Both run at 0.8: at 60, A has 10 + 40 = 50 s done and B 40 s.
// X ends at 60 and GPU 1 is a better fit: B (the newest on the packed GPU) has 60
// s of work left, 75 s at 0.8 against 60 + 5 alone, so it migrates: restore
// 60-65, 60 s of work, ends at 125. A is alone from 60: its last 50 s end at
// 110. Without migration A would end at 60 + 50/0.8 = 122.5 and B later still.
func TestGandivaPacksThenMigrates(t *testing.T) {
	pol := newPolicy(t, "{migrationDelay: 5s}")
	res := run(t, 2, pol, 0.8, job("A", 0, 100, 0.3), job("X", 0, 60, 0), job("B", 10, 100, 0.4))
	a, b, x := byID(t, res, "A"), byID(t, res, "B"), byID(t, res, "X")
	if x.End != sim.Time(60*sim.Second) {
		t.Fatalf("X ends at %s, want 60s", x.End)
	}
	if b.FirstStart != sim.Time(10*sim.Second) || b.SharedTime() != 50*sim.Second {
		t.Errorf("B first start %s shared %s: want packed at 10s for 50s", b.FirstStart, b.SharedTime())
	}
	if a.End != sim.Time(110*sim.Second) || a.SharedTime() != 50*sim.Second {
		t.Errorf("A ends at %s (shared %s), want 110s (50s)", a.End, a.SharedTime())
	}
	if b.End != sim.Time(125*sim.Second) || b.Preempted != 1 || b.GPUs[0] != 1 || b.Overhead != 5*sim.Second {
		t.Errorf("B ends at %s on GPU %d, preempted %d, overhead %s; want 125s on GPU 1, 1, 5s", b.End, b.GPUs[0], b.Preempted, b.Overhead)
	}
	if pol.Packs != 1 || pol.Migrations != 1 || pol.Unpacks != 0 {
		t.Errorf("packs %d migrations %d unpacks %d, want 1 1 0", pol.Packs, pol.Migrations, pol.Unpacks)
	}
}

// With migration off the same jobs stay packed: A ends at 60 + 50/0.8 = 122.5 s;
// B has 40 + 62.5 x 0.8 = 90 s done then and ends 10 s later at 132.5 s.
func TestGandivaNoMigrate(t *testing.T) {
	pol := newPolicy(t, "{migrate: false}")
	res := run(t, 2, pol, 0.8, job("A", 0, 100, 0.3), job("X", 0, 60, 0), job("B", 10, 100, 0.4))
	if a, b := byID(t, res, "A"), byID(t, res, "B"); a.End != sim.Time(122_500_000) || b.End != sim.Time(132_500_000) || b.Preempted != 0 {
		t.Errorf("A ends %s, B ends %s (preempted %d); want 122.5s, 132.5s, 0", a.End, b.End, b.Preempted)
	}
}

// Packing needs low utilisation: B (0.8) cannot pack with A (0.3); it is
// time-sliced instead, or waits with timeSlice off.
func TestGandivaTimeSliceWhenUtilisationHigh(t *testing.T) {
	pol := newPolicy(t, "{timeSlice: false, migrate: false}")
	res := run(t, 1, pol, 0.8, job("A", 0, 100, 0.3), job("B", 10, 50, 0.8))
	if b := byID(t, res, "B"); b.FirstStart != sim.Time(100*sim.Second) {
		t.Errorf("B starts at %s, want 100s (no packing, no time-slicing)", b.FirstStart)
	}
	pol = newPolicy(t, "{migrate: false}")
	res = run(t, 1, pol, 0.8, job("A", 0, 100, 0.3), job("B", 10, 50, 0.8))
	if b := byID(t, res, "B"); b.FirstStart != sim.Time(10*sim.Second) || pol.TimeSlices != 1 || pol.Packs != 0 {
		t.Errorf("B starts at %s (slices %d packs %d), want 10s time-sliced", b.FirstStart, pol.TimeSlices, pol.Packs)
	}
}

// Introspection: packed jobs that interfere badly (0.4 each, sum 0.8 < 1) are
// un-packed at the next scheduling point. A (100 s) alone 0-10, B packed at 10;
// C (exclusive, 1 s) submitted at 11 only makes a scheduling point at 11
// (it waits: no free GPU) where the packed sum 0.8 is seen: B leaves with its
// 0.4 s of work kept and is requeued, never packed again; C cannot start (the
// GPU holds A, a sharer), B time-slicing is off: both wait for A. A: 10 + 0.4 +
// 89.6 s alone -> ends at 100.6 s.
func TestGandivaIntrospectionUnpacks(t *testing.T) {
	pol := newPolicy(t, "{timeSlice: false, migrationDelay: 5s}")
	c := job("C", 11, 1, 0)
	res := run(t, 1, pol, 0.4, job("A", 0, 100, 0.3), job("B", 10, 50, 0.4), c)
	a, b := byID(t, res, "A"), byID(t, res, "B")
	if pol.Unpacks != 1 || b.Preempted != 1 {
		t.Fatalf("unpacks %d, B preempted %d; want 1, 1", pol.Unpacks, b.Preempted)
	}
	if a.End != sim.Time(100_600_000) {
		t.Errorf("A ends at %s, want 100.6s", a.End)
	}
	if b.Done != 50*sim.Second || b.Overhead != 5*sim.Second {
		t.Errorf("B done %s overhead %s", b.Done, b.Overhead)
	}
}

func TestGandivaBadParams(t *testing.T) {
	policytest.WantParamErrors(t, "gandiva", [][2]string{
		{"{packUtilisation: -1}", "packUtilisation"},
		{"{unknownUtilisation: 2}", "unknownUtilisation"},
		{"{placement: nope}", "placement"},
		{"{migrationDelay: abc}", "migrationDelay"},
		{"{bogus: 1}", "bogus"},
	})
}

// checked runs gandiva and, after every scheduling point, checks that each GPU
// shared by two or more jobs holds solo sm_util summing to at most 1.
type checked struct {
	*gandiva.Policy
	bad string
}

func (c *checked) Schedule(v *sim.View, p *sim.Plan) error {
	if err := c.Policy.Schedule(v, p); err != nil {
		return err
	}
	sum := map[sim.GPUID]float64{}
	n := map[sim.GPUID]int{}
	for _, j := range v.Running() {
		if len(j.GPUs) == 1 && v.Cluster().Sharers(j.GPUs[0]) > 1 {
			u := j.Spec.SMUtil
			if u == 0 {
				u = 1 // unknown counts as a full GPU
			}
			sum[j.GPUs[0]] += u
			n[j.GPUs[0]]++
		}
	}
	for g, u := range sum {
		if u > 1+1e-9 && c.bad == "" {
			c.bad = fmt.Sprintf("t=%s GPU %d: %d jobs with sm_util %v", v.Now(), g, n[g], u)
		}
	}
	return nil
}

// Invariants on random workloads (seeded, 300 cases; pair factors 0.8 and 0.4,
// the latter making introspection un-pack): every job completes; with
// time-slicing off, after every scheduling point each shared GPU's jobs have
// solo sm_util summing to at most 1 (packing only); migrations keep all work
// (a job's wasted time is exactly its restore delays).
func TestGandivaInvariantsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	var packs, migrations, unpacks int64
	for tc := 0; tc < 300; tc++ {
		var jobs []sim.JobSpec
		for i := 0; i < 12; i++ {
			util := 0.0
			if rng.IntN(4) != 0 {
				util = 0.1 + 0.1*float64(rng.IntN(8))
			}
			jobs = append(jobs, job(fmt.Sprintf("j%02d", i), float64(rng.IntN(200)), float64(10+rng.IntN(200)), util))
		}
		f := 0.8
		if tc%2 == 1 {
			f = 0.4
		}
		pol := &checked{Policy: newPolicy(t, "{timeSlice: false, migrationDelay: 3s}")}
		res := run(t, 3, pol, f, jobs...)
		if pol.bad != "" {
			t.Fatalf("case %d: %s", tc, pol.bad)
		}
		packs, migrations, unpacks = packs+pol.Packs, migrations+pol.Migrations, unpacks+pol.Unpacks
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if j.State != sim.StateCompleted || j.Wasted != sim.Duration(j.Preempted)*3*sim.Second {
				t.Fatalf("case %d: %s %s, wasted %s after %d migrations", tc, j.Spec.ID, j.State, j.Wasted, j.Preempted)
			}
		}
	}
	if packs < 100 || migrations < 20 || unpacks < 20 {
		t.Errorf("packs %d migrations %d unpacks %d: the cases do not exercise gandiva", packs, migrations, unpacks)
	}
	t.Logf("packs %d, migrations %d, unpacks %d", packs, migrations, unpacks)
}
