package slurm

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// With all weights 0 and one partition, Slurm is FIFO plus backfill: a job
// starts before an earlier-submitted pending job only in a backfill cycle (on
// the bf_interval grid; the main scheduler never starts out of order), and such
// starts never delay the head: whenever the first pending job (the head) gets a
// reservation at T, it starts by T. Time limits are enforced and
// bf_resolution is 1 s, so planned ends are exactly start + limit (the argument
// that a reservation never moves later relies on it; with rounding, a backfilled
// job's rounded-up end could push a later plan back by less than one step).
func TestPropertyFIFOPlusBackfill(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nodes := rapid.IntRange(1, 3).Draw(rt, "nodes")
		n := rapid.IntRange(2, 14).Draw(rt, "jobs")
		var jobs []sim.JobSpec
		for i := 0; i < n; i++ {
			g := rapid.SampledFrom([]int32{1, 2, 4, 8}).Draw(rt, "gpus")
			reps := int32(1)
			if g == 8 && nodes > 1 {
				reps = int32(rapid.IntRange(1, nodes).Draw(rt, "replicas"))
			}
			dur := rapid.IntRange(1, 600).Draw(rt, "dur")
			wall := dur + rapid.IntRange(0, 600).Draw(rt, "slack")
			at := rapid.IntRange(0, 400).Draw(rt, "at")
			jobs = append(jobs, MakeJob(fmt.Sprintf("j%02d", i)).GPUs(g).Replicas(reps).Dur(float64(dur)).Wall(float64(wall)).At(float64(at)).Obj())
		}
		s, err := New(Params{SchedulerParameters: SchedConf{BfResolution: ptr(durSec(1))}})
		if err != nil {
			rt.Fatal(err)
		}
		c, err := sim.NewCluster(Nodes(nodes, 8))
		if err != nil {
			rt.Fatal(err)
		}
		e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: s, Seed: 1, EnforceWalltime: true})
		if err != nil {
			rt.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			rt.Fatal(err)
		}
		js := res.Jobs
		bfGrid := int64(DefaultBfInterval)
		for b := range js {
			if js[b].FirstStart == sim.Never {
				rt.Fatalf("%s never started\n%s", js[b].Spec.ID, Schedule(res))
			}
			for a := 0; a < b; a++ {
				// a submitted before b (lower ref) but still pending when b started
				if js[a].FirstStart > js[b].FirstStart && js[a].Spec.Submit <= js[b].FirstStart &&
					int64(js[b].FirstStart)%bfGrid != 0 {
					rt.Fatalf("%s started at %v before %s (pending since %v) outside a backfill cycle\n%s",
						js[b].Spec.ID, js[b].FirstStart, js[a].Spec.ID, js[a].Spec.Submit, Schedule(res))
				}
			}
		}
		for _, e := range res.Log {
			if e.Kind != sim.EvReserve {
				continue
			}
			head := true
			for a := sim.JobRef(0); a < e.Job; a++ {
				if js[a].FirstStart > e.Time {
					head = false
					break
				}
			}
			if head && js[e.Job].FirstStart > sim.Time(e.Value) {
				rt.Fatalf("head %s reserved at %v (at t=%v) but started at %v\n%s", js[e.Job].Spec.ID,
					sim.Time(e.Value), e.Time, js[e.Job].FirstStart, Schedule(res))
			}
		}
	})
}
