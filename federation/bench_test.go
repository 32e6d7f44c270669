package federation_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/federation"
	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkFederation is sim's BenchmarkEngine workload (single-GPU to
// 8-GPU jobs, fifo) over four 256-GPU clusters (1,024 GPUs, as the engine
// benchmark's one cluster) behind each dispatcher.
//
//	go test ./federation -run '^$' -bench BenchmarkFederation -benchmem
func BenchmarkFederation(b *testing.B) {
	const n = 10_000
	jobs := simtest.BenchJobs(n)
	clusters := make([]*sim.Cluster, 4)
	for c := range clusters {
		clusters[c] = simtest.Cluster(b, simtest.Nodes(32, 8))
	}
	for _, st := range federation.Strategies() {
		b.Run(fmt.Sprintf("jobs=%d/clusters=4/%s", n, st), func(b *testing.B) {
			b.ReportAllocs()
			var events int64
			for i := 0; i < b.N; i++ {
				ms := make([]federation.Member, len(clusters))
				for c := range ms {
					p, _ := policies.New("fifo", nil)
					ms[c] = federation.Member{Name: fmt.Sprint(c), WAN: sim.Duration(c) * 10 * sim.Millisecond, CostPerGPUHour: float64(4 - c), CarbonIntensity: float64(100 * (c + 1)),
						Config: sim.Config{Cluster: clusters[c], Policy: p, NoLog: true}}
				}
				res, err := federation.Run(context.Background(), ms, jobs, st)
				if err != nil {
					b.Fatal(err)
				}
				for _, cr := range res.Clusters {
					events += cr.Events
				}
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
