package kueue

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// withinCQ is one ClusterQueue cq (LocalQueue q) of gpus GPUs whose
// workloads preempt lower-priority ones (withinClusterQueue: LowerPriority).
func withinCQ(gpus int) string {
	return flavorF + fmt.Sprintf(`---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: %d}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: cq}
`, gpus)
}

// replayGrace (the fidelity replay's hook) replaces the grace period of each
// eviction. Hand-worked, 4 GPUs: L (4 GPUs, 100 s) at 0; H (4 GPUs, priority
// 100, 10 s) at 1 evicts L. evictionGracePeriod is 5 s, so without the hook H
// starts at 6 and L again at 16. With the hook giving L 2.5 s (the lag a
// recording measured), H starts at 3.5 and L at 13.5; the hook is asked once,
// at the eviction (t = 1), for L.
func TestReplayGracePerEviction(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("L").Queue("q").GPUs(4).Dur(100).Obj(),
		MakeJob("H").Queue("q").GPUs(4).Prio(100).At(1).Dur(10).Obj(),
	}
	for _, tc := range []struct {
		hook         bool
		hStart, lEnd float64
	}{{false, 6, 16 + 100}, {true, 3.5, 13.5 + 100}} {
		k := newKueue(t, withinCQ(4), 5*sim.Second)
		var asked []string
		if tc.hook {
			k.replayGrace = func(j *sim.Job, now sim.Time) sim.Duration {
				asked = append(asked, fmt.Sprintf("%s@%g", j.Spec.ID, now.Seconds()))
				return sim.Seconds(2.5)
			}
		}
		res := Run(t, Nodes(1, 8), k, jobs...)
		st := Starts(res)
		var lEnd float64
		for i := range res.Jobs {
			if res.Jobs[i].Spec.ID == "L" {
				lEnd = res.Jobs[i].End.Seconds()
			}
		}
		if st["H"] != tc.hStart || lEnd != tc.lEnd {
			t.Errorf("hook=%v: H started at %v (want %v), L ended at %v (want %v)\n%s", tc.hook, st["H"], tc.hStart, lEnd, tc.lEnd, Schedule(res))
		}
		if tc.hook && fmt.Sprint(asked) != "[L@1]" {
			t.Errorf("hook asked %v, want [L@1]", asked)
		}
	}
}

// Victim ties (issue 17, gap 6). Kueue orders candidates of equal priority
// by quota reservation time, most recent first, and then by Workload UID
// (CandidatesOrdering in pkg/scheduler/preemption/common/ordering.go, v0.16.2
// and v0.17.0). The reservation time is the QuotaReserved condition's
// lastTransitionTime, a metav1.Time that the API stores in whole seconds, so
// two workloads admitted in the same second tie and the (random) UIDs pick
// the victim. gpusim compares exact admission times, then the admission
// sequence. Hand-worked, 8 GPUs, grace 0: L1 (4 GPUs) admitted at 0.2 s, L2
// (4 GPUs) at 0.7 s, H (4 GPUs, priority 100) at 5 s needs one victim.
// gpusim evicts L2, the more recently admitted; Kueue would see both at
// second 0 and evict either. Admitted at one instant (both at 0.2 s), gpusim
// evicts the one admitted second in its cycle order, L2 again.
func TestVictimTieWithinOneSecond(t *testing.T) {
	for _, l2At := range []float64{0.7, 0.2} {
		k := newKueue(t, withinCQ(8), 0)
		res := Run(t, Nodes(1, 8), k,
			MakeJob("L1").Queue("q").GPUs(4).At(0.2).Dur(100).Obj(),
			MakeJob("L2").Queue("q").GPUs(4).At(l2At).Dur(100).Obj(),
			MakeJob("H").Queue("q").GPUs(4).Prio(100).At(5).Dur(10).Obj())
		if v := fmt.Sprint(preemptedIDs(res)); v != "[L2]" {
			t.Errorf("L2 admitted at %v: victims %v, want [L2]\n%s", l2At, v, Schedule(res))
		}
		if st := Starts(res); st["H"] != 5 {
			t.Errorf("L2 admitted at %v: H started at %v, want 5", l2At, st["H"])
		}
	}
}
