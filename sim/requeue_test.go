package sim_test

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// chaos preempts random running jobs at every scheduling point (requeue or kill)
// and starts what fits, checking that the pending queue stays in Ref order.
type chaos struct {
	t      *rapid.T
	placer placement.Placer
	pl     placement.Placement
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
		if r.IntN(4) == 0 && j.Preemptible(v.Now()) {
			mode := sim.PreemptRequeue
			switch r.IntN(8) {
			case 0:
				mode = sim.PreemptKill
			case 1, 2:
				mode = sim.PreemptSuspend
			}
			if err := p.AddPreemptAfterGrace(j.Ref, mode, "chaos", sim.Duration(r.IntN(3))*sim.Second); err != nil {
				return err
			}
		}
	}
	idle := len(v.Running()) == 0 // the engine stops when an idle call starts nothing
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if j.Suspended() {
			if nodes, gpus, ok := resumeOn(v.Cluster(), j); ok && (idle || r.IntN(3) > 0) {
				if err := p.AddStart(j.Ref, nodes, gpus); err != nil {
					return err
				}
			}
		} else if (idle || r.IntN(3) > 0) && c.placer.Place(v.Cluster(), j, &c.pl) {
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

// resumeOn places a suspended job's replicas on its own nodes, if they have room.
func resumeOn(c *sim.Cluster, j *sim.Job) ([]sim.NodeID, []sim.GPUID, bool) {
	g := j.Spec.GPUsPerReplica
	taken := map[sim.GPUID]bool{}
	var gpus []sim.GPUID
	for _, n := range j.Nodes {
		first, end := c.NodeGPUs(n)
		k := int32(0)
		for gpu := first; gpu < end && k < g; gpu++ {
			if c.GPUUsed(gpu) == 0 && !taken[gpu] {
				taken[gpu] = true
				gpus = append(gpus, gpu)
				k++
			}
		}
		if k < g {
			return nil, nil, false
		}
	}
	return append([]sim.NodeID(nil), j.Nodes...), gpus, true
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
		pl, _ := placement.New("first-fit")
		cl, err := sim.NewCluster(simtest.Nodes(2, 8))
		if err != nil {
			t.Fatal(err)
		}
		e, err := sim.NewEngine(sim.Config{Cluster: cl, Jobs: jobs,
			Policy: &chaos{t: t, placer: pl}, Seed: uint64(rapid.IntRange(0, 1000).Draw(t, "seed")), CheckpointInterval: 5 * sim.Second,
			CheckpointSave: sim.Duration(rapid.IntRange(0, 2).Draw(t, "save")) * sim.Second, CheckpointRestore: sim.Duration(rapid.IntRange(0, 3).Draw(t, "restore")) * sim.Second,
			CheckpointOnSignal: rapid.Bool().Draw(t, "onSignal"),
			PreemptMinRuntime:  sim.Duration(rapid.IntRange(0, 3).Draw(t, "minrun")) * sim.Second, PreemptAntiChurn: sim.Duration(rapid.IntRange(0, 5).Draw(t, "churn")) * sim.Second})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if s := j.State; s != sim.StateCompleted && s != sim.StateKilled {
				t.Fatalf("job %s ended %s", j.Spec.ID, s)
			}
			if j.State == sim.StateCompleted && j.Done != j.Spec.Duration {
				t.Fatalf("job %s completed with work %s of %s", j.Spec.ID, j.Done, j.Spec.Duration)
			}
			if j.Overhead < 0 || j.Wasted < j.Overhead && j.State == sim.StateCompleted {
				t.Fatalf("job %s: wasted %s, overhead %s", j.Spec.ID, j.Wasted, j.Overhead)
			}
			// held time = productive time of the work + wasted time
			if j.State == sim.StateCompleted {
				var held sim.Duration
				var start sim.Time
				for _, ev := range res.Log {
					if ev.Job != j.Ref {
						continue
					}
					switch ev.Kind {
					case sim.EvStart:
						start = ev.Time
					case sim.EvFinish, sim.EvPreempt, sim.EvSuspend:
						held += ev.Time.Sub(start)
					}
				}
				if held != j.Spec.Duration+j.Wasted {
					t.Fatalf("job %s: held %s != work %s + wasted %s", j.Spec.ID, held, j.Spec.Duration, j.Wasted)
				}
			}
		}
		if c := res.Cluster; c.FreeMemory() != int64(c.NumNodes())<<30 || c.FreeGPUs() != c.NumGPUs() {
			t.Fatalf("resources leak: free memory %d, free GPUs %d", c.FreeMemory(), c.FreeGPUs())
		}
	})
}
