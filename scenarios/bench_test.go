package scenarios

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
	"github.com/gpusim/gpusim/workloads"
)

// benchSetup builds nodes x 8-GPU DGX H100 nodes and n synthetic jobs (default
// class mix) at the given load.
func benchSetup(b *testing.B, nodes, n int, load float64) (*sim.Cluster, []sim.JobSpec) {
	b.Helper()
	t, _ := Template("dgx-h100")
	specs := make([]sim.NodeSpec, nodes)
	for i := range specs {
		specs[i] = t.nodeSpec(fmt.Sprintf("n%d", i), "h100")
		specs[i].Leaf = int32(i / 32)
	}
	c, err := sim.NewCluster(specs)
	if err != nil {
		b.Fatal(err)
	}
	syn := workloads.DefaultSynthetic()
	syn.Jobs = n
	syn.Load = load
	syn.SetDefaults()
	jobs, err := syn.Generate(42, c.NumGPUs(), c.MaxGPUsPerNode())
	if err != nil {
		b.Fatal(err)
	}
	return c, jobs
}

func benchRun(b *testing.B, c *sim.Cluster, jobs []sim.JobSpec, policy string, noLog bool) *sim.Result {
	p, err := policies.New(policy, nil)
	if err != nil {
		b.Fatal(err)
	}
	return simtest.RunConfig(b, sim.Config{Cluster: c, Jobs: jobs, Policy: p, Seed: 1, EnforceWalltime: true, SampleInterval: 60 * sim.Second, NoLog: noLog})
}

// BenchmarkRun runs whole simulations: BenchmarkRun/policy=fifo/jobs=1000000/gpus=10240
// is the core issue's target (under 10 s and 2 GiB RSS on 2 cores). Run with
//
//	go test ./scenarios -run '^$' -bench 'BenchmarkRun/' -benchtime 1x -benchmem
func BenchmarkRun(b *testing.B) {
	for _, size := range []struct{ nodes, jobs int }{{16, 10_000}, {1280, 1_000_000}} {
		if testing.Short() && size.jobs > 100_000 {
			continue
		}
		var c *sim.Cluster
		var jobs []sim.JobSpec
		for _, pol := range []string{"fifo", "easy-backfill"} {
			b.Run(fmt.Sprintf("policy=%s/jobs=%d/gpus=%d", pol, size.jobs, size.nodes*8), func(b *testing.B) {
				if c == nil {
					c, jobs = benchSetup(b, size.nodes, size.jobs, 0.9)
				}
				// Assert the run schedules something before timing it (Nomad's rule).
				b.ReportAllocs()
				b.ResetTimer()
				var events int64
				for i := 0; i < b.N; i++ {
					res := benchRun(b, c, jobs, pol, false)
					if res.Jobs[len(res.Jobs)-1].State != sim.StateCompleted && res.Events < int64(len(jobs)) {
						b.Fatalf("run did not schedule the workload")
					}
					events += res.Events
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*int64(len(jobs))), "ns/job")
			})
		}
	}
}
