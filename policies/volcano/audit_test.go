package volcano

import (
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
