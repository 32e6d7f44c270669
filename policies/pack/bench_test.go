package pack

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// benchProblem is a cluster-sized instance: nGPUs time-slicing GPUs (80 GB,
// 4 clients, one model), about half already running one or two jobs, and
// nJobs pending jobs, from 8 workloads (a random pair matrix) with 3 memory
// sizes; a third of the jobs bound their slowdown to 2 and a tenth are serving
// jobs that need speed 0.6.
func benchProblem(nGPUs, nJobs int, mode Mode) *Problem {
	r := rand.New(rand.NewPCG(11, 12))
	const nw = 8
	in := randomMatrix(r, nw)
	job := func(id int) Job {
		w := r.IntN(nw)
		j := Job{ID: id, Workload: int32(w), SMUtil: 0.1 * float64(1+w), MemMiB: int64(10000 * (1 + r.IntN(3)))}
		switch x := r.IntN(10); {
		case x < 3:
			j.MaxSlowdown = 2
		case x == 3:
			j.MinSpeed = 0.6
		}
		return j
	}
	p := &Problem{Speeds: &sim.SharingConfig{Interference: in}, Mode: mode, Budget: 5 * time.Second}
	for g := range nGPUs {
		gp := GPU{ID: g, Model: "H100", Mode: sim.ShareTimeSlice, MemMiB: 80000, MaxClients: 4}
		for range r.IntN(3) {
			gp.Occupants = append(gp.Occupants, job(-1))
		}
		p.GPUs = append(p.GPUs, gp)
	}
	for i := range nJobs {
		p.Jobs = append(p.Jobs, job(i))
	}
	return p
}

func benchSolve(b *testing.B, p *Problem) {
	var pk Packer
	var res Result
	for b.Loop() {
		if err := pk.Solve(p, &res); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Placed), "placed")
	b.ReportMetric(res.Objective-res.Baseline, "gain")
	if res.TimedOut {
		b.ReportMetric(1, "timedout")
	}
	if p.Mode == ILP {
		b.ReportMetric(float64(res.Columns), "columns")
		g := *p
		g.Mode = Greedy
		if err := pk.Solve(&g, &res); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Objective-res.Baseline, "greedygain")
	}
}

// BenchmarkGreedy: one decision on 1,024 GPUs with 500 pending jobs (issue 12
// target: < 5 ms).
func BenchmarkGreedy(b *testing.B) {
	benchSolve(b, benchProblem(1024, 500, Greedy))
}

// BenchmarkILP: one decision on 64 GPUs with 40 pending jobs (target < 1 s).
func BenchmarkILP(b *testing.B) {
	if !SolverAvailable() {
		b.Skip("no solver in this build (-tags lpsolve)")
	}
	benchSolve(b, benchProblem(64, 40, ILP))
}
