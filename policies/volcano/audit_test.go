package volcano

import (
	"math"
	"strings"
	"testing"

	. "github.com/gpusim/gpusim/sim/simtest"
)

// Without the enqueue action Volcano's allocate moves Pending PodGroups to Inqueue
// itself (actions/allocate/allocate.go, buildAllocateContext / pickUpQueuesAndJobs:
// "If not config enqueue action, change Pending pg into Inqueue state to avoid
// blocking job scheduling"), so jobs start; they are not stuck Pending forever.
// A Closed queue still allocates nothing: proportion's Allocatable rejects tasks of
// a queue that is not Open (plugins/proportion/proportion.go, queueAllocatable).
func TestAllocateWithoutEnqueueAction(t *testing.T) {
	const params = `actions: "allocate, backfill"
queues: [{name: shut, state: Closed}]`
	res := Run(t, Nodes(1, 8), newVolcano(t, params),
		MakeJob("a").GPUs(4).Dur(10).Obj(),
		MakeJob("b").GPUs(8).At(0.5).Dur(5).Obj(),
	)
	// a starts at once; b (8 GPUs) waits for a's end at 10 s.
	wantStarts(t, res, map[string]float64{"a": 0, "b": 10})
	res = Run(t, Nodes(1, 8), newVolcano(t, params), MakeJob("c").Queue("shut").GPUs(1).Dur(5).Obj())
	wantStarts(t, res, map[string]float64{"c": -1})
}

// Preempt pipelines the preemptor only while its queue stays Allocatable
// (actions/preempt/preempt.go, normalPreempt: "if ssn.Allocatable(currentQueue,
// preemptor) && preemptor.InitResreq.LessEqual(node.FutureIdle())"); otherwise the
// node's evictions are discarded.
//
// 2 nodes x 8 GPUs, queues a (weight 3) and b (weight 5); priority decides victims
// (gang in tier 2). a1 (a, 4 GPUs) runs on n0, bj (b, 8 GPUs) on n1; bp (b, 2 x 8
// GPUs) is pending, so b requests 24. At 5 s hi (a, 8 GPUs, priority 10) arrives:
// requests a 12, b 24 -> deserved a = 16*3/8 = 6, b = 10. On n0, evicting a1 frees
// room (4 free + 4) but leaves a at 0 + 8 > 6: not Allocatable, so hi is not
// pipelined and a1 is not evicted. After a1 and bj end at 100 s the shares stay
// 6 / 10 (requests 8 / 16): neither hi nor bp is ever Allocatable.
func TestPreemptNeedsAllocatable(t *testing.T) {
	v := newVolcano(t, `actions: "enqueue, allocate, preempt, backfill"
evictionGracePeriod: 0.5s
queues: [{name: a, weight: 3}, {name: b, weight: 5}]
tiers:
  - plugins: [{name: priority}, {name: conformance}]
  - plugins: [{name: gang}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
`)
	res := Run(t, Nodes(2, 8), v,
		MakeJob("a1").Queue("a").GPUs(4).Dur(100).Obj(),
		MakeJob("bj").Queue("b").GPUs(8).Dur(100).Obj(),
		MakeJob("bp").Queue("b").GPUs(8).Replicas(2).Dur(10).Obj(),
		MakeJob("hi").Queue("a").GPUs(8).Prio(10).At(5).Dur(10).Obj(),
	)
	wantStarts(t, res, map[string]float64{"a1": 0, "bj": 0, "hi": -1, "bp": -1})
	if p := res.Jobs[0].Preempted; p != 0 {
		t.Errorf("a1 preempted %d times, want 0\n%s", p, Schedule(res))
	}
}

// An evictionGracePeriod of 0 stops the victim at the session that evicted it (the
// pod is deleted at once), and the preemptor starts at the next session.
func TestZeroGracePeriod(t *testing.T) {
	v := newVolcano(t, `actions: "enqueue, allocate, preempt, backfill"
evictionGracePeriod: 0s
tiers:
  - plugins: [{name: priority}, {name: conformance}]
  - plugins: [{name: gang}, {name: drf}, {name: predicates}, {name: nodeorder}]
`)
	res := Run(t, Nodes(1, 8), v,
		MakeJob("lo").GPUs(8).Dur(100).Obj(),
		MakeJob("hi").GPUs(8).Prio(10).At(5).Dur(10).Obj(),
	)
	wantStarts(t, res, map[string]float64{"lo": 0, "hi": 6})
	if !strings.Contains(Schedule(res), "t=5 preempt lo") {
		t.Errorf("want lo stopped at 5 s\n%s", Schedule(res))
	}
}

