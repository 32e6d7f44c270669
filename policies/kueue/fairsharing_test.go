package kueue

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

const fsOn = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfairSharing: {}\n"

// cqYAML is a ClusterQueue with GPU (and optionally CPU) quota.
func cqYAML(name, parent, weight string, gpus, cpus int, extra string) string {
	res := "[nvidia.com/gpu]"
	quota := fmt.Sprintf("{name: nvidia.com/gpu, nominalQuota: %d}", gpus)
	if cpus > 0 {
		res = "[nvidia.com/gpu, cpu]"
		quota += fmt.Sprintf(", {name: cpu, nominalQuota: %d}", cpus)
	}
	s := fmt.Sprintf("---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: %s}\nspec:\n  cohortName: %s\n", name, parent)
	if weight != "" {
		s += "  fairSharing: {weight: \"" + weight + "\"}\n"
	}
	s += extra
	s += fmt.Sprintf("  resourceGroups:\n  - coveredResources: %s\n    flavors: [{name: f, resources: [%s]}]\n", res, quota)
	return s + fmt.Sprintf("---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: %s}\nspec: {clusterQueue: %s}\n", name, name)
}

const flavorF = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"

func fsKueue(t *testing.T, grace sim.Duration, parts ...string) *Kueue {
	t.Helper()
	return newKueue(t, flavorF+strings.Join(parts, "")+"---\n"+fsOn, grace)
}

func use(k *Kueue, cq, res string, q int64) {
	k.cqByName[cq].node.addUsage(k.frIndex[[2]string{"f", res}], q)
}

func share(t *testing.T, k *Kueue, name string) float64 {
	t.Helper()
	s, ok := k.DominantResourceShare(name)
	if !ok {
		t.Fatalf("no node %q", name)
	}
	return s
}

// DRS by hand: CQs a and b with nominal 8 GPUs and 100 CPUs each in a cohort of
// 16 GPUs / 200 CPUs. a uses 12 GPUs (4 borrowed of the 16 its parent could
// lend: 1000*4/16 = 250) and 110 CPUs (10 of 200: 50): DRS(a) = max = 250; with
// weight 2 it is 125. b (4 GPUs, below nominal) and the root cohort are at 0.
// Only usage above nominal counts: a at exactly 8 GPUs / 100 CPUs is 0 too.
func TestDRSByHand(t *testing.T) {
	for _, tc := range []struct {
		weight string
		want   float64
	}{{"", 250}, {"2", 125}, {"0.5", 500}} {
		k := fsKueue(t, 0, cqYAML("a", "org", tc.weight, 8, 100, ""), cqYAML("b", "org", "", 8, 100, ""))
		use(k, "a", ResGPU, 12)
		use(k, "a", ResCPU, 110_000)
		use(k, "b", ResGPU, 4)
		if got := share(t, k, "a"); got != tc.want {
			t.Errorf("weight %q: DRS(a) = %v, want %v", tc.weight, got, tc.want)
		}
		if share(t, k, "b") != 0 || share(t, k, "org") != 0 {
			t.Errorf("DRS(b) = %v, DRS(org) = %v, want 0", share(t, k, "b"), share(t, k, "org"))
		}
		use(k, "a", ResGPU, -4)
		use(k, "a", ResCPU, -10_000)
		if got := share(t, k, "a"); got != 0 {
			t.Errorf("at nominal: DRS(a) = %v, want 0", got)
		}
	}
	// weight 0: infinite while borrowing, 0 otherwise.
	k := fsKueue(t, 0, cqYAML("a", "org", "0", 8, 0, ""), cqYAML("b", "org", "", 8, 0, ""))
	if share(t, k, "a") != 0 {
		t.Error("weight 0 below nominal should be 0")
	}
	use(k, "a", ResGPU, 9)
	if !math.IsInf(share(t, k, "a"), 1) {
		t.Errorf("weight 0 borrowing: %v, want +Inf", share(t, k, "a"))
	}
}

