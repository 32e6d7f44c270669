package sim_test

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkNewEngine1M builds an engine for 1M jobs (run with -cpu 1,2 to see
// the parallel job initialisation).
func BenchmarkNewEngine1M(b *testing.B) {
	jobs := make([]sim.JobSpec, 1_000_000)
	for i := range jobs {
		jobs[i] = simtest.MakeJob(fmt.Sprintf("j%07d", i)).GPUs(1).Dur(60).Obj()
		jobs[i].Submit = sim.Time(i)
	}
	c := simtest.Cluster(b, simtest.Nodes(16, 8))
	p, _ := policies.New("fifo", nil)
	b.ResetTimer()
	for b.Loop() {
		if _, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: p, NoLog: true}); err != nil {
			b.Fatal(err)
		}
	}
}
