package placement_test

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
	"github.com/gpusim/gpusim/workloads"
)

// BenchmarkTopologyReplay replays 1M synthetic jobs (default class mix, 90%
// offered load) on 10,240 GPUs (1,280 DGX H100 nodes, 32 per leaf) with
// topology-best-fit under fifo and easy-backfill (best-fit as the baseline), and
// 100k jobs on the same cluster with tas, hived and binpack. The target
// is fifo + topology-best-fit under 20 s on 2 cores. Run with
//
//	go test ./policies/placement -run '^$' -bench BenchmarkTopologyReplay -benchtime 1x -benchmem
func BenchmarkTopologyReplay(b *testing.B) {
	type rc struct{ policy, placement string }
	all := []rc{{"fifo", "best-fit"}, {"fifo", "topology-best-fit"}, {"easy-backfill", "topology-best-fit"},
		{"fifo", "tas:preferred=leaf"}, {"fifo", "hived"}, {"fifo", "binpack:gpu=1"}}
	for _, size := range []struct {
		nodes, jobs int
		runs        []rc
	}{{16, 10_000, all}, {1280, 100_000, all[3:]}, {1280, 1_000_000, all[:3]}} {
		if testing.Short() && size.jobs > 100_000 {
			continue
		}
		var c *sim.Cluster
		var jobs []sim.JobSpec
		for _, pc := range size.runs {
			b.Run(fmt.Sprintf("policy=%s/placement=%s/jobs=%d/gpus=%d", pc.policy, pc.placement, size.jobs, size.nodes*8), func(b *testing.B) {
				if c == nil {
					specs := dgx(size.nodes, 32, 0)
					var err error
					if c, err = sim.NewCluster(specs); err != nil {
						b.Fatal(err)
					}
					syn := workloads.DefaultSynthetic()
					syn.Jobs = size.jobs
					syn.Load = 0.9
					syn.SetDefaults()
					if jobs, err = syn.Generate(42, c.NumGPUs(), c.MaxGPUsPerNode()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				var events int64
				for i := 0; i < b.N; i++ {
					pol, err := policies.New(pc.policy, yamlParams(b, "placement: \""+pc.placement+"\""))
					if err != nil {
						b.Fatal(err)
					}
					res := simtest.RunConfig(b, sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Seed: 1, EnforceWalltime: true, SampleInterval: 60 * sim.Second, NoLog: true})
					done := 0
					for k := range res.Jobs {
						if res.Jobs[k].State != sim.StatePending {
							done++
						}
					}
					if done < len(jobs)/2 {
						b.Fatalf("run scheduled only %d of %d jobs", done, len(jobs))
					}
					events += res.Events
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*int64(len(jobs))), "ns/job")
			})
		}
	}
}