// Head ordering by DRS: CQs a, b, c with 8 GPUs each in one cohort (24 GPUs on
// 3 nodes). a runs 9 GPUs, b 8, c 5: 2 GPUs are free. At t=1 a and b each submit
// a 2-GPU job; only one fits. After admission a would borrow 3 (1000*3/24 = 125)
// and b 2 (83.3): fair sharing admits b's job first; with a's weight 2 a's share
// is 62.5 and a goes first. Classical ordering (no Configuration) ties on
// borrowing, priority and time and takes a (lower id). The loser starts at 100.
func TestFairSharingHeadOrder(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("a0").Queue("a").GPUs(1).Replicas(9).Dur(100).Obj(),
		MakeJob("b0").Queue("b").GPUs(8).Dur(100).Obj(),
		MakeJob("c0").Queue("c").GPUs(1).Replicas(5).Dur(100).Obj(),
		MakeJob("a1").Queue("a").GPUs(2).At(1).Dur(100).Obj(),
		MakeJob("b1").Queue("b").GPUs(2).At(1).Dur(100).Obj(),
	}
	for _, tc := range []struct {
		name, weightA string
		fair          bool
		a1, b1        float64
	}{{"fair", "", true, 100, 1}, {"fair-weight-2", "2", true, 1, 100}, {"classical", "2", false, 1, 100}} {
		m := flavorF + cqYAML("a", "org", tc.weightA, 8, 0, "") + cqYAML("b", "org", "", 8, 0, "") + cqYAML("c", "org", "", 8, 0, "")
		if tc.fair {
			m += "---\n" + fsOn
		}
		k := newKueue(t, m, 0)
		res := Run(t, Nodes(3, 8), k, jobs...)
		if st := Starts(res); st["a1"] != tc.a1 || st["b1"] != tc.b1 {
			t.Errorf("%s: starts %v, want a1 %v b1 %v", tc.name, st, tc.a1, tc.b1)
		}
	}
}

// The tournament directly: below nominal every share is 0, so priority then
// time decide; a weight-0 queue that borrows (infinite share) loses against a
// positive weight even with a far larger share; a non-borrowing candidate beats a
// borrowing one (FairSharingPrioritizeNonBorrowing).
func TestTournamentTies(t *testing.T) {
	k := fsKueue(t, 0, cqYAML("a", "org", "0", 8, 0, ""), cqYAML("b", "org", "", 8, 0, ""))
	fr := k.frIndex[[2]string{"f", ResGPU}]
	ent := func(cq string, q int64, prio int32, ref sim.JobRef) *entry {
		j := &sim.Job{Ref: ref}
		return &entry{w: &workload{job: j, cq: k.cqByName[cq], prio: prio}, assign: []frQ{{fr, q}}}
	}
	// Below nominal: tied at 0; b's higher priority wins although a is older.
	es := []*entry{ent("a", 2, 0, 0), ent("b", 2, 5, 1)}
	if got := k.tournament(es); got != 1 {
		t.Errorf("below nominal: winner %d, want b (priority)", got)
	}
	// a (weight 0) would borrow 1 GPU (infinite share); b would borrow 7 (437.5):
	// b wins.
	use(k, "b", ResGPU, 8)
	es = []*entry{ent("a", 9, 9, 0), ent("b", 7, 0, 1)}
	if got := k.tournament(es); got != 1 {
		t.Errorf("weight 0: winner %d, want b", got)
	}
	// a stays within nominal (not borrowing): it beats b, which borrows.
	es = []*entry{ent("a", 8, 0, 1), ent("b", 1, 9, 0)}
	if got := k.tournament(es); got != 0 {
		t.Errorf("non-borrowing: winner %d, want a", got)
	}
}

