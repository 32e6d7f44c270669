package kueue

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func preemptedIDs(res *sim.Result) []string {
	var v []string
	for i := range res.Jobs {
		if res.Jobs[i].Preempted > 0 {
			v = append(v, string(res.Jobs[i].Spec.ID))
		}
	}
	return v
}

// Only the flavor-resources that need preemption choose victims (Kueue
// preemption.go flavorResourcesNeedPreemption, findCandidates / cqIsBorrowing,
// classical.WorkloadUsesResources and candidateIsValid): a ClusterQueue that
// borrows CPU but not GPUs loses nothing to a preemptor whose CPU request fits
// and whose GPUs do not.
//
// Cohort of a (8 GPUs, 200 CPUs; reclaimWithinCohort: Any), b (8 GPUs, 20 CPUs)
// and c (8 GPUs): 24 GPUs, 220 CPUs on 3 nodes. c runs C1 and C2 (8 GPUs each,
// borrowing 8 GPUs: DRS 1000*8/24 = 333); b runs B1 (8 GPUs, 120 CPUs: within
// its GPU quota, borrowing 100 CPUs: DRS 1000*100/220 = 455), admitted last.
// At t=10 a submits P (8 GPUs, 10 CPUs): its CPUs fit (100 free), its GPUs need
// preemption, and a stays within its nominal quota. Classical: the candidates are
// c's (b is within nominal on GPUs); C2, the most recently admitted, is enough.
// Fair sharing: b is no candidate either (although its DRS is the highest), and
// a within nominal reclaims C2 without a strategy test. Grace 0: P starts at 10.
// Counting every requested resource made B1 (most recent; highest DRS) the victim.
func TestPreemptionOnlyForResourcesNeedingIt(t *testing.T) {
	for _, fair := range []bool{false, true} {
		m := flavorF + cqYAML("a", "org", "", 8, 200, "  preemption: {reclaimWithinCohort: Any}\n") +
			cqYAML("b", "org", "", 8, 20, "") + cqYAML("c", "org", "", 8, 0, "")
		if fair {
			m += "---\n" + fsOn
		}
		k := newKueue(t, m, 0)
		res := Run(t, Nodes(3, 8), k,
			MakeJob("C1").Queue("c").GPUs(8).Dur(1000).Obj(),
			MakeJob("C2").Queue("c").GPUs(8).At(0.5).Dur(1000).Obj(),
			MakeJob("B1").Queue("b").GPUs(8).CPU(120_000).At(1).Dur(1000).Obj(),
			MakeJob("P").Queue("a").GPUs(8).CPU(10_000).At(10).Dur(100).Obj())
		if st := Starts(res); st["P"] != 10 {
			t.Errorf("fair=%v: P started at %v, want 10\n%s", fair, st["P"], Schedule(res))
		}
		if v := fmt.Sprint(preemptedIDs(res)); v != "[C2]" {
			t.Errorf("fair=%v: victims %v, want [C2]", fair, v)
		}
	}
}

// Classical preemption in a cohort tree (Kueue classical/hierarchical_preemption.go
// collectCandidatesForHierarchicalReclaim, preemption.go classicalPreemptions):
// root r has cohort x (x1 with reclaimWithinCohort: Any and x2, 4 GPUs each) and
// CQ y (8 GPUs); 16 GPUs on 2 nodes. y runs 12 one-GPU jobs, borrowing x's 4.
// x1 submits an 8-GPU gang: x1 itself would borrow 4 (from x2's idle quota), but
// the gang fits x's subtree quota (8), so x1 has the hierarchical advantage over
// the workloads y stores above its quota: they are evictable although x1 will
// borrow. y loses its 4 most recent jobs and the gang starts at once (grace 0).
// Treating every cross-queue victim as "only if the preemptor does not borrow"
// left the gang waiting until y's jobs end at 1000.
func TestClassicalHierarchicalReclaim(t *testing.T) {
	x := "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\nspec: {parentName: r}\n"
	k := newKueue(t, flavorF+x+cqYAML("x1", "x", "", 4, 0, "  preemption: {reclaimWithinCohort: Any}\n")+
		cqYAML("x2", "x", "", 4, 0, "")+cqYAML("y", "r", "", 8, 0, ""), 0)
	var jobs []sim.JobSpec
	for i := 0; i < 12; i++ {
		jobs = append(jobs, MakeJob(fmt.Sprintf("y%02d", i)).Queue("y").Dur(1000).Obj())
	}
	jobs = append(jobs, MakeJob("gang").Queue("x1").GPUs(1).Replicas(8).At(10).Dur(100).Obj())
	res := Run(t, Nodes(2, 8), k, jobs...)
	if st := Starts(res); st["gang"] != 10 {
		t.Errorf("gang started at %v, want 10\n%s", st["gang"], Schedule(res))
	}
	if v := fmt.Sprint(preemptedIDs(res)); v != "[y08 y09 y10 y11]" {
		t.Errorf("victims %v, want [y08 y09 y10 y11]", v)
	}
}

