package kueue

import (
	"math"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

const afsQueues = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  SCOPE
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: heavy}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: light}
spec: {clusterQueue: cq}
---
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
admissionFairSharing: {usageHalfLifeTime: 10m, usageSamplingInterval: 1m}
`

func afsKueue(t *testing.T, scope bool) *Kueue {
	s := "queueingStrategy: BestEffortFIFO"
	if scope {
		s = "admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}"
	}
	return newKueue(t, strings.Replace(afsQueues, "SCOPE", s, 1), 0)
}

// Two LocalQueues in one 8-GPU ClusterQueue. heavy's h0 uses the whole quota
// from 0 to 600 s; h1 (heavy, t=1) and l1 (light, t=2) wait. With
// UsageBasedAdmissionFairSharing light has no usage and goes first at 600 (h1 at
// 700); without it the older h1 goes first.
func TestAFSLessUsedLocalQueueFirst(t *testing.T) {
	for _, tc := range []struct {
		scope  bool
		h1, l1 float64
	}{{true, 700, 600}, {false, 600, 700}} {
		k := afsKueue(t, tc.scope)
		res := Run(t, Nodes(1, 8), k,
			MakeJob("h0").Queue("heavy").GPUs(8).Dur(600).Obj(),
			MakeJob("h1").Queue("heavy").GPUs(8).At(1).Dur(100).Obj(),
			MakeJob("l1").Queue("light").GPUs(8).At(2).Dur(100).Obj())
		if st := Starts(res); st["h1"] != tc.h1 || st["l1"] != tc.l1 {
			t.Errorf("scope %v: starts %v, want h1 %v l1 %v", tc.scope, st, tc.h1, tc.l1)
		}
	}
}

// The decay by hand: half-life 10 min sampled every minute. A LocalQueue with
// 8 consumed GPUs and nothing admitted halves in 10 samples; an admission adds
// the entry penalty alpha(1 min) * 8 = (1 - 0.5^0.1) * 8 at once, which the next
// sample settles into the consumed usage.
func TestAFSDecayByHand(t *testing.T) {
	k := afsKueue(t, true)
	lq := k.afs.lqs["default/heavy"]
	lq.consumed[0] = 8
	k.afsAdvance(sim.Time(10 * sim.Minute))
	if u, _ := k.LocalQueueUsage("default/heavy"); math.Abs(u-4) > 1e-9 {
		t.Errorf("after one half-life: usage %v, want 4", u)
	}
	k.afsAdvance(sim.Time(10*sim.Minute + 59*sim.Second)) // no sample due yet
	if u, _ := k.LocalQueueUsage("default/heavy"); math.Abs(u-4) > 1e-9 {
		t.Errorf("between samples: usage %v, want 4", u)
	}
	j := &sim.Job{Spec: MakeJob("x").GPUs(8).Obj()}
	k.afsOnAdmit(&workload{job: j, wlExt: wlExt{lq: lq}})
	pen := (1 - math.Pow(0.5, 0.1)) * 8
	if u, _ := k.LocalQueueUsage("default/heavy"); math.Abs(u-(4+pen)) > 1e-9 {
		t.Errorf("with entry penalty: usage %v, want %v", u, 4+pen)
	}
	// The 11 min sample: consumed = 0.5^0.1 * 4 + penalty (nothing admitted in
	// the tree), penalty cleared.
	k.afsAdvance(sim.Time(11 * sim.Minute))
	want := math.Pow(0.5, 0.1)*4 + pen
	if u, _ := k.LocalQueueUsage("default/heavy"); math.Abs(u-want) > 1e-9 || lq.penalty[0] != 0 {
		t.Errorf("after the sample: usage %v (penalty %v), want %v", u, lq.penalty[0], want)
	}
	if u, _ := k.LocalQueueUsage("default/light"); u != 0 {
		t.Errorf("light usage %v, want 0", u)
	}
}

// Preemption candidates of one AFS ClusterQueue from different LocalQueues: the
// LocalQueue with higher usage loses first. h0 (heavy, 4 GPUs) runs from 0, l0
// (light, 4 GPUs) from 700; at 710 a higher-priority 4-GPU job needs one victim.
// Without AFS the most recently admitted (l0) is evicted; with AFS heavy's
// usage (about 4 GPUs after 11 samples) beats light's (its entry penalty only):
// h0 is evicted.
func TestAFSPreemptsHigherUsageLocalQueueFirst(t *testing.T) {
	for _, tc := range []struct {
		scope  bool
		victim string
	}{{true, "h0"}, {false, "l0"}} {
		s := "preemption: {withinClusterQueue: LowerPriority}"
		if tc.scope {
			s += "\n  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}"
		}
		k := newKueue(t, strings.Replace(afsQueues, "SCOPE", s, 1), 0)
		res := Run(t, Nodes(1, 8), k,
			MakeJob("h0").Queue("heavy").GPUs(4).Dur(1000).Obj(),
			MakeJob("l0").Queue("light").GPUs(4).At(700).Dur(1000).Obj(),
			MakeJob("p").Queue("light").GPUs(4).Prio(5).At(710).Dur(10).Obj())
		var victims []string
		for i := range res.Jobs {
			if res.Jobs[i].Preempted > 0 {
				victims = append(victims, string(res.Jobs[i].Spec.ID))
			}
		}
		if len(victims) != 1 || victims[0] != tc.victim || Starts(res)["p"] != 710 {
			t.Errorf("scope %v: victims %v, p started at %v; want [%s] at 710", tc.scope, victims, Starts(res)["p"], tc.victim)
		}
	}
}
