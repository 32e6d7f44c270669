package sim_test

import (
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// holder holds every job until `until`, asking for wake-ups every second
// (which do nothing) and a Release at `until` when release is set.
type holder struct {
	until   sim.Time
	release bool
}

func (h *holder) Name() string { return "holder" }

func (h *holder) Schedule(v *sim.View, p *sim.Plan) error {
	now := v.Now()
	if now < h.until {
		p.Wake(now + sim.Time(sim.Second))
		if h.release {
			p.Release(h.until)
		}
		return nil
	}
	for j := range v.Pending() {
		g := v.Cluster().NodeGPUs
		first, _ := g(0)
		if err := p.AddStart(j.Ref, []sim.NodeID{0}, []sim.GPUID{first}); err != nil {
			return err
		}
	}
	return nil
}

// An idle scheduling point that does nothing drops the remaining wake-ups
// (nothing can change), except a Release: the job held until 10 s starts
// there with Release and never without it.
func TestReleaseSurvivesIdleWake(t *testing.T) {
	for _, release := range []bool{true, false} {
		res := simtest.Run(t, simtest.Nodes(1, 8), &holder{until: sim.Time(10 * sim.Second), release: release},
			simtest.MakeJob("a").GPUs(1).Dur(5).Obj())
		got := res.Jobs[0].FirstStart
		want := sim.Time(10 * sim.Second)
		if !release {
			want = sim.Never
		}
		if got != want {
			t.Errorf("release=%v: started at %v, want %v", release, got, want)
		}
	}
}