// The hierarchical advantage also holds for a preemptor whose ClusterQueue is
// already at its nominal quota (so the only attempt allows borrowing, and
// cross-queue candidates are valid only if hierarchical). The tree of
// TestClassicalHierarchicalReclaim; x1 runs X0 (4 GPUs, its whole nominal quota)
// and y runs 12 one-GPU jobs (borrowing x2's idle 4): the cluster is full. At 10
// x1 submits P (4 x 1 GPU): x1 would borrow 4, but P fits x's subtree quota (8),
// so y's workloads above its quota are hierarchical candidates: y loses its 4
// most recent jobs and P starts at once (grace 0). It also pins targets'
// shortcut (hierPossible): a walk whose adv turns true only at a cohort above
// the preemptor's ClusterQueue must not be skipped.
func TestClassicalHierarchicalReclaimAtNominal(t *testing.T) {
	x := "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\nspec: {parentName: r}\n"
	k := newKueue(t, flavorF+x+cqYAML("x1", "x", "", 4, 0, "  preemption: {reclaimWithinCohort: Any}\n")+
		cqYAML("x2", "x", "", 4, 0, "")+cqYAML("y", "r", "", 8, 0, ""), 0)
	jobs := []sim.JobSpec{MakeJob("X0").Queue("x1").GPUs(4).Dur(1000).Obj()}
	for i := 0; i < 12; i++ {
		jobs = append(jobs, MakeJob(fmt.Sprintf("y%02d", i)).Queue("y").Dur(1000).Obj())
	}
	jobs = append(jobs, MakeJob("P").Queue("x1").GPUs(1).Replicas(4).At(10).Dur(100).Obj())
	res := Run(t, Nodes(2, 8), k, jobs...)
	if st := Starts(res); st["P"] != 10 || st["X0"] != 0 || st["y11"] != 0 {
		t.Errorf("P started at %v (X0 at %v, y11 at %v), want 10 (0, 0)\n%s", st["P"], st["X0"], st["y11"], Schedule(res))
	}
	if v := fmt.Sprint(preemptedIDs(res)); v != "[y08 y09 y10 y11]" {
		t.Errorf("victims %v, want [y08 y09 y10 y11]", v)
	}
}

// A preemptor whose ClusterQueue already uses its whole nominal quota, without
// borrowWithinCohort, may only evict its own workloads (Kueue
// classicalPreemptions: borrowing forbidden and the queue not under nominal ->
// the single attempt with borrowing, in which ReclaimWithoutBorrowing candidates
// are invalid). Cohort of a (8 GPUs; withinClusterQueue and reclaimWithinCohort
// LowerPriority), b and c (8 GPUs each): 24 GPUs on 3 nodes. a runs L then M
// (4 GPUs each, priority 0), b runs B1..B3 (4 GPUs each, borrowing 4), c nothing;
// 4 GPUs are free. P (a, 2 x 4 GPUs, priority 10) needs 4 more: M, a's most
// recently admitted, is the only victim, and P starts at once (grace 0) while
// borrowing. An attempt without borrowing first (b's workloads, then M and L)
// evicted M and L.
func TestClassicalOwnQueueWhenAtNominal(t *testing.T) {
	k := newKueue(t, flavorF+cqYAML("a", "org", "", 8, 0, "  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: LowerPriority}\n")+
		cqYAML("b", "org", "", 8, 0, "")+cqYAML("c", "org", "", 8, 0, ""), 0)
	res := Run(t, Nodes(3, 8), k,
		MakeJob("L").Queue("a").GPUs(4).Dur(1000).Obj(),
		MakeJob("M").Queue("a").GPUs(4).At(1).Dur(1000).Obj(),
		MakeJob("B1").Queue("b").GPUs(4).At(2).Dur(1000).Obj(),
		MakeJob("B2").Queue("b").GPUs(4).At(2).Dur(1000).Obj(),
		MakeJob("B3").Queue("b").GPUs(4).At(2).Dur(1000).Obj(),
		MakeJob("P").Queue("a").GPUs(4).Replicas(2).Prio(10).At(10).Dur(100).Obj())
	if st := Starts(res); st["P"] != 10 {
		t.Errorf("P started at %v, want 10\n%s", st["P"], Schedule(res))
	}
	if v := fmt.Sprint(preemptedIDs(res)); v != "[M]" {
		t.Errorf("victims %v, want [M]", v)
	}
}

