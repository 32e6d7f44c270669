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
