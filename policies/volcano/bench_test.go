package volcano

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkVolcano: 3000 mixed jobs (1 x 1, 2, 4 GPUs or 1..4 x 8 GPUs; about 0.9
// offered load) on 64 nodes x 8 GPUs, three queues, default configuration. The
// cost is sessions x pending jobs: every session re-evaluates the whole backlog.
func BenchmarkVolcano(b *testing.B) {
	var jobs []sim.JobSpec
	for i := range 3000 {
		g := []int32{1, 2, 4, 8}[i%4]
		r := int32(1 + (i/4)%4)
		if g < 8 {
			r = 1
		}
		jobs = append(jobs, MakeJob(fmt.Sprintf("j%05d", i)).Queue(fmt.Sprintf("q%d", i%3)).GPUs(g).Replicas(r).
			CPU(int64(g)*4000).At(float64(i)*31).Dur(float64(600+(i*37)%3000)).Obj())
	}
	for b.Loop() {
		v, err := New(Params{Queues: []QueueSpec{{Name: "q0"}, {Name: "q1"}, {Name: "q2"}}})
		if err != nil {
			b.Fatal(err)
		}
		res := Run(b, Nodes(64, 8), v, jobs...)
		b.ReportMetric(float64(v.Sessions()), "sessions")
		b.ReportMetric(float64(res.Makespan)/1e6, "makespan_s")
	}
}
