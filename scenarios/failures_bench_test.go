package scenarios

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkRunFailures is BenchmarkRun (fifo and easy-backfill, 10k and 1M
// jobs) with failures: the published default rates (rate=1) and 100x them,
// under full restart and fault-tolerant recovery with 5 % spares. Compare with
// BenchmarkRun on the same machine:
//
//	go test ./scenarios -run '^$' -bench 'BenchmarkRun(Failures)?/policy=fifo/jobs=1000000' -benchtime 1x -benchmem
func BenchmarkRunFailures(b *testing.B) {
	for _, size := range []struct{ nodes, jobs int }{{16, 10_000}, {1280, 1_000_000}} {
		if testing.Short() && size.jobs > 100_000 {
			continue
		}
		var c *sim.Cluster
		var jobs []sim.JobSpec
		for _, pol := range []string{"fifo", "easy-backfill"} {
			for _, v := range []struct {
				strategy string
				rate     int
			}{{"restart", 1}, {"restart", 100}, {"fault-tolerant", 100}} {
				b.Run(fmt.Sprintf("policy=%s/jobs=%d/gpus=%d/recovery=%s/rate=%d", pol, size.jobs, size.nodes*8, v.strategy, v.rate), func(b *testing.B) {
					if c == nil {
						c, jobs = benchSetup(b, size.nodes, size.jobs, 0.9)
					}
					y := fmt.Sprintf("%sfailures: {strategy: %s, gpu: {mtbf: %dh}, node: {mtbf: %dh}", minimal, v.strategy,
						int(DefaultGPUMTBF/sim.Hour)/v.rate, int(nodeMTBF(8)/sim.Hour)/v.rate)
					if v.strategy == "fault-tolerant" {
						y += ", spares: 0.05"
					}
					sc, err := Parse([]byte(y+"}\n"), "bench.yaml", nil)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					var events, interrupts int64
					for i := 0; i < b.N; i++ {
						fc, err := sc.FailureConfig(0, c)
						if err != nil {
							b.Fatal(err)
						}
						p, err := policies.New(pol, nil)
						if err != nil {
							b.Fatal(err)
						}
						res := simtest.RunConfig(b, sim.Config{Cluster: c, Jobs: jobs, Policy: p, Seed: 1, EnforceWalltime: true, SampleInterval: 60 * sim.Second, Failures: fc})
						if res.Events < int64(len(jobs)) || res.Failures.Interruptions == 0 {
							b.Fatalf("run did not schedule the workload or saw no failure (%d events, %d interruptions)", res.Events, res.Failures.Interruptions)
						}
						events += res.Events
						interrupts += res.Failures.Interruptions
					}
					b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*int64(len(jobs))), "ns/job")
					b.ReportMetric(float64(interrupts)/float64(b.N), "interruptions")
				})
			}
		}
	}
}