// Fair preemption with [LessThanOrEqualToFinalShare, LessThanInitialShare]:
// a cohort with its own 6 GPUs and CQs a, b, c of 6 GPUs each (24 on 3 nodes).
// a runs 12 one-GPU jobs (borrowing 6: DRS 250), b runs 8 (borrowing 2: 83.3), c
// runs 4. At t=10 c (reclaimWithinCohort: Any) submits a 4-GPU job: c would
// borrow 2 (P' = 83.3). The target is always the highest share, a: removing one
// job leaves a at 208, 167, 125, then 83.3 >= P' — 4 victims, all from a (its
// most recently admitted jobs), none from b. A 5-GPU job (P' = 125) may take
// only 3 from a before the shares cross (a at 125 is not above P', b would drop
// to 41.7 < 125) and LessThanInitialShare (P' < T) fails for both: no
// preemption, the job waits for capacity at 1000. With only
// LessThanOrEqualToFinalShare the 4-GPU case is the same (the 4th victim leaves
// a exactly at P', which "<=" allows); with only LessThanInitialShare, too (a's
// share before each removal is above P').
func TestFairPreemptionStopsWhenSharesCross(t *testing.T) {
	cohort := "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: org}\nspec:\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 6}]}]\n"
	four := []string{"a08", "a09", "a10", "a11"}
	for _, tc := range []struct {
		strategies string
		gpus       int32
		start      float64
		victims    []string
	}{{"", 4, 10, four}, {"", 5, 1000, nil},
		{"[LessThanOrEqualToFinalShare]", 4, 10, four}, {"[LessThanInitialShare]", 4, 10, four}} {
		config := fsOn
		if tc.strategies != "" {
			config = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfairSharing: {preemptionStrategies: " + tc.strategies + "}\n"
		}
		k := newKueue(t, flavorF+cohort+cqYAML("a", "org", "", 6, 0, "")+cqYAML("b", "org", "", 6, 0, "")+
			cqYAML("c", "org", "", 6, 0, "  preemption: {reclaimWithinCohort: Any}\n")+"---\n"+config, 0)
		var jobs []sim.JobSpec
		for i := 0; i < 12; i++ {
			jobs = append(jobs, MakeJob(fmt.Sprintf("a%02d", i)).Queue("a").Dur(1000).Obj())
		}
		for i := 0; i < 8; i++ {
			jobs = append(jobs, MakeJob(fmt.Sprintf("b%02d", i)).Queue("b").At(1).Dur(1000).Obj())
		}
		jobs = append(jobs, MakeJob("c0").Queue("c").GPUs(4).At(2).Dur(1000).Obj(),
			MakeJob("c1").Queue("c").GPUs(1).Replicas(tc.gpus).At(10).Dur(100).Obj())
		res := Run(t, Nodes(3, 8), k, jobs...)
		if st := Starts(res); st["c1"] != tc.start {
			t.Errorf("%s %d GPUs: c1 started at %v, want %v\n%s", tc.strategies, tc.gpus, st["c1"], tc.start, Schedule(res))
		}
		var victims []string
		for i := range res.Jobs {
			if res.Jobs[i].Preempted > 0 {
				victims = append(victims, string(res.Jobs[i].Spec.ID))
			}
		}
		if fmt.Sprint(victims) != fmt.Sprint(tc.victims) {
			t.Errorf("%s %d GPUs: victims %v, want %v", tc.strategies, tc.gpus, victims, tc.victims)
		}
	}
}

