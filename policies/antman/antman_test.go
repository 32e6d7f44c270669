package antman_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/antman"
	"github.com/gpusim/gpusim/policies/internal/policytest"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// utilModel is the utilisation fallback: 1 when the solo sm_util of the
// co-located jobs sums to at most 1, else each gets 1/sum.
type utilModel struct{}

func (utilModel) WorkloadID(string) (int32, bool) { return -1, false }
func (utilModel) Factors(_ string, _ sim.SharingMode, _ []int32, solo []float64, out []float64) bool {
	s := 0.0
	for _, u := range solo {
		s += u
	}
	for i := range out {
		out[i] = 1
		if s > 1 {
			out[i] = 1 / s
		}
	}
	return false
}

func job(id string, submit, dur float64, prio int32, util float64, share bool) sim.JobSpec {
	s := sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sim.Seconds(submit)), Replicas: 1, GPUsPerReplica: 1,
		GPUMilli: sim.WholeGPU, Duration: sim.Seconds(dur), Priority: prio, SMUtil: util, GPUMemMiB: 20000}
	if share {
		s.Sharing = sim.AcceptAny
	}
	return s
}

func run(t *testing.T, gpus int32, params string, jobs ...sim.JobSpec) (*sim.Result, *antman.Policy) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(params), &n); err != nil {
		t.Fatal(err)
	}
	pol, err := policies.New("antman", n.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.NewCluster([]sim.NodeSpec{{Name: "n0", GPUModel: "h100", GPUs: gpus, GPUMemMiB: 80000,
		CPUMilli: 64000, MemoryMiB: 1 << 20, Sharing: sim.ShareTimeSlice, SharingClients: 4}})
	if err != nil {
		t.Fatal(err)
	}
	res := simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Sharing: &sim.SharingConfig{Interference: utilModel{}}})
	return res, pol.(*antman.Policy)
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

func eventAt(res *sim.Result, j *sim.Job, k sim.EventKind) []sim.Time {
	var ts []sim.Time
	for _, e := range res.Log {
		if e.Job == j.Ref && e.Kind == k {
			ts = append(ts, e.Time)
		}
	}
	return ts
}

// Hand-worked: one GPU. O (opportunistic: priority -1; sm_util 0.5, 100 s)
// takes the idle GPU at 0. G (guarantee, exclusive, 50 s) arrives at 30: at that
// very scheduling point O is suspended (30 s of work kept) and G starts, runs
// 30-80 at full speed; O resumes on its node at 80 and does its last 70 s:
// ends at 150.
func TestAntManOpportunisticYieldsWithinOneSchedulingPoint(t *testing.T) {
	res, pol := run(t, 1, "{}", job("O", 0, 100, -1, 0.5, true), job("G", 30, 50, 0, 0, false))
	o, g := byID(t, res, "O"), byID(t, res, "G")
	at30 := sim.Time(30 * sim.Second)
	if s := eventAt(res, o, sim.EvSuspend); len(s) != 1 || s[0] != at30 {
		t.Errorf("O suspended at %v, want [30s]", s)
	}
	if g.FirstStart != at30 || g.End != sim.Time(80*sim.Second) || g.MinSpeed() != 1 {
		t.Errorf("G runs %s-%s (min speed %v), want 30s-80s at 1", g.FirstStart, g.End, g.MinSpeed())
	}
	if o.End != sim.Time(150*sim.Second) || o.Wasted != 0 || pol.Yields != 1 {
		t.Errorf("O ends %s wasted %s, yields %d; want 150s, 0, 1", o.End, o.Wasted, pol.Yields)
	}
	// requeue: O loses its 30 s (no checkpoints) and restarts at 80: ends at 180
	res, _ = run(t, 1, "{yield: requeue}", job("O", 0, 100, -1, 0.5, true), job("G", 30, 50, 0, 0, false))
	if o := byID(t, res, "O"); o.End != sim.Time(180*sim.Second) || o.Wasted != 30*sim.Second {
		t.Errorf("requeue: O ends %s wasted %s, want 180s, 30s", o.End, o.Wasted)
	}
}

