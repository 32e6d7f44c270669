package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// TestRerateHandWorked: a 100 s job (preferred 2 replicas, linear rate)
// starts on 1 GPU at t=0, grows to 2 at t=10 with a 10 s rescale delay, is
// re-rated to 2 at t=15 (inside the delay), to 0.5 at t=30 and back to 1 at
// t=50.
//
//	t=0..10   1 replica, rate 0.5: work 5
//	t=10..20  rescale (the change at t=15 keeps the 5 s still due): work 5
//	t=20..30  rate 2:   work 25
//	t=30..50  rate 0.5: work 35
//	t=50..115 rate 1:   work 100 → ends at 115
//
// A rate change is free: overhead is the rescale delay only.
func TestRerateHandWorked(t *testing.T) {
	delay := sim.Seconds(10)
	var workAt50 sim.Duration
	pol := &elasticScript{fn: func(v *sim.View, p *sim.Plan) error {
		now := v.Now()
		switch now {
		case 0:
			n, g := gpuRange(0, 1)
			if err := p.AddStart(0, n, g); err != nil {
				return err
			}
			p.Wake(sim.Time(sim.Seconds(10)))
		case sim.Time(sim.Seconds(10)):
			n, g := gpuRange(1, 2)
			if err := p.AddResize(0, 2, n, g); err != nil {
				return err
			}
			p.Wake(sim.Time(sim.Seconds(15)))
		case sim.Time(sim.Seconds(15)):
			if err := p.AddRate(0, 2); err != nil {
				return err
			}
			if v.Job(0).Resizable(now) {
				t.Errorf("resizable at t=15, inside the rescale delay")
			}
			p.Wake(sim.Time(sim.Seconds(30)))
		case sim.Time(sim.Seconds(30)):
			if got := v.WorkDone(0); got != sim.Seconds(25) {
				t.Errorf("work at t=30: %s, want 25s", got)
			}
			if err := p.AddRate(0, 0.5); err != nil {
				return err
			}
			if err := p.AddRate(0, 0.5); err != nil { // unchanged: not recorded
				return err
			}
			if len(p.Rates) != 1 {
				t.Errorf("rates recorded %d, want 1", len(p.Rates))
			}
			p.Wake(sim.Time(sim.Seconds(50)))
		case sim.Time(sim.Seconds(50)):
			workAt50 = v.WorkDone(0)
			if err := p.AddRate(0, 1); err != nil {
				return err
			}
		}
		return nil
	}}
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(1, 4)), Jobs: []sim.JobSpec{elasticJob("a", 2, 1, 4, 1, 100)}, Policy: pol, RescaleDelay: &delay})
	j := &res.Jobs[0]
	if j.State != sim.StateCompleted || j.End != sim.Time(sim.Seconds(115)) {
		t.Fatalf("state %s end %s, want completed at 115s", j.State, j.End)
	}
	if workAt50 != sim.Seconds(35) {
		t.Errorf("work at t=50: %s, want 35s", workAt50)
	}
	if j.Done != sim.Seconds(100) || j.Overhead != sim.Seconds(10) || j.Wasted != sim.Seconds(10) {
		t.Errorf("done %s overhead %s wasted %s, want 100s 10s 10s", j.Done, j.Overhead, j.Wasted)
	}
	if res.Elastic.Rerates[0] != 3 || res.Elastic.Resizes[0] != 1 || len(res.Elastic.Segs[0]) != 3 {
		t.Errorf("rerates %d resizes %d segs %v, want 3, 1 and start+resize+end", res.Elastic.Rerates[0], res.Elastic.Resizes[0], res.Elastic.Segs[0])
	}
}

// TestRerateRefused: a rate change of a pending, rigid or bad-rate job is a
// PlanError naming its cause.
func TestRerateRefused(t *testing.T) {
	rigid := simtest.MakeJob("r").GPUs(1).Dur(10).Obj()
	for _, c := range []struct {
		name string
		job  sim.JobRef
		rate float64
		want string
	}{
		{"pending", 1, 1, "not running"},
		{"rigid", 2, 1, "not elastic"},
		{"zero", 0, 0, "must be finite and > 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pol := &elasticScript{fn: func(v *sim.View, p *sim.Plan) error {
				if v.Now() != 0 {
					return nil
				}
				n, g := gpuRange(0, 1)
				if err := p.AddStart(0, n, g); err != nil {
					return err
				}
				if err := p.AddStart(2, []sim.NodeID{0}, []sim.GPUID{1}); err != nil {
					return err
				}
				return p.AddRate(c.job, c.rate)
			}}
			e, err := sim.NewEngine(sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(1, 4)), Jobs: []sim.JobSpec{elasticJob("a", 1, 1, 2, 1, 10), elasticJob("b", 1, 1, 2, 1, 10), rigid}, Policy: pol, NoLog: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Run(t.Context())
			var pe *sim.PlanError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "rates[0]") {
				t.Fatalf("error %v, want a PlanError with %q", err, c.want)
			}
		})
	}
}
