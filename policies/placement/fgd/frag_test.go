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

// handCluster is two T4 nodes with 2 GPUs and one G2 node with 8 GPUs.
func handCluster(t *testing.T) *sim.Cluster {
	t.Helper()
	c, err := sim.NewCluster([]sim.NodeSpec{
		{Name: "t4-a", GPUModel: "T4", GPUs: 2, CPUMilli: 8000, MemoryMiB: 65536, NVLinkDomain: -1},
		{Name: "t4-b", GPUModel: "T4", GPUs: 2, CPUMilli: 8000, MemoryMiB: 65536, NVLinkDomain: -1},
		{Name: "g2", GPUModel: "G2", GPUs: 8, CPUMilli: 96000, MemoryMiB: 1 << 20, NVLinkDomain: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustAlloc(t *testing.T, c *sim.Cluster, n sim.NodeID, gpus []sim.GPUID, milli sim.MilliGPU, cpu int64) {
	t.Helper()
	if err := c.Allocate(n, gpus, milli, cpu, 0); err != nil {
		t.Fatal(err)
	}
}

func fragOf(t *testing.T, c *sim.Cluster, n sim.NodeID, tw *TargetWorkload) float64 {
	t.Helper()
	f, err := NodeFragMilli(c, n, tw)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFragHandWorked(t *testing.T) {
	oneGPU := &TargetWorkload{Shapes: []Shape{{CPUMilli: 1000, GPUs: 1, GPUMilli: 1000}}, Freq: []float64{1}}
	half := &TargetWorkload{Shapes: []Shape{{CPUMilli: 1000, GPUs: 1, GPUMilli: 500}}, Freq: []float64{1}}
	c := handCluster(t)
	// Empty 2-GPU node: the task fits, no GPU has a sliver: 0.
	if f := fragOf(t, c, 0, oneGPU); f != 0 {
		t.Errorf("idle node: frag %v, want 0", f)
	}
	// One GPU fully used, one free: a 1-GPU task still fits; nothing is fragmented.
	mustAlloc(t, c, 0, []sim.GPUID{0}, 1000, 1000)
	if f := fragOf(t, c, 0, oneGPU); f != 0 {
		t.Errorf("one free GPU: frag %v, want 0 (not fragmented for 1-GPU tasks)", f)
	}
	// Node t4-b: GPU 2 has 300 milli left (700 used), GPU 3 free: the task fits on GPU
	// 3, the 300-milli sliver is smaller than its 1000 per GPU: 300 fragmented.
	mustAlloc(t, c, 1, []sim.GPUID{2}, 700, 1000)
	if f := fragOf(t, c, 1, oneGPU); f != 300 {
		t.Errorf("sliver: frag %v, want 300", f)
	}
	// For a 500-milli task the free GPU is usable and the 300 sliver is not: 300.
	if f := fragOf(t, c, 1, half); f != 300 {
		t.Errorf("sliver vs 500 milli: frag %v, want 300", f)
	}
	// Share GPU 3 too (500 left): 1-GPU tasks no longer fit anywhere on the node (Q2):
	// all 800 idle milli are fragmented; 500-milli tasks still fit, 300 is a sliver.
	mustAlloc(t, c, 1, []sim.GPUID{3}, 500, 1000)
	if f := fragOf(t, c, 1, oneGPU); f != 800 {
		t.Errorf("no whole GPU: frag %v, want 800", f)
	}
	if f := fragOf(t, c, 1, half); f != 300 {
		t.Errorf("500-milli task: frag %v, want 300", f)
	}
	// CPU exhausted (Q4): everything idle is fragmented even though GPUs are free.
	mustAlloc(t, c, 2, nil, 0, 95500)
	if f := fragOf(t, c, 2, oneGPU); f != 8000 {
		t.Errorf("no CPU: frag %v, want 8000", f)
	}
	// Model not allowed (NoAccess): all idle milli.
	v100 := &TargetWorkload{Shapes: []Shape{{CPUMilli: 1, GPUs: 1, GPUMilli: 100, Models: "V100M16|V100M32"}}, Freq: []float64{1}}
	if f := fragOf(t, handCluster(t), 0, v100); f != 2000 {
		t.Errorf("no access: frag %v, want 2000", f)
	}
	// Mixed target: half CPU-only (always counts all idle), half 1-GPU (fits).
	mix := &TargetWorkload{Shapes: []Shape{{CPUMilli: 1000}, {CPUMilli: 1000, GPUs: 1, GPUMilli: 1000}}, Freq: []float64{0.5, 0.5}}
	if f := fragOf(t, c, 0, mix); f != 500 {
		t.Errorf("mixed: frag %v, want 500", f)
	}
	// Cluster: sum of nodes, ratio = frag / idle.
	cf, err := ClusterFrag(c, oneGPU)
	if err != nil {
		t.Fatal(err)
	}
	if cf.FragMilli != 0+800+8000 || cf.IdleMilli != 1000+800+8000 {
		t.Errorf("cluster frag %+v, want 8800 of 9800", cf)
	}
	if math.Abs(cf.Ratio()-100*8800.0/9800) > 1e-9 || cf.GPUs() != 8.8 {
		t.Errorf("ratio %v, GPUs %v", cf.Ratio(), cf.GPUs())
	}
	if (Frag{}).Ratio() != 0 {
		t.Error("ratio of nothing idle must be 0")
	}
	// Bad input never panics.
	if _, err := NodeFragMilli(c, 0, &TargetWorkload{}); err == nil {
		t.Error("empty target: want an error")
	}
	if f := fragOf(t, c, 99, oneGPU); f != 0 {
		t.Errorf("unknown node: %v", f)
	}
}
