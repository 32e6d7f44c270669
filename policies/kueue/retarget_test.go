package kueue

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// threeCQs is a cohort of three ClusterQueues of 4 GPUs each: a and c reclaim
// their quota from any borrower (reclaimWithinCohort: Any), b never preempts.
const threeCQs = flavorF + `---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  cohortName: org
  preemption: {reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: b}
spec:
  cohortName: org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: c}
spec:
  cohortName: org
  preemption: {reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: a}
spec: {clusterQueue: a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: b}
spec: {clusterQueue: b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: c}
spec: {clusterQueue: c}
`

// retargetKueue is the policy on manifests with a 5 s eviction grace period
// and preemptorReservation set to reserve.
func retargetKueue(t *testing.T, manifests string, reserve bool) *Kueue {
	t.Helper()
	g := policies.Dur(5 * sim.Second)
	k, err := New(Params{Inline: manifests, EvictionGracePeriod: &g, PreemptorReservation: &reserve}, policies.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// releases lists the victims' releases (the engine's preempt events, at the
// end of each grace period) as "job@t".
func releases(res *sim.Result) string {
	var v []string
	for _, e := range res.Log {
		if e.Kind == sim.EvPreempt || e.Kind == sim.EvEvict {
			v = append(v, fmt.Sprintf("%s@%g", res.Jobs[e.Job].Spec.ID, e.Time.Seconds()))
		}
	}
	return strings.Join(v, " ")
}

// preemptorReservation, hand-worked on threeCQs (12 GPUs), grace 5 s: b1, b2,
// b3 (b, 4 GPUs each, 100 s) at 0 fill the cohort, b borrowing 8; a1 (a, 4
// GPUs, 10 s) at 1 reclaims a's quota and evicts b3, the most recently
// admitted (released at 6); c1 (c, 4 GPUs, priority 10, 10 s) arrives at 2.
//
// With the reservation (gpusim's model, the default): a1 holds its 4 GPUs from
// 1, so at 2 the cohort counts b's 12 and a1's 4; b3, being evicted, is no
// candidate, so c1 must evict b2 and b1 (released at 7): three evictions. When
// b3 is gone at 6, a1 still does not fit: c1's reservation and its
// terminating victims b2 and b1 are both counted (12 GPUs). a1 and c1 are
// admitted at 7, and b1 too, on the 4 GPUs left.
//
// Without it (Kueue's re-targeting): at 2 both heads are nominated; c1 (higher
// priority) goes first, its candidates are b3 (evicting, sorted first), b2, b1,
// and b3 alone makes room: "preemption ongoing", no eviction. a1 then needs b3
// and b2, overlapping c1's target: skipped. At 6 b3 is released and the freed 4
// GPUs go to the first head in the classical order, c1 (neither borrows; higher
// priority): it overtakes a1, which must preempt again and evicts b2 (released
// at 11), and is admitted at 11. Two evictions. b2 returns at 16 when c1 ends
// (b2 before b3: same priority and time, lower id); b1 is never evicted.
//
// With fair sharing on, every decision is the same: a and c stay within
// their nominal quota (fair preemption takes b's workloads without comparing
// shares, FairSharingPreemptWithinNominal; b3 first, being evicted, then the
// most recently admitted), and in the tournament a1 and c1 neither borrow
// nor have a share, so priority puts c1 first.
func TestPreemptorReservationOff(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("b1").Queue("b").GPUs(4).Dur(100).Obj(),
		MakeJob("b2").Queue("b").GPUs(4).Dur(100).Obj(),
		MakeJob("b3").Queue("b").GPUs(4).Dur(100).Obj(),
		MakeJob("a1").Queue("a").GPUs(4).At(1).Dur(10).Obj(),
		MakeJob("c1").Queue("c").GPUs(4).Prio(10).At(2).Dur(10).Obj(),
	}
	for _, tc := range []struct {
		reserve  bool
		released string
		a1, c1   float64
		evicted  int
	}{
		{true, "b3@6 b2@7 b1@7", 7, 7, 3},
		{false, "b3@6 b2@11", 11, 6, 2},
	} {
		for _, fair := range []bool{false, true} {
			manifests := threeCQs
			if fair {
				manifests += "---\n" + fsOn
			}
			k := retargetKueue(t, manifests, tc.reserve)
			if k.fairOn() != fair {
				t.Fatalf("fair sharing %v: not configured", fair)
			}
			res := Run(t, Nodes(3, 4), k, jobs...)
			st := Starts(res)
			if got := releases(res); got != tc.released || st["a1"] != tc.a1 || st["c1"] != tc.c1 || k.Evictions() != tc.evicted {
				t.Errorf("preemptorReservation %v, fair sharing %v: released %q (want %q), a1 at %v (want %v), c1 at %v (want %v), %d evictions (want %d)\n%s",
					tc.reserve, fair, got, tc.released, st["a1"], tc.a1, st["c1"], tc.c1, k.Evictions(), tc.evicted, Schedule(res))
			}
		}
	}
}

// Without the reservation the preemptor is an ordinary head: quota freed
// during its victims' grace period admits it at once. Hand-worked on
// threeCQs, grace 5 s: b1 (b, 4 GPUs, 4 s), b2 and b3 (b, 4 GPUs, 100 s) at
// 0; a1 (a, 4 GPUs) at 1 evicts b3 (released at 6). b1 ends at 4: with the
// reservation a1 still waits for b3 (admitted at 6); without it a1 fits the
// 4 GPUs b1 freed and is admitted at 4. Either way b3 is the only eviction,
// and it is admitted again at 6 on the GPUs it released (b back within its
// nominal quota in the first case, borrowing them in the second).
func TestPreemptorReservationOffAdmitsEarly(t *testing.T) {
	for _, tc := range []struct {
		reserve bool
		a1      float64
	}{{true, 6}, {false, 4}} {
		k := retargetKueue(t, threeCQs, tc.reserve)
		res := Run(t, Nodes(3, 4), k,
			MakeJob("b1").Queue("b").GPUs(4).Dur(4).Obj(),
			MakeJob("b2").Queue("b").GPUs(4).Dur(100).Obj(),
			MakeJob("b3").Queue("b").GPUs(4).Dur(100).Obj(),
			MakeJob("a1").Queue("a").GPUs(4).At(1).Dur(10).Obj())
		if got := releases(res); got != "b3@6" || Starts(res)["a1"] != tc.a1 || k.Evictions() != 1 {
			t.Errorf("preemptorReservation %v: released %q (want b3@6), a1 at %v (want %v), %d evictions (want 1)\n%s",
				tc.reserve, got, Starts(res)["a1"], tc.a1, k.Evictions(), Schedule(res))
		}
		var b3Runs int
		for i := range res.Jobs {
			if res.Jobs[i].Spec.ID == "b3" && res.Jobs[i].LastStart.Seconds() == 6 {
				b3Runs++
			}
		}
		if b3Runs != 1 {
			t.Errorf("preemptorReservation %v: b3 not restarted at 6\n%s", tc.reserve, Schedule(res))
		}
	}
}
