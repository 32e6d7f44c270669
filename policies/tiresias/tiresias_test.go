package tiresias

import (
	"fmt"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func newT(t testing.TB, params string) sim.Policy {
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
	for _, bad := range []string{"thresholds: [100s, 50s]", "service: gpus", "promoteKnob: -1", "placement: nope",
		"mode: las", "queueOrder: lifo", "accounting: approx"} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(bad), &doc); err != nil {
			t.Fatal(err)
		}
		if _, err := policies.New("tiresias", doc.Content[0]); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The simulator's demotion accounting at the threshold, by hand (the case of
// TestDemotionByHand). One 4-GPU node, queues split at 100 GPU-seconds; A (4
// GPUs as 4 one-GPU replicas, 200 s) starts at 0 and its next check is
// floor(100/4) = 25 s. B (2 GPUs, 50 s) arrives at 10: A has 10 s, 40 GPU-s;
// the check is recomputed as in dlas_sim_jobs from the executed seconds, not
// the GPU-seconds: 10 + floor((100-10)/4) = 32 (the exact crossing is at 25,
// and the wake-up left for 25 does nothing). At 32 A has 128 GPU-s and drops;
// B starts, A is preempted with 32 s done; B ends at 82, A resumes and ends
// at 82 + 168 = 250.
func TestSimulatorAccountingByHand(t *testing.T) {
	pol := newT(t, "thresholds: [100s]\naccounting: simulator\nplacement: first-fit")
	res := Run(t, Nodes(1, 4), pol,
		MakeJob("A").Replicas(4).GPUs(1).Dur(200).Obj(),
		MakeJob("B").Replicas(2).GPUs(1).Dur(50).At(10).Obj())
	st := Starts(res)
	a, b := &res.Jobs[0], &res.Jobs[1]
	if st["B"] != 32 || b.End.Seconds() != 82 || a.End.Seconds() != 250 || a.Preempted != 1 || pol.(*Tiresias).Demotions != 1 {
		t.Errorf("B starts %v ends %v; A ends %v preempted %d; demotions %d; want 32 82 250 1 1\n%s",
			st["B"], b.End.Seconds(), a.End.Seconds(), a.Preempted, pol.(*Tiresias).Demotions, Schedule(res))
	}
	// At a check a job below the threshold by whole seconds is not demoted:
	// alone, A (4 GPUs, threshold 102 GPU-s) is checked at floor(102/4) = 25 s
	// with 100 GPU-s, then at 25 + floor(77/4) = 44 s, where it drops.
	pol = newT(t, "thresholds: [102s]\naccounting: simulator\nplacement: first-fit")
	var at float64
	res = Run(t, Nodes(1, 4), demotionClock{pol.(*Tiresias), &at},
		MakeJob("A").Replicas(4).GPUs(1).Dur(200).Obj())
	if at != 44 {
		t.Errorf("A demoted at %v s, want 44\n%s", at, Schedule(res))
	}
}

// demotionClock records when the wrapped policy first demotes a job.
type demotionClock struct {
	*Tiresias
	at *float64
}

func (d demotionClock) Schedule(v *sim.View, p *sim.Plan) error {
	n := d.Demotions
	err := d.Tiresias.Schedule(v, p)
	if n == 0 && d.Demotions > 0 {
		*d.at = v.Now().Seconds()
	}
	return err
}

// Queue order running-first (dlas_sim_jobs) against entry order, by hand. One
// 4-GPU node, one queue. X (3 GPUs, 100 s) runs from 0; Y (4 GPUs, 100 s)
// arrives at 1 and waits; Z (1 GPU, 100 s) arrives at 2 and runs beside X. When
// X ends at 100, entry order puts Y (entered at 1) before Z: Y starts and Z is
// preempted with 98 s done (it ends at 200 + 2 = 202). running-first keeps Z
// (running) ahead of Y (waiting): Z ends at 102 and Y runs 102-202.
func TestRunningFirstByHand(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("X").Replicas(3).GPUs(1).Dur(100).Obj(),
		MakeJob("Y").Replicas(4).GPUs(1).Dur(100).At(1).Obj(),
		MakeJob("Z").Replicas(1).GPUs(1).Dur(100).At(2).Obj(),
	}
	res := Run(t, Nodes(1, 4), newT(t, "placement: first-fit"), jobs...)
	if st := Starts(res); st["Y"] != 100 || res.Jobs[2].End.Seconds() != 202 || res.Jobs[2].Preempted != 1 {
		t.Errorf("entry: Y starts %v, Z ends %v preempted %d; want 100, 202, 1\n%s", st["Y"], res.Jobs[2].End.Seconds(), res.Jobs[2].Preempted, Schedule(res))
	}
	res = Run(t, Nodes(1, 4), newT(t, "placement: first-fit\nqueueOrder: running-first"), jobs...)
	if st := Starts(res); st["Y"] != 102 || res.Jobs[2].End.Seconds() != 102 || res.Jobs[2].Preempted != 0 {
		t.Errorf("running-first: Y starts %v, Z ends %v preempted %d; want 102, 102, 0\n%s", st["Y"], res.Jobs[2].End.Seconds(), res.Jobs[2].Preempted, Schedule(res))
	}
}

// Mode sjf (smallest_first_sim_jobs) by hand. One 4-GPU node. L (4 GPUs, 100
// s) runs from 0; S (1 GPU, 10 s) arrives at 5: fewest GPUs first selects S,
// then L no longer fits and is preempted with 5 s done. S ends at 15; L
// resumes at 15. T1 and T2 (2 GPUs each, 10 s, at 20 and 21) both go before
// L (4 GPUs): L is preempted again at 20 with 10 s done in all, T1 runs 20-30
// and T2 21-31 (the 2 GPUs L left idle from 20 to 21 wait for it), and L
// resumes at 31 and ends at 31 + 90 = 121.
func TestSJFByHand(t *testing.T) {
	res := Run(t, Nodes(1, 4), newT(t, "mode: sjf\nplacement: first-fit"),
		MakeJob("L").Replicas(4).GPUs(1).Dur(100).Obj(),
		MakeJob("S").Replicas(1).GPUs(1).Dur(10).At(5).Obj(),
		MakeJob("T1").Replicas(2).GPUs(1).Dur(10).At(20).Obj(),
		MakeJob("T2").Replicas(2).GPUs(1).Dur(10).At(21).Obj())
	st := Starts(res)
	l := &res.Jobs[0]
	if st["S"] != 5 || st["T1"] != 20 || st["T2"] != 21 || l.End.Seconds() != 121 || l.Preempted != 2 {
		t.Errorf("S %v T1 %v T2 %v start, L ends %v preempted %d; want 5 20 21 121 2\n%s",
			st["S"], st["T1"], st["T2"], l.End.Seconds(), l.Preempted, Schedule(res))
	}
}
