package sim_test

import (
	"context"
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
	r := sim.Stream(1, "bench")
	jobs := make([]sim.JobSpec, n)
	var t sim.Time
	for i := range jobs {
		t += sim.Time(r.ExpFloat64() * 0.1 * 1e6)
		jobs[i] = simtest.MakeJob(fmt.Sprintf("j%07d", i)).GPUs(int32(1 << r.IntN(4))).Dur(60 + r.ExpFloat64()*600).Obj()
		jobs[i].Submit = t
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
}
