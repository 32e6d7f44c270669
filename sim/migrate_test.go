package sim_test

import (
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// migrator starts job "A" on GPU 0 and, at 30 s, migrates it to GPU 1 with a
// 5 s delay.
type migrator struct{ moved bool }

func (m *migrator) Name() string { return "migrator" }

func (m *migrator) Schedule(v *sim.View, p *sim.Plan) error {
	c := v.Cluster()
	if !m.moved && v.Now() == sim.Time(30*sim.Second) {
		m.moved = true
		if r := v.Running(); len(r) > 0 {
			j := r[0]
			if err := p.AddMigrate(j.Ref, 5*sim.Second, "test"); err != nil {
				return err
			}
			return p.AddStart(j.Ref, []sim.NodeID{c.GPUNode(1)}, []sim.GPUID{1})
		}
	}
	if j := v.PendingHead(); j != nil && !m.moved {
		if err := p.AddStart(j.Ref, []sim.NodeID{0}, []sim.GPUID{0}); err != nil {
			return err
		}
		p.Wake(sim.Time(30 * sim.Second))
	}
	return nil
}

// A migration keeps all work (even with periodic checkpoints that would roll a
// requeue back) and costs exactly its delay: A (100 s of work, checkpoint every
// 40 s of work, instant saves) runs 0-30 s on GPU 0, migrates with 5 s of
// restore and does its other 70 s on GPU 1: it ends at 105 s with 5 s of
// overhead, on the closed-form (exclusive) and the rate-based (sharing) paths.
func TestMigrateKeepsWorkAndCostsDelay(t *testing.T) {
	for _, mode := range []sim.SharingMode{sim.ShareExclusive, sim.ShareTimeSlice} {
		c, _ := sim.NewCluster(shareNodes(mode, 2))
		cfg := sim.Config{Cluster: c, Jobs: []sim.JobSpec{shareJob("A", 100, "")}, Policy: &migrator{},
			CheckpointInterval: 40 * sim.Second, CheckpointRestore: 60 * sim.Second}
		if mode != sim.ShareExclusive {
			cfg.Sharing = &sim.SharingConfig{}
		}
		res := runShare(t, cfg)
		j := jobByID(t, res, "A")
		if j.State != sim.StateCompleted || us(j.End) != 105_000_000 {
			t.Errorf("%s: A %s at %d µs, want completed at 105 s", mode, j.State, us(j.End))
		}
		if j.Preempted != 1 || j.Overhead != 5*sim.Second || j.Wasted != 5*sim.Second {
			t.Errorf("%s: preempted %d overhead %s wasted %s, want 1, 5s, 5s", mode, j.Preempted, j.Overhead, j.Wasted)
		}
		if j.GPUs[0] != 1 {
			t.Errorf("%s: A ended on GPU %d, want 1", mode, j.GPUs[0])
		}
	}
}
