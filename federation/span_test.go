package federation_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/federation"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

func trainingOnly(s *sim.JobSpec) bool { return s.Class == sim.ClassTraining }

func runSpan(t *testing.T, ms []federation.Member, sp *federation.Span, jobs ...sim.JobSpec) *federation.Result {
	t.Helper()
	res, err := federation.RunWith(context.Background(), ms, jobs, federation.FirstFit, sp)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func class(s sim.JobSpec, c sim.JobClass) sim.JobSpec { s.Class = c; return s }

// TestCrossClusterGang is the hand-worked case of docs/federation.md
// ("Cross-cluster gangs"): clusters A and B of 1 node x 8 GPUs, WAN 5 s and
// 20 s, fifo, first-fit, span slowdown 1.5 (no pair entry).
//
//	t=0 a (4 GPUs, 100 s) -> A, arrives 5, runs 5-105.
//	t=0 g (training, 3 x 4 GPUs, 40 s, opted in): no cluster holds 12 GPUs;
//	    split in listed order: A 2 replicas (its most), B 1. Ready at 0 + the
//	    larger WAN = 20; at 20 A has 4 free GPUs, not 8: it waits. At 105 a
//	    ends: both parts start at 105 and run 40 x 1.5 = 60 s: both end 165.
//	t=0 n (experiment, 3 x 4 GPUs, not opted in): fits no cluster ->
//	    rejected, never split.
func TestCrossClusterGang(t *testing.T) {
	ms := []federation.Member{member(t, "A", 1, 8, "fifo", 5), member(t, "B", 1, 8, "fifo", 20)}
	sp := &federation.Span{Eligible: trainingOnly, Slowdown: 1.5}
	res := runSpan(t, ms, sp,
		simtest.MakeJob("a").GPUs(4).Dur(100).Obj(),
		class(simtest.MakeJob("g").GPUs(4).Replicas(3).Dur(40).Obj(), sim.ClassTraining),
		class(simtest.MakeJob("n").GPUs(4).Replicas(3).Dur(40).Obj(), sim.ClassExperiment),
	)
	want := []federation.Decision{
		{Job: "a", Submit: 0, GPUs: 4, Cluster: 0, Arrive: sec(5), Why: federation.WhyRoom, Feasible: 2, Room: 2},
		{Job: "g", Submit: 0, GPUs: 12, Cluster: -1, Arrive: sec(105), Why: federation.WhySpan},
		{Job: "n", Submit: 0, GPUs: 12, Cluster: -1, Arrive: sim.Never, Why: federation.WhyRejected},
	}
	if !reflect.DeepEqual(res.Decisions, want) {
		t.Fatalf("decisions:\n got %+v\nwant %+v", res.Decisions, want)
	}
	if want := map[int]federation.SpanSplit{1: {Clusters: []int{0, 1}, Replicas: []int32{2, 1}}}; !reflect.DeepEqual(res.Spans, want) {
		t.Fatalf("spans %+v, want %+v", res.Spans, want)
	}
	for _, c := range []struct {
		id         sim.JobID
		at         int
		start, end float64
		gpus       int
	}{{"a", 0, 5, 105, 4}, {"g@A", 0, 105, 165, 8}, {"g@B", 1, 105, 165, 4}, {"g", -1, -1, -1, 0}, {"n", -1, -1, -1, 0}} {
		at, s, e := where(t, res, c.id)
		if at != c.at || at >= 0 && (s != sec(c.start) || e != sec(c.end)) {
			t.Errorf("job %s: cluster %d %v-%v, want %d %gs-%gs", c.id, at, s, e, c.at, c.start, c.end)
		}
	}
	// Without the opt-in, g is rejected like n: never split.
	res = runSpan(t, []federation.Member{member(t, "A", 1, 8, "fifo", 5), member(t, "B", 1, 8, "fifo", 20)}, nil,
		class(simtest.MakeJob("g").GPUs(4).Replicas(3).Dur(40).Obj(), sim.ClassTraining))
	if d := res.Decisions[0]; d.Why != federation.WhyRejected || len(res.Clusters[0].Jobs)+len(res.Clusters[1].Jobs) != 0 {
		t.Errorf("without span: %+v", d)
	}
}

// TestSpanPairFactor: a pair entry overrides the default factor.
func TestSpanPairFactor(t *testing.T) {
	ms := []federation.Member{member(t, "A", 1, 8, "fifo", 0), member(t, "B", 1, 8, "fifo", 0)}
	sp := &federation.Span{Eligible: trainingOnly, Slowdown: 1.5, Pairs: map[[2]int]float64{{0, 1}: 2}}
	res := runSpan(t, ms, sp, class(simtest.MakeJob("g").GPUs(8).Replicas(2).Dur(40).At(10).Obj(), sim.ClassTraining))
	for _, id := range []sim.JobID{"g@A", "g@B"} {
		if _, s, e := where(t, res, id); s != sec(10) || e != sec(90) {
			t.Errorf("%s: %v-%v, want 10 s-90 s (40 s x 2)", id, s, e)
		}
	}
}

// TestSpanNeverSplitsOthers: on random workloads with span on for training
// only, a job of any other class is never split (it runs whole in at most one
// cluster), every started spanning gang's parts start and end together and
// add up to its replicas, and the outcome does not depend on input order.
func TestSpanNeverSplitsOthers(t *testing.T) {
	mk := func() []federation.Member {
		return []federation.Member{member(t, "A", 2, 4, "easy-backfill", 3), member(t, "B", 1, 8, "fifo", 1), member(t, "C", 3, 4, "sjf", 9)}
	}
	classes := []sim.JobClass{sim.ClassTraining, sim.ClassExperiment}
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var jobs []sim.JobSpec
		for i := range 80 {
			j := simtest.MakeJob(fmt.Sprintf("j%02d", i)).GPUs(int32(1 << rng.IntN(3))).Replicas(int32(1 + rng.IntN(5))).
				Dur(float64(20 + rng.IntN(200))).At(float64(rng.IntN(600))).Obj()
			j.Class = classes[rng.IntN(2)]
			jobs = append(jobs, j)
		}
		sp := &federation.Span{Eligible: trainingOnly, Slowdown: 1.25}
		base := runSpan(t, mk(), sp, jobs...)
		spec := map[sim.JobID]*sim.JobSpec{}
		for i := range jobs {
			spec[jobs[i].ID] = &jobs[i]
		}
		spanned := 0
		for k, d := range base.Decisions {
			s := spec[d.Job]
			if d.Why == federation.WhySpan {
				if s.Class != sim.ClassTraining {
					t.Fatalf("seed %d: %s (class %s) was split", seed, d.Job, s.Class)
				}
				if d.Arrive == sim.Never {
					continue
				}
				spanned++
				var reps int32
				sp := base.Spans[k]
				for k, c := range sp.Clusters {
					id := sim.JobID(fmt.Sprintf("%s@%s", d.Job, []string{"A", "B", "C"}[c]))
					at, st, _ := where(t, base, id)
					if at != c || st != d.Arrive {
						t.Fatalf("seed %d: part %s in cluster %d from %v, want %d from %v", seed, id, at, st, c, d.Arrive)
					}
					reps += sp.Replicas[k]
				}
				if reps != s.Replicas || len(sp.Clusters) < 2 {
					t.Fatalf("seed %d: %s split into %v (%v replicas) of %d", seed, d.Job, sp.Clusters, sp.Replicas, s.Replicas)
				}
				continue
			}
			where(t, base, d.Job) // fails if it started in two clusters
		}
		ends := map[string]sim.Time{}
		for _, r := range base.Clusters {
			for i := range r.Jobs {
				j := &r.Jobs[i]
				id := string(j.Spec.ID)
				if k := strings.IndexByte(id, '@'); k >= 0 {
					if spec[sim.JobID(id[:k])].Class != sim.ClassTraining {
						t.Fatalf("seed %d: part %s of a job not opted in", seed, id)
					}
					if e, ok := ends[id[:k]]; ok && e != j.End {
						t.Fatalf("seed %d: parts of %s end at %v and %v", seed, id[:k], e, j.End)
					}
					ends[id[:k]] = j.End
				}
			}
		}
		if spanned == 0 {
			t.Fatalf("seed %d: no gang spanned: the test checks nothing", seed)
		}
		sh := append([]sim.JobSpec(nil), jobs...)
		rng.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
		got := runSpan(t, mk(), sp, sh...)
		if !reflect.DeepEqual(got.Decisions, base.Decisions) || !reflect.DeepEqual(got.Spans, base.Spans) {
			t.Fatalf("seed %d: decisions depend on input order", seed)
		}
	}
}
