package fgd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// naiveNodeFrag is the authors' NodeGpuShareFragAmount + FragAmountSumExceptQ3,
// written per shape without any precompilation.
func naiveNodeFrag(tw *TargetWorkload, model string, cpuLeft int64, left []int32) float64 {
	var total int64
	for _, l := range left {
		total += int64(l)
	}
	var frag float64
	for i, s := range tw.Shapes {
		p := tw.Freq[i]
		if s.GPUMilli == 0 || !s.allows(model) {
			frag += p * float64(total) // XL, XR, NoAccess
			continue
		}
		fit := int32(0)
		var sliver int64
		for _, l := range left {
			if l >= s.GPUMilli {
				fit++
			} else {
				sliver += int64(l)
			}
		}
		if fit >= s.GPUs && cpuLeft >= s.CPUMilli { // Q3
			frag += p * float64(sliver)
		} else { // Q1, Q2, Q4
			frag += p * float64(total)
		}
	}
	return frag
}

func TestNodeFragMatchesNaive(t *testing.T) {
	tw := &TargetWorkload{
		Shapes: []Shape{
			{CPUMilli: 4000, GPUs: 1, GPUMilli: 500},
			{CPUMilli: 8000, GPUs: 1, GPUMilli: 500},
			{CPUMilli: 2000, GPUs: 1, GPUMilli: 250, Models: "T4"},
			{CPUMilli: 16000, GPUs: 2, GPUMilli: 1000},
			{CPUMilli: 32000, GPUs: 8, GPUMilli: 1000, Models: "V100|G2"},
			{CPUMilli: 1000},
		},
		Freq: []float64{0.3, 0.1, 0.15, 0.2, 0.05, 0.2},
	}
	nodes := []sim.NodeSpec{
		{Name: "a", GPUModel: "T4", GPUs: 2, CPUMilli: 64000, MemoryMiB: 1 << 20, NVLinkDomain: -1},
		{Name: "b", GPUModel: "G2", GPUs: 8, CPUMilli: 96000, MemoryMiB: 1 << 20, NVLinkDomain: -1},
		{Name: "c", GPUModel: "P100", GPUs: 4, CPUMilli: 32000, MemoryMiB: 1 << 20, NVLinkDomain: -1},
	}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMeasure(c, tw)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	milli := []int32{0, 100, 250, 499, 500, 501, 750, 1000}
	for it := 0; it < 20000; it++ {
		n := rng.IntN(len(nodes))
		left := make([]int32, nodes[n].GPUs)
		for i := range left {
			left[i] = milli[rng.IntN(len(milli))]
		}
		cpu := rng.Int64N(nodes[n].CPUMilli + 1)
		got, _ := m.nodeFrag(c.ModelIndex(nodes[n].GPUModel), cpu, left)
		want := naiveNodeFrag(tw, nodes[n].GPUModel, cpu, left)
		if math.Abs(got-want) > 1e-6 {
			t.Fatalf("node %s cpu %d left %v: frag %v, naive %v", nodes[n].Name, cpu, left, got, want)
		}
	}
}
