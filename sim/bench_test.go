package sim_test

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkEngine measures the engine's event rate with the cheapest policy (fifo,
// first-fit) on single-GPU jobs: arrival, start and finish per job.
//
//	go test ./sim -run '^$' -bench BenchmarkEngine -benchmem
func BenchmarkEngine(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("jobs=%d/gpus=1024", n), func(b *testing.B) {
			jobs := simtest.BenchJobs(n)
			nodes := simtest.Nodes(128, 8)
			c := simtest.Cluster(b, nodes)
			b.ReportAllocs()
			b.ResetTimer()
			var events int64
			for i := 0; i < b.N; i++ {
				p, _ := policies.New("fifo", nil)
				res := simtest.RunConfig(b, sim.Config{Cluster: c, Jobs: jobs, Policy: p, NoLog: true})
				if res.Jobs[n-1].State != sim.StateCompleted {
					b.Fatal("workload not scheduled")
				}
				events += res.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