// Leftover, two GPUs: at 0, G (guarantee, shareable, sm_util 0.3) takes GPU 0;
// O3 (opportunistic, 0.8) does not fit G's leftover (1.1) and takes the idle
// GPU 1. At 10, O1 (0.5) joins G's leftover (0.8 <= 1) without slowing it; O2
// (0.4) fits neither GPU and waits. At 20, G2 (guarantee, 0.6) finds no free
// GPU: GPU 1 holds only O3, and 0.6 + 0.8 > 1, so O3 yields (suspended, 20 s
// kept) and G2 starts there at once; O2 then fits G2's leftover (1.0) and
// starts at 20 too. O1 ends at 60, O2 at 50, G2 at 60; O3 resumes on the idle
// GPU 1 at 60 and ends at 140. Every job runs at full speed.
func TestAntManLeftoverAndPartialYield(t *testing.T) {
	res, _ := run(t, 2, "{}",
		job("G", 0, 100, 0, 0.3, true), job("O3", 0, 100, -1, 0.8, true),
		job("O1", 10, 50, -1, 0.5, true), job("O2", 10, 30, -1, 0.4, true),
		job("G2", 20, 40, 0, 0.6, true))
	g, o1, o2, o3, g2 := byID(t, res, "G"), byID(t, res, "O1"), byID(t, res, "O2"), byID(t, res, "O3"), byID(t, res, "G2")
	if g.End != sim.Time(100*sim.Second) || g.MinSpeed() != 1 {
		t.Errorf("G ends %s (min speed %v), want 100s at full speed", g.End, g.MinSpeed())
	}
	if o1.FirstStart != sim.Time(10*sim.Second) || o1.End != sim.Time(60*sim.Second) || o1.SharedTime() != 50*sim.Second {
		t.Errorf("O1 runs %s-%s shared %s, want 10s-60s on G's leftover", o1.FirstStart, o1.End, o1.SharedTime())
	}
	if s := eventAt(res, o3, sim.EvSuspend); len(s) != 1 || s[0] != sim.Time(20*sim.Second) {
		t.Errorf("O3 suspended at %v, want [20s]", s)
	}
	if g2.FirstStart != sim.Time(20*sim.Second) || g2.MinSpeed() != 1 {
		t.Errorf("G2 starts %s (min speed %v), want 20s at full speed", g2.FirstStart, g2.MinSpeed())
	}
	// O2 (0.4) joins G2's GPU at 20 (0.6 + 0.4 <= 1): its leftover
	if o2.FirstStart != sim.Time(20*sim.Second) || o2.MinSpeed() != 1 {
		t.Errorf("O2 starts %s (min speed %v), want 20s on G2's leftover", o2.FirstStart, o2.MinSpeed())
	}
	if o3.End != sim.Time(140*sim.Second) || o3.MinSpeed() != 1 || o3.Wasted != 0 {
		t.Errorf("O3 ends %s (min speed %v, wasted %s), want 140s, 1, 0", o3.End, o3.MinSpeed(), o3.Wasted)
	}
}

func TestAntManBadParams(t *testing.T) {
	policytest.WantParamErrors(t, "antman", [][2]string{
		{"{yield: kill}", "yield"},
		{"{resumeDelay: 5s}", "resumeDelay"},
		{"{opportunisticClasses: [nope]}", "opportunisticClasses[0]"},
		{"{utilisationLimit: -2}", "utilisationLimit"},
		{"{typo: 1}", "typo"},
	})
}

