package lucid_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/internal/policytest"
	"github.com/gpusim/gpusim/policies/lucid"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

func job(id string, submit, dur, util float64) sim.JobSpec {
	return sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sim.Seconds(submit)), Replicas: 1, GPUsPerReplica: 1,
		GPUMilli: sim.WholeGPU, Duration: sim.Seconds(dur), Walltime: sim.Seconds(dur), SMUtil: util,
		GPUMemMiB: 10000, Sharing: sim.AcceptAny, User: "u"}
}

func newPolicy(t *testing.T, params string) *lucid.Policy {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(params), &n); err != nil {
		t.Fatal(err)
	}
	pol, err := policies.New("lucid", n.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	return pol.(*lucid.Policy)
}

func run(t *testing.T, gpus int32, pol sim.Policy, jobs ...sim.JobSpec) *sim.Result {
	t.Helper()
	c, err := sim.NewCluster([]sim.NodeSpec{{Name: "n0", GPUModel: "h100", GPUs: gpus, GPUMemMiB: 80000,
		CPUMilli: 64000, MemoryMiB: 1 << 20, Sharing: sim.ShareTimeSlice, SharingClients: 4}})
	if err != nil {
		t.Fatal(err)
	}
	// no Interference: each of k co-located jobs runs at 1/k
	return simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Sharing: &sim.SharingConfig{}})
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

func TestLucidScores(t *testing.T) {
	l := newPolicy(t, "{}")
	for _, tc := range []struct {
		u    float64
		want int
	}{{0.2, 0}, {0.5, 0}, {0.52, 0}, {0.55, 1}, {0.58, 1}, {0.6, 2}, {0.9, 2}, {0, 2}} {
		s := sim.JobSpec{SMUtil: tc.u}
		if got := l.Score(&s); got != tc.want {
			t.Errorf("sm_util %v: score %d, want %d", tc.u, got, tc.want)
		}
	}
}

// Hand-worked, one time-slicing GPU (clients 4, 80 GB; the engine would take any
// of these jobs as a sharer), walltime estimator (priority = walltime x GPUs):
// A (sm_util 0.9: score 2, 100 s) starts alone at 0. B (0.55: score 1, 40 s)
// arrives at 10: the pair A+B scores 3 > 2, so Lucid refuses it and B waits.
// C (0.2: score 0, 30 s) arrives at 20: A+C scores 2, memory fits, priority 30
// <= 2 x 100: C pairs with A. Both run at 0.5: C's 30 s end at 80, when A has
// 20 + 30 = 50 s done; A's last 50 s alone end at 130. B, refused by A
// throughout, starts alone at 130 and ends at 170.
func TestLucidRefusesForbiddenPair(t *testing.T) {
	pol := newPolicy(t, "{estimator: walltime}")
	res := run(t, 1, pol, job("A", 0, 100, 0.9), job("B", 10, 40, 0.55), job("C", 20, 30, 0.2))
	a, b, c := byID(t, res, "A"), byID(t, res, "B"), byID(t, res, "C")
	if c.FirstStart != sim.Time(20*sim.Second) || c.End != sim.Time(80*sim.Second) || c.SharedTime() != 60*sim.Second {
		t.Errorf("C runs %s-%s shared %s; want paired with A 20s-80s", c.FirstStart, c.End, c.SharedTime())
	}
	if a.End != sim.Time(130*sim.Second) {
		t.Errorf("A ends %s, want 130s", a.End)
	}
	if b.FirstStart != sim.Time(130*sim.Second) || b.End != sim.Time(170*sim.Second) || b.SharedTime() != 0 {
		t.Errorf("B runs %s-%s shared %s; want refused until 130s, alone to 170s", b.FirstStart, b.End, b.SharedTime())
	}
	if pol.Pairs != 1 || pol.Refused == 0 {
		t.Errorf("pairs %d refused %d, want 1 and > 0", pol.Pairs, pol.Refused)
	}
	// With a looser score limit the same pair is allowed: B joins A at 10.
	pol = newPolicy(t, "{estimator: walltime, maxScore: 3}")
	res = run(t, 1, pol, job("A", 0, 100, 0.9), job("B", 10, 40, 0.55))
	if b := byID(t, res, "B"); b.FirstStart != sim.Time(10*sim.Second) {
		t.Errorf("maxScore 3: B starts %s, want 10s", b.FirstStart)
	}
}

// The priority-ratio rule: D (score 0, walltime 300 s) may not pair with A
// (walltime 100 s) because 300 > 2 x 100; it waits for A's GPU.
func TestLucidPriorityRatio(t *testing.T) {
	pol := newPolicy(t, "{estimator: walltime}")
	res := run(t, 1, pol, job("A", 0, 100, 0.9), job("D", 10, 300, 0.2))
	if d := byID(t, res, "D"); d.FirstStart != sim.Time(100*sim.Second) {
		t.Errorf("D starts %s, want 100s (priority ratio)", d.FirstStart)
	}
}

