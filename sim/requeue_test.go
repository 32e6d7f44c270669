package sim_test

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// chaos preempts random running jobs at every scheduling point (requeue or kill)
// and starts what fits, checking that the pending queue stays in Ref order.
type chaos struct {
	t      *rapid.T
	placer policies.Placer
	pl     policies.Placement
}

func (c *chaos) Name() string { return "chaos" }

func (c *chaos) Schedule(v *sim.View, p *sim.Plan) error {
	prev, n := sim.JobRef(-1), 0
	for j := range v.Pending() {
		if j.Ref <= prev {
			c.t.Fatalf("pending queue out of order: %d after %d", j.Ref, prev)
		}
		prev = j.Ref
		n++
	}
	if n != v.PendingCount() {
		c.t.Fatalf("pending count %d, iterated %d", v.PendingCount(), n)
	}
	r := v.Rand()
	running := append([]*sim.Job(nil), v.Running()...)
	for _, j := range running {
		if r.IntN(4) == 0 {
			mode := sim.PreemptRequeue
			if r.IntN(8) == 0 {
				mode = sim.PreemptKill
			}
			if err := p.AddPreempt(j.Ref, mode, "chaos"); err != nil {
				return err
			}
		}
	}
	idle := len(v.Running()) == 0 // the engine stops when an idle call starts nothing
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if (idle || r.IntN(3) > 0) && c.placer.Place(v.Cluster(), j, &c.pl) {
			if err := p.AddStart(j.Ref, c.pl.Nodes, c.pl.GPUs); err != nil {
				return err
			}
		}
		j = next
	}
	if v.PendingCount() > 0 || len(v.Running()) > 0 {
		p.Wake(v.Now() + sim.Time(sim.Second))
	}
	return nil
}

// Requeued jobs go back to their (Submit, ID) position; nothing is lost or
// duplicated under random preemptions, kills and checkpoint rollbacks.
func TestRequeueKeepsQueueOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "jobs")
		var jobs []sim.JobSpec
		for i := 0; i < n; i++ {
			jobs = append(jobs, simtest.MakeJob(fmt.Sprintf("j%02d", i)).GPUs(int32(rapid.IntRange(1, 8).Draw(t, "g"))).
				At(float64(rapid.IntRange(0, 20).Draw(t, "at"))).Dur(float64(rapid.IntRange(1, 30).Draw(t, "d"))).Obj())
		}
		pl, _ := policies.NewPlacer("first-fit")
		cl, err := sim.NewCluster(simtest.Nodes(2, 8))
		if err != nil {
			t.Fatal(err)
		}
		e, err := sim.NewEngine(sim.Config{Cluster: cl, Jobs: jobs,
			Policy: &chaos{t: t, placer: pl}, Seed: uint64(rapid.IntRange(0, 1000).Draw(t, "seed")), CheckpointInterval: 5 * sim.Second})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for i := range res.Jobs {
			if s := res.Jobs[i].State; s != sim.StateCompleted && s != sim.StateKilled {
				t.Fatalf("job %s ended %s", res.Jobs[i].Spec.ID, s)
			}
		}
	})
}
