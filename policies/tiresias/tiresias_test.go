package tiresias

import (
	"fmt"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func newT(t *testing.T, params string) sim.Policy {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(params), &doc); err != nil {
		t.Fatal(err)
	}
	var n *yaml.Node
	if len(doc.Content) > 0 {
		n = doc.Content[0]
	}
	p, err := policies.New("tiresias", n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A demotion at the threshold, by hand. One 4-GPU node, two queues split at 100
// GPU-seconds. A (4 GPUs, 200 s) starts at 0; B (2 GPUs, 50 s) arrives at 10
// into the top queue behind A and does not fit. A attains 100 GPU-s at 25 s and
// drops to the second queue; B, now first, takes 2 GPUs; A needs 4 and is
// preempted, keeping its 25 s of progress. B ends at 75; A resumes and ends at
// 75 + 175 = 250.
func TestDemotionByHand(t *testing.T) {
	res := Run(t, Nodes(1, 4), newT(t, "thresholds: [100s]"),
		MakeJob("A").GPUs(4).Dur(200).Obj(),
		MakeJob("B").GPUs(2).Dur(50).At(10).Obj())
	st := Starts(res)
	a, b := &res.Jobs[0], &res.Jobs[1]
	if st["B"] != 25 || b.End.Seconds() != 75 || a.End.Seconds() != 250 || a.Preempted != 1 || a.Wasted != 0 {
		t.Errorf("B starts %v ends %v; A ends %v preempted %d wasted %s; want 25 75 250 1 0\n%s",
			st["B"], b.End.Seconds(), a.End.Seconds(), a.Preempted, a.Wasted, Schedule(res))
	}
	// With service "time" A's threshold is 100 s of run time: it is demoted at
	// 100 and B runs 100-150; A resumes at 150 and ends at 250 as well.
	res = Run(t, Nodes(1, 4), newT(t, "thresholds: [100s]\nservice: time"),
		MakeJob("A").GPUs(4).Dur(200).Obj(),
		MakeJob("B").GPUs(2).Dur(50).At(10).Obj())
	if st := Starts(res); st["B"] != 100 || res.Jobs[0].End.Seconds() != 250 {
		t.Errorf("service time: B starts %v, A ends %v; want 100 and 250\n%s", st["B"], res.Jobs[0].End.Seconds(), Schedule(res))
	}
}

// No head-of-line blocking: in one queue, a 4-GPU job that does not fit is
// skipped and later 1-GPU jobs run.
func TestSkipsWhatDoesNotFit(t *testing.T) {
	res := Run(t, Nodes(1, 4), newT(t, ""),
		MakeJob("a").GPUs(2).Dur(100).Obj(),
		MakeJob("big").GPUs(4).Dur(10).At(1).Obj(),
		MakeJob("small").GPUs(1).Dur(10).At(2).Obj())
	if st := Starts(res); st["small"] != 2 || st["big"] != 100 {
		t.Errorf("small starts %v (want 2), big %v (want 100)\n%s", st["small"], st["big"], Schedule(res))
	}
}

// Starvation avoidance: one GPU, threshold 10 GPU-s. L (100 s) runs 0-10 and is
// demoted; a stream of 8-s jobs (each finishing inside the top queue) arrives
// every 8 s from 5 s and keeps the top queue busy until about 106 s. Without
// the knob L waits for the stream to end; with promoteKnob 1 a demoted L that
// has waited as long as it ran goes back to the top queue (executed time reset)
// and gets its turns during the stream (it still ends last: the GPU is never
// idle and L has the most work).
func TestPromotion(t *testing.T) {
	jobs := []sim.JobSpec{MakeJob("L").GPUs(1).Dur(100).Obj()}
	for i := range 12 {
		jobs = append(jobs, MakeJob(fmt.Sprintf("s%02d", i)).GPUs(1).Dur(8).At(5+8*float64(i)).Obj())
	}
	pol := newT(t, "thresholds: [10s]\npromoteKnob: 1")
	res := Run(t, Nodes(1, 1), pol, jobs...)
	noKnob := Run(t, Nodes(1, 1), newT(t, "thresholds: [10s]"), jobs...)
	if pol.(*Tiresias).Promotions == 0 {
		t.Errorf("no promotion\n%s", Schedule(res))
	}
	restarts := func(r *sim.Result) (n int) {
		for _, e := range r.Log {
			if e.Kind == sim.EvStart && e.Job == 0 && e.Time > 0 && e.Time < sim.Time(100*sim.Second) {
				n++
			}
		}
		return n
	}
	if w, wo := restarts(res), restarts(noKnob); w < 2 || wo != 0 {
		t.Errorf("L restarted %d times during the stream with the knob (want >= 2: at 26 and 68 s), %d without (want 0)\n%s", w, wo, Schedule(res))
	}
}

func TestParamErrors(t *testing.T) {
	for _, bad := range []string{"thresholds: [100s, 50s]", "service: gpus", "promoteKnob: -1", "placement: nope"} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(bad), &doc); err != nil {
			t.Fatal(err)
		}
		if _, err := policies.New("tiresias", doc.Content[0]); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
