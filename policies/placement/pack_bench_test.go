package placement_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpusim/gpusim/policies/pack"
	. "github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// packAll is a minimal non-blocking queue policy over one placement: every
// pending job in the engine's order, placed if it can be. It times the
// scheduling point at t = 1 s.
type packAll struct {
	pl      Placer
	prep    bool
	out     Placement
	maxPend int
	point   time.Duration
}

func (q *packAll) Name() string { return "pack-all" }

func (q *packAll) Schedule(v *sim.View, p *sim.Plan) error {
	if !q.prep {
		if err := Prepare(q.pl, v); err != nil {
			return err
		}
		q.prep = true
	}
	n := v.PendingCount()
	t0 := time.Now()
	var todo []*sim.Job
	for j := range v.Pending() {
		todo = append(todo, j)
	}
	for _, j := range todo {
		if q.pl.Place(v.Cluster(), j, &q.out) {
			if err := p.AddStart(j.Ref, q.out.Nodes, q.out.GPUs); err != nil {
				return err
			}
		}
	}
	if v.Now() == sim.Time(sim.Seconds(1)) {
		q.maxPend, q.point = n, time.Since(t0)
	}
	return nil
}

// BenchmarkPackPlacement: one whole scheduling point through the placement
// (problem built from the live cluster, decision, 500 Place calls): 1,024
// time-slicing GPUs (128 nodes x 8, 4 clients), 700 jobs already running one
// per GPU, 500 shareable jobs arriving at once; 8 workloads with a random
// pair matrix, 3 memory sizes. Reported: ms for that point (point-ms); mode
// ilp plans over its window (32 jobs) and decides the rest one by one.
func BenchmarkPackPlacement(b *testing.B) {
	for _, mode := range []string{"greedy", "ilp"} {
		b.Run("mode="+mode, func(b *testing.B) {
			if mode == "ilp" && !pack.SolverAvailable() {
				b.Skip("no solver in this build (-tags lpsolve)")
			}
			r := rand.New(rand.NewPCG(1, 2))
			in := &pairInterf{names: map[string]int32{}}
			for a := range 8 {
				in.names[fmt.Sprintf("w%d", a)] = int32(a)
				in.m = append(in.m, nil)
				for range 8 {
					in.m[a] = append(in.m[a], 0.5+0.5*r.Float64())
				}
			}
			var jobs []sim.JobSpec
			for i := range 1200 {
				at := 0.0
				if i >= 700 {
					at = 1
				}
				j := shareJob(i, at, 36000, fmt.Sprintf("w%d", r.IntN(8)))
				j.GPUMemMiB = int64(10000 * (1 + r.IntN(3)))
				jobs = append(jobs, j)
			}
			var nodes []sim.NodeSpec
			for n := range 128 {
				nodes = append(nodes, sim.NodeSpec{Name: fmt.Sprintf("n%d", n), GPUModel: "H100", GPUs: 8, CPUMilli: 1 << 20, MemoryMiB: 1 << 30,
					GPUMemMiB: 81920, NVLinkSize: 8, PCIeSize: 8, SocketSize: 8, NVLinkDomain: -1, Sharing: sim.ShareTimeSlice, SharingClients: 4})
			}
			var point time.Duration
			var decisions int64
			for b.Loop() {
				c, err := sim.NewCluster(nodes)
				if err != nil {
					b.Fatal(err)
				}
				pl, err := New("pack:mode=" + mode)
				if err != nil {
					b.Fatal(err)
				}
				pol := &packAll{pl: pl}
				e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Seed: 1, NoLog: true, Sharing: &sim.SharingConfig{Interference: in}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				if pol.maxPend != 500 {
					b.Fatalf("the point at 1 s had %d pending, want 500", pol.maxPend)
				}
				point = pol.point
				decisions, _, _ = PackDecisions(pl)
			}
			b.ReportMetric(float64(point.Microseconds())/1000, "point-ms")
			b.ReportMetric(float64(decisions), "decisions")
		})
	}
}
