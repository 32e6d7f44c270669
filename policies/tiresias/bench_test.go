package tiresias

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// benchJobs: 3000 jobs (1, 2, 4 or 8 GPUs as one-GPU replicas, 600-3600 s;
// about 0.9 offered load) on 32 nodes x 8 GPUs, so that jobs cross both
// default thresholds and are preempted.
func benchJobs() []sim.JobSpec {
	var jobs []sim.JobSpec
	for i := range 3000 {
		g := []int32{1, 2, 4, 8}[i%4]
		jobs = append(jobs, MakeJob(fmt.Sprintf("j%05d", i)).Replicas(g).GPUs(1).
			At(float64(i)*30).Dur(float64(600+(i*37)%3000)).Obj())
	}
	return jobs
}

// BenchmarkTiresias runs the default 2D-LAS (exact accounting), the
// simulator-faithful settings and mode sjf over benchJobs; it reports the
// demotions so that a change of behaviour shows next to a change of speed.
func BenchmarkTiresias(b *testing.B) {
	jobs := benchJobs()
	for _, c := range []struct{ name, params string }{
		{"default", ""},
		{"simulator", "accounting: simulator\nqueueOrder: running-first\nplacement: first-fit"},
		{"sjf", "mode: sjf\nplacement: first-fit"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				pol := newT(b, c.params).(*Tiresias)
				res := Run(b, Nodes(32, 8), pol, jobs...)
				b.ReportMetric(float64(pol.Demotions), "demotions")
				b.ReportMetric(float64(res.Makespan)/1e6, "makespan_s")
			}
		})
	}
}
