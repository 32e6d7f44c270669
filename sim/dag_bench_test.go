package sim_test

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkEngineDAG is BenchmarkEngine's workload cut into 4-stage chains
// (each job waits for the previous one of its chain): the cost of holding,
// releasing and predicting in the engine.
//
//	go test ./sim -run '^$' -bench BenchmarkEngineDAG -benchmem
func BenchmarkEngineDAG(b *testing.B) {
	const n = 100_000
	jobs := simtest.BenchJobs(n)
	for i := range jobs {
		jobs[i].DAG = &sim.JobDAG{Name: fmt.Sprint("stage", i%4)}
		if i%4 > 0 {
			jobs[i].DAG.Deps = []sim.JobID{jobs[i-1].ID}
		}
	}
	c := simtest.Cluster(b, simtest.Nodes(128, 8))
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
}