// A head that needs preemption but has no candidates, in a ClusterQueue that
// cannot always reclaim (reclaimWithinCohort not Any), holds its quota for the
// rest of the cycle (Kueue scheduler.go reserveCapacityForUnreclaimablePreempt,
// quotaResourcesToReserve); a StrictFIFO head stays and does so every cycle.
// Cohort of a (8 GPUs, StrictFIFO, withinClusterQueue: LowerPriority) and b
// (8 GPUs); 2 nodes of 8. a runs A1 (4 GPUs, priority 10, until 100), b runs B1
// (8 GPUs, until 1000). At 10, a's head P (8 GPUs, priority 5) would borrow 4
// and only 4 GPUs are free: it needs preemption, and A1 (higher priority) is no
// candidate, so P holds its 8 GPUs. b's head Q (4 GPUs, processed after P:
// same borrowing, lower priority) would fit the 4 free GPUs but is held back.
// At 100 A1 ends and P starts; Q starts when P ends at 200. Without the hold Q
// started at 10 and P waited for B1 until 1000.
func TestStrictFIFOHoldsQuotaWithoutCandidates(t *testing.T) {
	k := newKueue(t, flavorF+cqYAML("a", "org", "", 8, 0, "  queueingStrategy: StrictFIFO\n  preemption: {withinClusterQueue: LowerPriority}\n")+
		cqYAML("b", "org", "", 8, 0, ""), 0)
	res := Run(t, Nodes(2, 8), k,
		MakeJob("A1").Queue("a").GPUs(4).Prio(10).Dur(100).Obj(),
		MakeJob("B1").Queue("b").GPUs(8).Dur(1000).Obj(),
		MakeJob("P").Queue("a").GPUs(8).Prio(5).At(10).Dur(100).Obj(),
		MakeJob("Q").Queue("b").GPUs(4).At(10).Dur(1000).Obj())
	if st := Starts(res); st["P"] != 100 || st["Q"] != 200 {
		t.Errorf("P started at %v, Q at %v; want 100 and 200\n%s", st["P"], st["Q"], Schedule(res))
	}
}

// A head that needs preemption carries the borrowing level it will have once
// admitted (Kueue flavorassigner fitsResourceQuota: the preemption oracle's
// borrowAfterPreemptions, FindHeightOfLowestSubtreeThatFits), so the classical
// order puts it after non-borrowing heads. a (4 GPUs, withinClusterQueue:
// LowerPriority) uses 8 in a cohort of 8 (b has 4, idle): a 4-GPU head of a
// needs preemption and would borrow (level 1, the root's: no subtree fits);
// before, a preempting head counted as level 0.
func TestPreemptingHeadBorrowingLevel(t *testing.T) {
	k := newKueue(t, flavorF+cqYAML("a", "org", "", 4, 0, "  preemption: {withinClusterQueue: LowerPriority}\n")+cqYAML("b", "org", "", 4, 0, ""), 0)
	use(k, "a", ResGPU, 8)
	j := &sim.Job{Spec: MakeJob("p").Queue("a").GPUs(4).Obj()}
	e := k.nominate(nil, &workload{job: j, cq: k.cqByName["a"]})
	if e.mode != modePreempt || e.borrow != 1 {
		t.Errorf("mode %v borrow %d, want Preempt (%v) and 1", e.mode, e.borrow, modePreempt)
	}
}