// Victims are evicted in reverse JobOrderFn order (framework/session_plugins.go,
// BuildVictimsPriorityQueue: "!ssn.JobOrderFn(lvJob, rvJob)"): lower priority first
// (priority plugin), then the larger drf share first (drf orders lower shares
// first), then the newest. On 8 GPUs x (6 GPUs, older) and y (2 GPUs) run at equal
// priority; hi (4 GPUs, priority 10) arrives at 5 s. x's drf share 6/8 is above
// y's 2/8, so x goes first, which frees enough: y keeps running. (Newest-first
// would evict y, then still need x.)
func TestVictimOrderDRFShare(t *testing.T) {
	v := newVolcano(t, `actions: "enqueue, allocate, preempt, backfill"
evictionGracePeriod: 0.5s
tiers:
  - plugins: [{name: priority}, {name: conformance}]
  - plugins: [{name: gang}, {name: drf}, {name: predicates}, {name: nodeorder}]
`)
	res := Run(t, Nodes(1, 8), v,
		MakeJob("x").GPUs(6).Dur(100).Obj(),
		MakeJob("y").GPUs(2).Dur(100).Obj(),
		MakeJob("hi").GPUs(4).Prio(10).At(5).Dur(10).Obj(),
	)
	wantStarts(t, res, map[string]float64{"x": 0, "y": 0, "hi": 6})
	if px, py := res.Jobs[0].Preempted, res.Jobs[1].Preempted; px != 1 || py != 0 {
		t.Errorf("x preempted %d times, y %d; want 1 and 0\n%s", px, py, Schedule(res))
	}
}

// The remaining resources of the water-filling never go negative: Volcano computes
// remaining = ExceededPart(remaining + decreased, increased), clamped at 0 per
// dimension (plugins/proportion/proportion.go OnSessionOpen; before that fix the
// Sub panicked, volcano-sh/volcano#3155, #4273). A guarantee floor can push the
// round's increases past what remains; a negative GPU remainder must not shrink
// the other queues' GPU deserved in later rounds (which continue for CPU).
//
// Total GPU 8, CPU 100; weights 1/1/1. A: guarantee 4 GPUs, requests 8 GPUs and 10
// CPU; B and C request 8 GPUs and 60 CPU each (realCapability GPU 4).
// Round 1 (thirds): A GPU 2.67 -> floored at 4, CPU 10; B, C GPU 2.67, CPU 33.3.
// GPU increases 9.33 > 8: remaining GPU 0 (not -1.33), CPU 23.3.
// Round 2: A unchanged -> met; B, C CPU 41.1, GPU stays 2.67. Round 3: B, C CPU 45.
// Deserved: A 4 GPUs / 10 CPU, B and C 2.67 GPUs / 45 CPU.
func TestWaterFillingRemainingNeverNegative(t *testing.T) {
	total := res{8000, 100000, 0}
	mk := func(req, guar res) *queue {
		return &queue{weight: 1, request: req, guarantee: guar}
	}
	a := mk(res{8000, 10000, 0}, res{4000, 0, 0})
	b := mk(res{8000, 60000, 0}, res{})
	c := mk(res{8000, 60000, 0}, res{})
	qs := []*queue{a, b, c}
	for _, q := range qs {
		q.realCap = add(sub(total, a.guarantee), q.guarantee)
	}
	waterFill(total, qs)
	want := []res{{4000, 10000, 0}, {8000.0 / 3, 45000, 0}, {8000.0 / 3, 45000, 0}}
	for k, q := range qs {
		for d := range numDims {
			if math.Abs(q.deserved[d]-want[k][d]) > 1e-3 {
				t.Errorf("queue %d: deserved %v, want %v", k, q.deserved, want[k])
				break
			}
		}
	}
}

// JobEnqueueable stops at the first tier in which a plugin permits
// (framework/session_plugins.go, JobEnqueueable: "if hasFound { return true }"):
// with proportion in tier 1 and overcommit in tier 2, a job proportion admits is
// Inqueue even though overcommit would reject it. Queues a and b run la and lb
// (4 GPUs each) on 8 GPUs; overcommit-factor 1 leaves no idle room. At 5 s a2 (a,
// 4 GPUs, priority 10) arrives: proportion: 4 + 4 <= realCapability 8 -> Permit,
// so a2 is Inqueue, preempts la (a's deserved is 4: 0 + 4 <= 4 once la is
// evicted) and starts at 6 (grace 0.5 s). Checking overcommit too would leave a2
// Pending until la ends at 100 s.
func TestEnqueueFirstPermittingTier(t *testing.T) {
	v := newVolcano(t, `actions: "enqueue, allocate, preempt, backfill"
evictionGracePeriod: 0.5s
queues: [{name: a}, {name: b}]
tiers:
  - plugins: [{name: priority}, {name: conformance}, {name: proportion}]
  - plugins: [{name: overcommit, arguments: {overcommit-factor: 1}}, {name: gang}, {name: drf}, {name: predicates}, {name: nodeorder}]
`)
	res := Run(t, Nodes(1, 8), v,
		MakeJob("la").Queue("a").GPUs(4).Dur(100).Obj(),
		MakeJob("lb").Queue("b").GPUs(4).Dur(100).Obj(),
		MakeJob("a2").Queue("a").GPUs(4).Prio(10).At(5).Dur(10).Obj(),
	)
	wantStarts(t, res, map[string]float64{"la": 0, "lb": 0, "a2": 6})
}

// A queue's share is the maximum of allocated/deserved over the resources its
// deserved holds (proportion updateShare iterates attr.deserved.ResourceNames(),
// which lists only quantities >= minResource): a dimension whose deserved is 0
// does not count, even with something allocated there (it used to count as 1).
// Deserved 4 GPUs and no CPU, allocated 2 GPUs and 1 core: share 0.5.
func TestShareOnlyOverDeservedResources(t *testing.T) {
	s := &Volcano{}
	q := &queue{deserved: res{4000, 0, 0}, allocated: res{2000, 1000, 0}}
	s.updateShare(q)
	if q.share != 0.5 {
		t.Errorf("share %v, want 0.5", q.share)
	}
}