// Hierarchical cohorts: root r has cohort x (CQs x1, x2 with 4 GPUs each) and
// CQ y (8 GPUs); 16 GPUs on 2 nodes. y runs 12 one-GPU jobs (borrowing x's 4).
// x1 (reclaimWithinCohort: Any) submits an 8-GPU gang: x1 itself would borrow
// 4 (share 250 against y's 250, so a CQ-level test would refuse every victim:
// T' = 187.5 < 250), but the shares are compared at the almost-LCA level, x
// (usage 8 = its quota: share 0) against y: y loses its 4 most recent jobs and
// the gang starts at once (grace 0).
func TestFairPreemptionAlmostLCA(t *testing.T) {
	x := "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\nspec: {parentName: r}\n"
	k := fsKueue(t, 0, x, cqYAML("x1", "x", "", 4, 0, "  preemption: {reclaimWithinCohort: Any}\n"), cqYAML("x2", "x", "", 4, 0, ""), cqYAML("y", "r", "", 8, 0, ""))
	var jobs []sim.JobSpec
	for i := 0; i < 12; i++ {
		jobs = append(jobs, MakeJob(fmt.Sprintf("y%02d", i)).Queue("y").Dur(1000).Obj())
	}
	jobs = append(jobs, MakeJob("gang").Queue("x1").GPUs(1).Replicas(8).At(10).Dur(100).Obj())
	res := Run(t, Nodes(2, 8), k, jobs...)
	if st := Starts(res); st["gang"] != 10 {
		t.Errorf("gang started at %v, want 10\n%s", st["gang"], Schedule(res))
	}
	var victims []string
	for i := range res.Jobs {
		if res.Jobs[i].Preempted > 0 {
			victims = append(victims, string(res.Jobs[i].Spec.ID))
		}
	}
	if fmt.Sprint(victims) != "[y08 y09 y10 y11]" {
		t.Errorf("victims %v, want [y08 y09 y10 y11]", victims)
	}
}

// The Kueue documentation's fair-sharing, Admission Fair Sharing and
// waitForPodsReady setups load with their features simulated (no "ignored"
// warning) and run a mixed workload to completion.
func TestFairSharingExamplesSimulated(t *testing.T) {
	for _, tc := range []struct {
		file, lq   string
		fair, afs  bool
		podsReady  bool
		blockAdmit bool
	}{
		{"../../examples/kueue/fair-sharing.yaml", "vision", true, false, false, false},
		{"testdata/fair-sharing.yaml", "team-a/lq", true, false, false, false},
		{"testdata/admission-fair-sharing.yaml", "team-a/team-a-queue", false, true, false, false},
		{"testdata/wait-for-pods-ready.yaml", "user-queue", false, false, true, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := Params{Manifests: tc.file}
			p.QueueMapping.Default = tc.lq
			p.QueueMapping.Map = map[string]string{"b": "team-b/lq", "nlp": "nlp", "tb": "team-b/team-b-queue"}
			k, err := New(p, policies.Env{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range k.Warnings() {
				if strings.Contains(w, "ignored") || strings.Contains(w, "Configuration") {
					t.Errorf("unexpected warning %q", w)
				}
			}
			if k.fairOn() != tc.fair || k.afsOn() != tc.afs || (k.m.Config.WaitForPodsReady != nil) != tc.podsReady {
				t.Errorf("fair %v afs %v podsReady %v", k.fairOn(), k.afsOn(), k.m.Config.WaitForPodsReady != nil)
			}
			if pr := k.m.Config.WaitForPodsReady; tc.podsReady && (pr == nil || pr.BlockAdmission != tc.blockAdmit) {
				t.Errorf("waitForPodsReady %+v", pr)
			}
			var jobs []sim.JobSpec
			queues := []string{"", "b", "nlp", "tb"}
			for i := 0; i < 40; i++ {
				jobs = append(jobs, MakeJob(fmt.Sprintf("j%02d", i)).Queue(queues[i%4]).GPUs(int32(1<<(i%4))).At(float64(i)).Dur(100).CPU(4000).Obj())
			}
			res := Run(t, Nodes(4, 8), k, jobs...)
			for i := range res.Jobs {
				if res.Jobs[i].State != sim.StateCompleted {
					t.Fatalf("job %s ended %s", res.Jobs[i].Spec.ID, res.Jobs[i].State)
				}
			}
		})
	}
}
