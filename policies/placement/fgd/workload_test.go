package fgd

import (
	"math"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

func pod(id string, cpu int64, gpus int32, milli sim.MilliGPU, models ...string) sim.JobSpec {
	return sim.JobSpec{ID: sim.JobID(id), Replicas: 1, CPUMilli: cpu, MemoryMiB: 1024, GPUsPerReplica: gpus, GPUMilli: milli, GPUModels: models}
}

func repeat(p sim.JobSpec, n int) []sim.JobSpec {
	out := make([]sim.JobSpec, n)
	for i := range out {
		out[i] = p
	}
	return out
}

func TestNewTargetWorkloadThresholdAndRenormalisation(t *testing.T) {
	var pods []sim.JobSpec
	pods = append(pods, repeat(pod("a", 4000, 1, 500), 5)...)  // A: 5
	pods = append(pods, repeat(pod("b", 8000, 1, 1000), 3)...) // B: 3
	pods = append(pods, repeat(pod("c", 2000, 0, 1000), 1)...) // C: 1 (CPU-only)
	pods = append(pods, repeat(pod("d", 2000, 2, 1000), 1)...) // D: 1
	// 60 %, step 1: A (5 < 6) then B (8 >= 6): renormalised to 5/8, 3/8.
	tw, err := NewTargetWorkload(pods, TargetConfig{PopularityPct: 60})
	if err != nil {
		t.Fatal(err)
	}
	want := []Shape{{4000, 1, 500, ""}, {8000, 1, 1000, ""}}
	if len(tw.Shapes) != 2 || tw.Shapes[0] != want[0] || tw.Shapes[1] != want[1] {
		t.Fatalf("shapes %+v, want %+v", tw.Shapes, want)
	}
	if math.Abs(tw.Freq[0]-5.0/8) > 1e-12 || math.Abs(tw.Freq[1]-3.0/8) > 1e-12 {
		t.Fatalf("freq %v, want [5/8 3/8]", tw.Freq)
	}
	// Default (95 %): all four, no renormalisation. C and D tie at 1 pod; ties go in
	// descending shape order (same CPU, then milli: D's 1000 before C's 0).
	tw, err = NewTargetWorkload(pods, TargetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tw.Shapes) != 4 {
		t.Fatalf("got %d shapes, want 4", len(tw.Shapes))
	}
	if tw.Shapes[2] != (Shape{2000, 2, 1000, ""}) || tw.Shapes[3] != (Shape{2000, 0, 0, ""}) {
		t.Fatalf("tie order %+v", tw.Shapes[2:])
	}
	var sum float64
	for _, f := range tw.Freq {
		sum += f
	}
	if math.Abs(sum-1) > 1e-12 || math.Abs(tw.Freq[0]-0.5) > 1e-12 {
		t.Fatalf("freq %v", tw.Freq)
	}
	// Step 10 takes everything at once even at 60 %.
	tw, _ = NewTargetWorkload(pods, TargetConfig{PopularityPct: 60, Step: 10})
	if len(tw.Shapes) != 4 {
		t.Fatalf("step 10: %d shapes", len(tw.Shapes))
	}
	// Without CPU-only pods: A 5/9, B 3/9, D 1/9.
	tw, _ = NewTargetWorkload(pods, TargetConfig{ExcludeCPUOnly: true})
	if len(tw.Shapes) != 3 || math.Abs(tw.Freq[0]-5.0/9) > 1e-12 {
		t.Fatalf("exclude CPU-only: %+v %v", tw.Shapes, tw.Freq)
	}
	// GPU weight: whole-GPU pods count 1 + GPUs x w.
	tw, _ = NewTargetWorkload(pods, TargetConfig{GPUWeight: 1})
	// A 5, B 3 x 2 = 6, C 1, D 1 x 3 = 3: B first.
	if tw.Shapes[0] != (Shape{8000, 1, 1000, ""}) || math.Abs(tw.Freq[0]-6.0/15) > 1e-12 {
		t.Fatalf("gpu weight: %+v %v", tw.Shapes, tw.Freq)
	}
}

func TestShapeOfAndModels(t *testing.T) {
	s := ShapeOf(&sim.JobSpec{Replicas: 1, CPUMilli: 0, GPUsPerReplica: 0, GPUMilli: 1000})
	if s != (Shape{CPUMilli: nonZeroCPU}) {
		t.Fatalf("CPU-only shape %+v", s)
	}
	s = ShapeOf(&sim.JobSpec{Replicas: 1, CPUMilli: 5, GPUsPerReplica: 1, GPUMilli: 300, GPUModels: []string{"A10", "T4"}})
	if s.Models != "A10|T4" || !s.allows("T4") || s.allows("V100M16") || s.allows("") {
		t.Fatalf("models %+v", s)
	}
	if !(Shape{}).allows("") || !(Shape{Models: "|"}).allows("G2") {
		t.Fatal("empty constraint must allow any model")
	}
}

func TestNewTargetWorkloadBadInput(t *testing.T) {
	pods := []sim.JobSpec{pod("a", 1, 1, 1000)}
	for _, cfg := range []TargetConfig{{PopularityPct: 150}, {PopularityPct: -1}, {Step: -1}, {GPUWeight: math.NaN()}, {GPUWeight: -2}} {
		if _, err := NewTargetWorkload(pods, cfg); err == nil {
			t.Errorf("config %+v: want an error", cfg)
		}
	}
	if _, err := NewTargetWorkload(nil, TargetConfig{}); err == nil {
		t.Error("no pods: want an error")
	}
	if _, err := NewTargetWorkload([]sim.JobSpec{pod("c", 1, 0, 0)}, TargetConfig{ExcludeCPUOnly: true}); err == nil {
		t.Error("only CPU pods excluded: want an error")
	}
	bad := []*TargetWorkload{
		nil, {}, {Shapes: []Shape{{1, 1, 500, ""}}},
		{Shapes: []Shape{{1, 1, 500, ""}}, Freq: []float64{2}},
		{Shapes: []Shape{{1, 1, 0, ""}}, Freq: []float64{1}},
		{Shapes: []Shape{{1, 0, 500, ""}}, Freq: []float64{1}},
		{Shapes: []Shape{{1, 1, 1500, ""}}, Freq: []float64{1}},
		{Shapes: []Shape{{1, 1, 500, ""}}, Freq: []float64{math.NaN()}},
	}
	for i, tw := range bad {
		if tw.Validate() == nil {
			t.Errorf("case %d: Validate accepted %+v", i, tw)
		}
	}
}
