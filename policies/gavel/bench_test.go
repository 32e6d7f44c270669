package gavel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/workloads"
)

// BenchmarkGavelMaxMin10k is issue 14's Gavel speed case: 10,000 jobs of Gavel's
// job types (scale factors 1, 2, 4, 8; Poisson arrivals; log-normal V100
// durations, median 1 h) on 2,048 GPUs of three types (688 V100, 680 P100, 680
// K80 in 8-GPU nodes) under max_min_fairness with 360 s rounds. It reports
// the engine wall time, rounds and LPs solved.
//
//	go test ./policies/gavel -run '^$' -bench GavelMaxMin10k -benchtime 1x
func BenchmarkGavelMaxMin10k(b *testing.B) {
	if testing.Short() {
		b.Skip("10k-job Gavel run; not under -short")
	}
	benchGavelMaxMin(b, 10_000)
}

// BenchmarkGavelMaxMin2k is the first 2,000 jobs of BenchmarkGavelMaxMin10k's
// workload (the same arrivals, so the same load over a fifth of the time), a
// quicker check of the same path.
func BenchmarkGavelMaxMin2k(b *testing.B) { benchGavelMaxMin(b, 2_000) }

// benchGavelMaxMin runs the first n jobs of the 10k workload.
func benchGavelMaxMin(b *testing.B, n int) {
	tt, err := workloads.GavelThroughputTable("", nil)
	if err != nil {
		b.Fatal(err)
	}
	ref := slices.Index(tt.GPUTypes(), "v100")
	var nodes []sim.NodeSpec
	for _, p := range []struct {
		model string
		n     int
	}{{"V100", 86}, {"P100", 85}, {"K80", 85}} {
		for i := range p.n {
			nodes = append(nodes, sim.NodeSpec{Name: fmt.Sprintf("%s-%03d", p.model, i), GPUModel: p.model, GPUs: 8,
				CPUMilli: 64000, MemoryMiB: 512 << 10, NVLinkDomain: -1})
		}
	}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		b.Fatal(err)
	}
	// job types that run on all three GPU types, by scale factor
	var kinds []struct {
		w  string
		sf int32
	}
	for _, w := range []string{"ResNet-18_bs64", "ResNet-50_bs64", "Transformer_bs64", "LM_bs20", "CycleGAN", "A3C", "Recommendation_bs1024"} {
		for _, sf := range []int32{1, 2, 4, 8} {
			ok := true
			for ti := range tt.GPUTypes() {
				if tt.GPUTypes()[ti] == "v100" || tt.GPUTypes()[ti] == "p100" || tt.GPUTypes()[ti] == "k80" {
					_, has := tt.Throughput(w, sf, ti)
					ok = ok && has
				}
			}
			if ok {
				kinds = append(kinds, struct {
					w  string
					sf int32
				}{w, sf})
			}
		}
	}
	if len(kinds) < 10 {
		b.Fatalf("only %d job kinds", len(kinds))
	}
	rng := rand.New(rand.NewPCG(14, 1))
	jobs := make([]sim.JobSpec, 10_000)
	var t float64
	for i := range jobs {
		k := kinds[rng.IntN(len(kinds))]
		t += rng.ExpFloat64() * 40 // ~90 jobs/h
		d := math.Exp(math.Log(3600) + rng.NormFloat64())
		jobs[i] = sim.JobSpec{ID: sim.JobID(fmt.Sprintf("j%05d", i)), Submit: sim.Time(sim.Seconds(t)), Class: sim.ClassTraining,
			Replicas: k.sf, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: sim.Seconds(min(d, 86400)), Workload: k.w}
	}
	jobs = jobs[:n]
	b.ResetTimer()
	for range b.N {
		g, err := New(Params{Policy: MaxMinFairness}, tt, ref)
		if err != nil {
			b.Fatal(err)
		}
		e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: g, Seed: 1, NoLog: true,
			Speed: &workloads.ThroughputSpeed{Table: tt, Reference: ref}})
		if err != nil {
			b.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		done := 0
		for k := range res.Jobs {
			if res.Jobs[k].State == sim.StateCompleted {
				done++
			}
		}
		if done != len(jobs) {
			b.Fatalf("%d of %d jobs completed", done, len(jobs))
		}
		b.ReportMetric(float64(g.Rounds), "rounds")
		b.ReportMetric(float64(g.LPs), "LPs")
	}
}
