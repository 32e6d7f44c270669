package sim_test

import (
	"context"
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
			r := sim.Stream(1, "bench")
			jobs := make([]sim.JobSpec, n)
			var t sim.Time
			for i := range jobs {
				t += sim.Time(r.ExpFloat64() * 0.1 * 1e6)
				jobs[i] = simtest.MakeJob(fmt.Sprintf("j%07d", i)).GPUs(int32(1 << r.IntN(4))).Dur(60 + r.ExpFloat64()*600).Obj()
				jobs[i].Submit = t
			}
			nodes := simtest.Nodes(128, 8)
			c := simtest.Cluster(b, nodes)
			b.ReportAllocs()
			b.ResetTimer()
			var events int64
			for i := 0; i < b.N; i++ {
				p, _ := policies.New("fifo", nil)
				e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: p, NoLog: true})
				if err != nil {
					b.Fatal(err)
				}
				res, err := e.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if res.Jobs[n-1].State != sim.StateCompleted {
					b.Fatal("workload not scheduled")
				}
				events += res.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
