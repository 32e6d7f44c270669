package volcano

import (
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// compareVolcano by hand, P = 1 s, one queue q, 1-GPU jobs j1 and j2.
// Volcano: j1 runs 1..11, j2 3..13. gpusim: j1 1.5..11.5, j2 0.2..10.2.
//   - j1 is within 1 s (0.5), j2 is not (2.8).
//   - j1 before j2 in Volcano by 2 s, after in gpusim by 1.3 s: 1 inversion.
//   - at 1.5 s gpusim has started 2 GPUs, Volcano only 1 by 2.5 s: queue q
//     is off (counted once per queue).
//
// Interchangeable jobs a and b (same row): Volcano restarted a (starts 0
// and 50), gpusim b (0 and 50.5). Paired by last start, they agree.
func TestCompareVolcanoByHand(t *testing.T) {
	one := func(id string) sim.JobSpec {
		return sim.JobSpec{ID: sim.JobID(id), Queue: "q", Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU}
	}
	specs := []sim.JobSpec{one("j1"), one("j2")}
	runs := map[string][]vcRun{
		"j1": {{start: 1, end: 11}},
		"j2": {{start: 3, end: 13}},
	}
	rec := &queueRecorder{starts: map[string][]float64{"j1": {1.5}, "j2": {0.2}}, curves: map[string]stepCurve{
		"q": {{1.5, 1}, {11.5, -1}, {0.2, 1}, {10.2, -1}},
	}}
	r := compareVolcano(specs, runs, rec, 1, map[string]string{"j1": "x", "j2": "y"})
	if r.runs != 2 || r.within != 1 || r.inversions != 1 || r.queueViolations != 1 {
		t.Errorf("runs %d within %d inversions %d queues off %d, want 2 1 1 1\n%v", r.runs, r.within, r.inversions, r.queueViolations, r.notes)
	}

	specs = []sim.JobSpec{one("a"), one("b")}
	runs = map[string][]vcRun{
		"a": {{start: 0, end: 40, evicted: true}, {run: 1, start: 50, end: 150}},
		"b": {{start: 0, end: 100}},
	}
	rec = &queueRecorder{starts: map[string][]float64{"a": {0}, "b": {0, 50.5}}, curves: map[string]stepCurve{
		"q": {{0, 1}, {0, 1}, {40, -1}, {50.5, 1}, {100, -1}, {150.5, -1}},
	}}
	r = compareVolcano(specs, runs, rec, 1, map[string]string{"a": "same", "b": "same"})
	if r.runs != 3 || r.within != 3 || r.inversions != 0 || r.queueViolations != 0 || r.restarts != [2]int{1, 1} {
		t.Errorf("paired: runs %d within %d inversions %d queues off %d restarts %v, want 3 3 0 0 [1 1]\n%v",
			r.runs, r.within, r.inversions, r.queueViolations, r.restarts, r.notes)
	}
	// unpaired (different rows), a's restart has no gpusim counterpart
	r = compareVolcano(specs, runs, rec, 1, map[string]string{"a": "x", "b": "y"})
	if r.within == 3 {
		t.Errorf("unpaired: all runs within, want a#1 missed: %v", r.notes)
	}
}