// The history estimator: after two finished jobs of user u with workload w on
// 1 GPU (run times 100 s and 300 s), a third is estimated at 200 s; another
// user falls back to nothing.
func TestLucidEstimator(t *testing.T) {
	e := lucid.NewEstimator()
	s := sim.JobSpec{User: "u", Workload: "w", Replicas: 1, GPUsPerReplica: 1}
	e.Add(&s, 100)
	e.Add(&s, 300)
	if got, ok := e.Estimate(&s); !ok || got != 200 {
		t.Errorf("estimate %v %v, want 200", got, ok)
	}
	s2 := s
	s2.Workload = "x"
	if got, ok := e.Estimate(&s2); !ok || got != 200 {
		t.Errorf("user+gpus fallback %v %v, want 200", got, ok)
	}
	s3 := s
	s3.User = "v"
	if _, ok := e.Estimate(&s3); ok {
		t.Error("unknown user estimated")
	}
}

// Indolent packing: with co-location off until the arrival forecast exceeds
// the threshold, a low-utilisation job does not pair even though the rules
// allow it: it waits for the GPU (blocking, as the artifact does).
func TestLucidIndolentOff(t *testing.T) {
	pol := newPolicy(t, "{estimator: walltime, indolent: true, indolentThreshold: 100}")
	res := run(t, 1, pol, job("A", 0, 100, 0.2), job("C", 20, 30, 0.2))
	if c := byID(t, res, "C"); c.FirstStart != sim.Time(100*sim.Second) {
		t.Errorf("C starts %s, want 100s (co-location off)", c.FirstStart)
	}
	pol = newPolicy(t, "{estimator: walltime}")
	res = run(t, 1, pol, job("A", 0, 100, 0.2), job("C", 20, 30, 0.2))
	if c := byID(t, res, "C"); c.FirstStart != sim.Time(20*sim.Second) {
		t.Errorf("C starts %s, want 20s (co-location on)", c.FirstStart)
	}
}

func TestLucidBadParams(t *testing.T) {
	policytest.WantParamErrors(t, "lucid", [][2]string{
		{"{estimator: lgbm}", "estimator"},
		{"{scoreSpeeds: [0.8, 0.9]}", "scoreSpeeds"},
		{"{maxScore: 9}", "maxScore"},
		{"{priorityRatio: -1}", "priorityRatio"},
		{"{indolentWindow: -1}", "indolentWindow"},
		{"{placement: x}", "placement"},
		{"{nope: 1}", "nope"},
	})
}

// Invariants on random workloads (seeded, 300 cases): every job completes, none
// is preempted, no GPU ever holds more than two jobs, and every pair that
// shares a GPU satisfies the score rule (sum <= 2) and has profiled memory.
func TestLucidInvariantsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	pairs := 0
	for tc := 0; tc < 300; tc++ {
		var jobs []sim.JobSpec
		for i := 0; i < 12; i++ {
			j := job(fmt.Sprintf("j%02d", i), float64(rng.IntN(200)), float64(10+rng.IntN(100)), 0.1+0.1*float64(rng.IntN(9)))
			if rng.IntN(6) == 0 {
				j.GPUMemMiB = 0
			}
			if rng.IntN(6) == 0 {
				j.Sharing, j.GPUsPerReplica = sim.AcceptExclusive, 2
			}
			jobs = append(jobs, j)
		}
		pol := newPolicy(t, "{estimator: walltime}")
		res := run(t, 4, pol, jobs...)
		on := map[sim.GPUID][]sim.JobRef{}
		for _, e := range res.Log {
			j := &res.Jobs[e.Job]
			switch e.Kind {
			case sim.EvStart:
				for _, g := range j.GPUs {
					on[g] = append(on[g], j.Ref)
					if l := on[g]; len(l) > 2 {
						t.Fatalf("case %d: GPU %d holds %v", tc, g, l)
					} else if len(l) == 2 {
						a, b := &res.Jobs[l[0]].Spec, &res.Jobs[l[1]].Spec
						if pol.Score(a)+pol.Score(b) > 2 || a.GPUMemMiB <= 0 || b.GPUMemMiB <= 0 {
							t.Fatalf("case %d: forbidden pair %s (%v) + %s (%v)", tc, a.ID, a.SMUtil, b.ID, b.SMUtil)
						}
						pairs++
					}
				}
			case sim.EvFinish:
				for _, g := range j.GPUs {
					l := on[g]
					for i, r := range l {
						if r == j.Ref {
							on[g] = append(l[:i:i], l[i+1:]...)
							break
						}
					}
				}
			case sim.EvPreempt, sim.EvSuspend, sim.EvKill, sim.EvTimeout:
				t.Fatalf("case %d: %s %s", tc, j.Spec.ID, e.Kind)
			}
		}
		for i := range res.Jobs {
			if res.Jobs[i].State != sim.StateCompleted {
				t.Fatalf("case %d: %s %s", tc, res.Jobs[i].Spec.ID, res.Jobs[i].State)
			}
		}
	}
	if pairs < 100 {
		t.Errorf("only %d pairs formed: the cases do not exercise packing", pairs)
	}
	t.Logf("%d pairs formed", pairs)
}