// A suspended opportunistic job resumes into a guarantee job's leftover on its
// own node even though its host memory (still allocated) would not fit again:
// node of 100,000 MiB; O (host 60,000 MiB, sm_util 0.5) runs from 0, G1 (0.8,
// 20 s) evicts it at 30; G2 (0.2, 30,000 MiB) waits behind G1 and starts at 50;
// O joins G2's leftover at 50 (10,000 MiB free on the node) and does its last
// 70 s at full speed: ends at 120.
func TestAntManSuspendedResumesIntoLeftover(t *testing.T) {
	var n yaml.Node
	_ = yaml.Unmarshal([]byte("{}"), &n)
	pol, _ := policies.New("antman", n.Content[0])
	c, _ := sim.NewCluster([]sim.NodeSpec{{Name: "n0", GPUModel: "h100", GPUs: 1, GPUMemMiB: 80000,
		CPUMilli: 64000, MemoryMiB: 100000, Sharing: sim.ShareTimeSlice}})
	o := job("O", 0, 100, -1, 0.5, true)
	o.MemoryMiB = 60000
	g2 := job("G2", 40, 100, 0, 0.2, true)
	g2.MemoryMiB = 30000
	e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{o, job("G1", 30, 20, 0, 0.8, true), g2}, Policy: pol,
		Sharing: &sim.SharingConfig{Interference: utilModel{}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if oj := byID(t, res, "O"); oj.End != sim.Time(120*sim.Second) || oj.SharedTime() != 70*sim.Second {
		t.Errorf("O ends %s shared %s, want 120s, 70s", oj.End, oj.SharedTime())
	}
}

// Invariants on random workloads (seeded, 200 cases per yield mode): every job
// completes; no guarantee job is ever preempted; under the utilisation model
// every guarantee job runs at full speed throughout (opportunistic jobs only use
// leftovers); and each yield happens at the arrival-time scheduling point of a
// guarantee job that starts then.
func TestAntManInvariantsRandom(t *testing.T) {
	for _, mode := range []string{"suspend", "requeue", "migrate"} {
		rng := rand.New(rand.NewPCG(7, uint64(len(mode))))
		yields, shared := int64(0), 0
		for tc := 0; tc < 200; tc++ {
			var jobs []sim.JobSpec
			for i := 0; i < 12; i++ {
				prio := int32(0)
				if rng.IntN(2) == 0 {
					prio = -1
				}
				util := 0.1 + 0.1*float64(rng.IntN(9))
				j := job(fmt.Sprintf("j%02d", i), float64(rng.IntN(200)), float64(10+rng.IntN(100)), prio, util, rng.IntN(4) != 0)
				if rng.IntN(5) == 0 {
					j.Sharing, j.GPUsPerReplica = sim.AcceptExclusive, 2
				}
				jobs = append(jobs, j)
			}
			params := "{yield: " + mode + "}"
			if mode == "migrate" {
				params = "{yield: migrate, resumeDelay: 3s}"
			}
			res, pol := run(t, 4, params, jobs...)
			yields += pol.Yields
			starts := map[sim.Time]bool{}
			for _, e := range res.Log {
				if e.Kind == sim.EvStart && res.Jobs[e.Job].Spec.Priority >= 0 {
					starts[e.Time] = true
				}
			}
			for i := range res.Jobs {
				j := &res.Jobs[i]
				if j.State != sim.StateCompleted {
					t.Fatalf("%s case %d: %s %s", mode, tc, j.Spec.ID, j.State)
				}
				if j.SharedTime() > 0 {
					shared++
				}
				if j.Spec.Priority >= 0 && (j.Preempted != 0 || j.MinSpeed() != 1) {
					t.Fatalf("%s case %d: guarantee job %s preempted %d, min speed %v", mode, tc, j.Spec.ID, j.Preempted, j.MinSpeed())
				}
			}
			for _, e := range res.Log {
				if (e.Kind == sim.EvSuspend || e.Kind == sim.EvPreempt) && !starts[e.Time] {
					t.Fatalf("%s case %d: %s yielded at %s with no guarantee start then", mode, tc, res.Jobs[e.Job].Spec.ID, e.Time)
				}
			}
		}
		if yields < 50 || shared < 50 {
			t.Errorf("%s: only %d yields and %d shared jobs: the cases do not exercise antman", mode, yields, shared)
		}
		t.Logf("%s: %d yields, %d jobs ran shared", mode, yields, shared)
	}
}
