package rounds_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies/rounds"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// randomAlloc gives every active job a random size (or 0) while GPUs last,
// and the first job its minimum when no job got any.
type randomAlloc struct{ t *rapid.T }

func (r *randomAlloc) Allocate(v *sim.View, active []*sim.Job, want []int32) error {
	left := int32(v.Cluster().NumGPUs())
	for i, j := range active {
		el := j.Spec.Elastic
		k := rapid.Int32Range(-1, (el.Max-el.Min)/el.Step).Draw(r.t, "k")
		if k < 0 {
			continue
		}
		n := el.Min + k*el.Step
		if g := n * j.Spec.GPUsPerReplica; g <= left {
			want[i], left = n, left-g
		}
	}
	if left == int32(v.Cluster().NumGPUs()) {
		// never idle: an idle round with nothing running ends the run
		want[0] = active[0].Spec.Elastic.Min
	}
	return nil
}

// TestRoundsProperties: under random allocations every round, with and
// without Repack and with 1- or 2-GPU replicas, the driver never makes an
// invalid plan (the run would fail), every job completes with all its work,
// and every size a job ran at is one of its sizes.
func TestRoundsProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := rapid.Int32Range(1, 2).Draw(rt, "gpusPerReplica")
		var jobs []sim.JobSpec
		for i := range rapid.IntRange(1, 6).Draw(rt, "jobs") {
			s := simtest.MakeJob(string(rune('a' + i))).GPUs(g).Replicas(1).Dur(float64(rapid.IntRange(30, 600).Draw(rt, "dur"))).
				At(float64(rapid.IntRange(0, 300).Draw(rt, "at"))).Obj()
			s.Elastic = &sim.ElasticSpec{Min: 1, Max: rapid.Int32Range(1, 8/g).Draw(rt, "max"), Step: 1}
			jobs = append(jobs, s)
		}
		d, err := rounds.New("random", 60*sim.Second, &randomAlloc{rt})
		if err != nil {
			rt.Fatal(err)
		}
		d.Repack = rapid.Bool().Draw(rt, "repack")
		delay, restore := 10*sim.Second, 20*sim.Second
		res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(2, 4)), Jobs: jobs, Policy: d,
			RescaleDelay: &delay, CheckpointRestore: restore, Horizon: sim.Time(200000 * sim.Second)})
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if j.State != sim.StateCompleted || j.Done != j.Spec.Duration {
				rt.Fatalf("job %s: %s, %s of %s done", j, j.State, j.Done, j.Spec.Duration)
			}
			for _, s := range res.Elastic.Segs[i] {
				if s.Replicas != 0 && !j.Spec.Elastic.Valid(s.Replicas) {
					rt.Fatalf("job %s at %d replicas", j, s.Replicas)
				}
			}
		}
	})
}
