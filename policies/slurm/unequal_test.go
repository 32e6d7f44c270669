package slurm

import (
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// TestUnequalGang: slurm's own node selection places an unequal gang (20 GPUs
// as 8+8+4, docs/shapes.md) as full replicas and gives the remainder's extra
// GPUs back, so the remainder needs a full replica's room. On 3 x 8 GPUs, A
// (4 GPUs, 100 s) holds half of n0: B (8+8+4 at 1 s, 50 s) cannot start until
// A ends at 100 s and is reserved then; C (1 GPU, 10 s, at 2 s) ends before the
// reservation, so the first backfill pass (30 s) starts it.
func TestUnequalGang(t *testing.T) {
	b := MakeJob("B").GPUs(8).Replicas(3).At(1).Dur(50).Wall(60).Obj()
	b.LastReplicaGPUs = 4
	res := Run(t, Nodes(3, 8), newSlurm(t, ``),
		MakeJob("A").GPUs(4).Dur(100).Wall(120).Obj(),
		b,
		MakeJob("C").GPUs(1).At(2).Dur(10).Wall(20).Obj())
	got := Starts(res)
	for id, want := range map[string]float64{"A": 0, "B": 100, "C": 30} {
		if got[id] != want {
			t.Errorf("%s started at %g, want %g", id, got[id], want)
		}
	}
	for i := range res.Jobs {
		if res.Jobs[i].State != sim.StateCompleted {
			t.Errorf("%s ended %s", res.Jobs[i].Spec.ID, res.Jobs[i].State)
		}
	}
}
