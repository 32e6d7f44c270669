package sim_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// rerating wraps randomElastic: after its starts, resizes and lease ends it
// re-rates running jobs at random (also inside a restore or rescale delay),
// and checks that a rate change keeps the work done to the µs and that a job
// it left untouched since the previous point, past its delays at both, did
// exactly rate × elapsed of work (to 2 µs).
type rerating struct {
	randomElastic
	rate   map[sim.JobRef]float64 // current rate of running jobs
	snap   map[sim.JobRef][2]float64
	at     sim.Time
	checks *int
}

func (r *rerating) Schedule(v *sim.View, p *sim.Plan) error {
	now := v.Now()
	for _, j := range v.Running() {
		s, ok := r.snap[j.Ref]
		if !ok || !j.Resizable(now) {
			continue
		}
		*r.checks++
		want := s[0] + s[1]*float64(now-r.at)
		if got := float64(v.WorkDone(j.Ref)); math.Abs(got-want) > 2 && got < float64(j.Spec.Duration) {
			r.t.Fatalf("t=%s job %s: work %v, want %v (rate %v since t=%s)", now, j, got, want, s[1], r.at)
		}
	}
	if err := r.randomElastic.Schedule(v, p); err != nil {
		return err
	}
	touched := map[sim.JobRef]bool{}
	for _, s := range p.Starts {
		touched[s.Job] = true
	}
	for _, s := range p.Resizes {
		touched[s.Job] = true
	}
	for _, s := range p.Preempts {
		touched[s.Job] = true
		delete(r.rate, s.Job)
	}
	clear(r.snap)
	r.at = now
	for _, j := range v.Running() {
		if touched[j.Ref] || r.rate[j.Ref] == 0 {
			r.rate[j.Ref] = float64(len(j.Nodes)) / float64(j.Spec.Replicas)
		}
		if rapid.IntRange(0, 2).Draw(r.t, "rerate") == 0 {
			x := []float64{0.25, 0.5, 1.5, 3}[rapid.IntRange(0, 3).Draw(r.t, "rate")]
			w0 := v.WorkDone(j.Ref)
			if err := p.AddRate(j.Ref, x); err != nil {
				return err
			}
			if w1 := v.WorkDone(j.Ref); w1 != w0 {
				r.t.Fatalf("t=%s job %s: work %s before the rate change, %s after", now, j, w0, w1)
			}
			r.rate[j.Ref] = x
			touched[j.Ref] = touched[j.Ref] || !j.Resizable(now)
		}
		if !touched[j.Ref] && j.Resizable(now) {
			r.snap[j.Ref] = [2]float64{float64(v.WorkDone(j.Ref)), r.rate[j.Ref]}
		}
	}
	return nil
}

// TestRerateProperties: random elastic jobs under random starts, resizes,
// lease ends and rate changes all complete with their whole work, running
// sizes stay valid (randomElastic's checks), and between two points the work
// of an untouched job grows by its current rate × elapsed time: a rate change
// re-segments progress without losing or inventing work.
func TestRerateProperties(t *testing.T) {
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		nj := rapid.IntRange(1, 5).Draw(rt, "jobs")
		var jobs []sim.JobSpec
		for i := range nj {
			hi := rapid.Int32Range(1, 4).Draw(rt, "max")
			s := elasticJob(string(rune('a'+i)), 1, 1, hi, 1, float64(rapid.IntRange(1, 500).Draw(rt, "dur")))
			s.Submit = sim.Time(sim.Seconds(float64(rapid.IntRange(0, 100).Draw(rt, "submit"))))
			jobs = append(jobs, s)
		}
		delay := sim.Seconds(float64(rapid.IntRange(0, 20).Draw(rt, "delay")))
		restore := sim.Seconds(float64(rapid.IntRange(0, 20).Draw(rt, "restore")))
		pol := &rerating{randomElastic: randomElastic{t: rt, preempt: map[sim.JobRef]int{}}, rate: map[sim.JobRef]float64{}, snap: map[sim.JobRef][2]float64{}, checks: &checks}
		res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(2, 4)), Jobs: jobs, Policy: pol,
			RescaleDelay: &delay, CheckpointRestore: restore})
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if j.State != sim.StateCompleted || j.Done != j.Spec.Duration {
				rt.Fatalf("job %s: %s with %s of %s done", j, j.State, j.Done, j.Spec.Duration)
			}
		}
	})
	if checks == 0 {
		t.Fatal("no work check ran")
	}
	t.Logf("%d work checks", checks)
}
