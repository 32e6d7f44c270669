package sim_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// elasticScript runs fn at every scheduling point.
type elasticScript struct {
	fn func(v *sim.View, p *sim.Plan) error
}

func (s *elasticScript) Name() string                            { return "scripted" }
func (s *elasticScript) Schedule(v *sim.View, p *sim.Plan) error { return s.fn(v, p) }

func elasticJob(id string, pref, lo, hi, step int32, durS float64) sim.JobSpec {
	s := simtest.MakeJob(id).GPUs(1).Replicas(pref).Dur(durS).Obj()
	s.Elastic = &sim.ElasticSpec{Min: lo, Max: hi, Step: step}
	return s
}

func gpuRange(a, b int) (nodes []sim.NodeID, gpus []sim.GPUID) {
	for g := a; g < b; g++ {
		nodes = append(nodes, 0)
		gpus = append(gpus, sim.GPUID(g))
	}
	return nodes, gpus
}

// TestElasticHandWorked: a 100 s job (at its preferred 2 replicas) starts on 2
// GPUs at t=0, grows to 4 at t=20 and shrinks to 1 at t=40, with a 10 s
// rescale delay.
//
//	t=0..20   2 replicas, rate 1:   work 20
//	t=20..30  rescale (4 replicas): work 20
//	t=30..40  4 replicas, rate 2:   work 40
//	t=40..50  rescale (1 replica):  work 40
//	t=50..170 1 replica, rate 0.5:  work 40 + 60 = 100 → ends at 170
//
// A resize at t=25 (inside the first rescale) is refused.
func TestElasticHandWorked(t *testing.T) {
	delay := sim.Seconds(10)
	var workAt40 sim.Duration
	pol := &elasticScript{fn: func(v *sim.View, p *sim.Plan) error {
		now := v.Now()
		j := v.Job(0)
		switch now {
		case 0:
			n, g := gpuRange(0, 2)
			if err := p.AddStart(0, n, g); err != nil {
				return err
			}
			p.Wake(sim.Time(sim.Seconds(20)))
		case sim.Time(sim.Seconds(20)):
			n, g := gpuRange(2, 4)
			if err := p.AddResize(0, 4, n, g); err != nil {
				return err
			}
			p.Wake(sim.Time(sim.Seconds(25)))
		case sim.Time(sim.Seconds(25)):
			if j.Resizable(now) {
				t.Errorf("resizable at t=25, inside the rescale delay")
			}
			p.Wake(sim.Time(sim.Seconds(40)))
		case sim.Time(sim.Seconds(40)):
			workAt40 = v.WorkDone(0)
			if err := p.AddResize(0, 1, nil, nil); err != nil {
				return err
			}
			if v.Cluster().FreeGPUs() != 3 {
				t.Errorf("free GPUs after the shrink: %d, want 3", v.Cluster().FreeGPUs())
			}
		}
		return nil
	}}
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(1, 4)), Jobs: []sim.JobSpec{elasticJob("a", 2, 1, 4, 1, 100)}, Policy: pol, RescaleDelay: &delay})
	j := &res.Jobs[0]
	if j.State != sim.StateCompleted || j.End != sim.Time(sim.Seconds(170)) {
		t.Fatalf("state %s end %s, want completed at 170s", j.State, j.End)
	}
	if workAt40 != sim.Seconds(40) {
		t.Errorf("work done at t=40: %s, want 40s", workAt40)
	}
	if j.Done != sim.Seconds(100) || j.Overhead != sim.Seconds(20) || j.Wasted != sim.Seconds(20) {
		t.Errorf("done %s overhead %s wasted %s, want 100s 20s 20s", j.Done, j.Overhead, j.Wasted)
	}
	if res.Elastic == nil || res.Elastic.Resizes[0] != 2 {
		t.Errorf("resizes %v, want 2", res.Elastic)
	}
	at := res.Elastic.TimeAt(0, res.End)
	want := []sim.Duration{0, sim.Seconds(130), sim.Seconds(20), 0, sim.Seconds(20)}
	if len(at) != len(want) {
		t.Fatalf("time at sizes %v, want %v", at, want)
	}
	for i := range want {
		if at[i] != want[i] {
			t.Errorf("time at %d replicas: %s, want %s", i, at[i], want[i])
		}
	}
	// busy GPU-seconds: 2*20 + 4*20 + 1*130 = 250
	if got := res.BusyMilliSeconds / 1000; got != 250 {
		t.Errorf("busy GPU-s %v, want 250", got)
	}
}

// TestElasticRefused checks each refusal names its cause.
func TestElasticRefused(t *testing.T) {
	cases := []struct {
		name string
		fn   func(p *sim.Plan) error
		want string
	}{
		{"start-out-of-range", func(p *sim.Plan) error {
			n, g := gpuRange(0, 4)
			return p.AddStart(0, n, g) // max 3
		}, "elastic job of 1..3 replicas"},
		{"resize-not-a-size", func(p *sim.Plan) error {
			n, g := gpuRange(0, 1)
			if err := p.AddStart(0, n, g); err != nil {
				return err
			}
			return p.AddResize(0, 4, nil, nil)
		}, "not one of the job's sizes"},
		{"resize-in-restore", func(p *sim.Plan) error {
			n, g := gpuRange(0, 1)
			if err := p.AddStart(0, n, g); err != nil {
				return err
			}
			n, g = gpuRange(1, 2)
			if err := p.AddResize(0, 2, n, g); err != nil {
				return err
			}
			return p.AddResize(0, 1, nil, nil)
		}, "not at a safe point"},
		{"resize-used-gpu", func(p *sim.Plan) error {
			n, g := gpuRange(0, 1)
			if err := p.AddStart(0, n, g); err != nil {
				return err
			}
			return p.AddResize(0, 2, n, g)
		}, "is not free"},
		{"suspend", func(p *sim.Plan) error {
			n, g := gpuRange(0, 1)
			if err := p.AddStart(0, n, g); err != nil {
				return err
			}
			return p.AddPreempt(0, sim.PreemptSuspend, "x")
		}, "cannot be suspended"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			delay := sim.Seconds(5)
			pol := &elasticScript{fn: func(v *sim.View, p *sim.Plan) error {
				if v.Now() == 0 {
					return c.fn(p)
				}
				return nil
			}}
			e, err := sim.NewEngine(sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(1, 4)), Jobs: []sim.JobSpec{elasticJob("a", 1, 1, 3, 1, 100)}, Policy: pol, RescaleDelay: &delay})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Run(context.Background())
			var pe *sim.PlanError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a PlanError containing %q", err, c.want)
			}
		})
	}
}

// TestElasticSpecValidate checks the spec errors name their field.
func TestElasticSpecValidate(t *testing.T) {
	for _, c := range []struct {
		spec sim.ElasticSpec
		pref int32
		want string
	}{
		{sim.ElasticSpec{Min: 0, Max: 2, Step: 1}, 1, "elastic.min"},
		{sim.ElasticSpec{Min: 2, Max: 1, Step: 1}, 2, "elastic.max"},
		{sim.ElasticSpec{Min: 1, Max: 4, Step: 0}, 1, "elastic.step"},
		{sim.ElasticSpec{Min: 2, Max: 8, Step: 2}, 3, "elastic.preferred"},
	} {
		s := elasticJob("a", c.pref, 1, 1, 1, 10)
		s.Elastic = &c.spec
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v pref %d: error %v, want %q", c.spec, c.pref, err, c.want)
		}
	}
}
