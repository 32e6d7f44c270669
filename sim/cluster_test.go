package sim_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/sim"
)

// The incremental free-capacity indexes (per-node free counts, per-model buckets,
// per-domain free counts at every topology level, cluster totals) agree with a naive
// recount after every operation of random allocate/release sequences.
func TestFreeCapacityIndexDifferential(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nn := rapid.IntRange(1, 12).Draw(t, "nodes")
		var nodes []sim.NodeSpec
		for i := 0; i < nn; i++ {
			g := int32(rapid.SampledFrom([]int{0, 1, 2, 4, 8}).Draw(t, "gpus"))
			nodes = append(nodes, sim.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUModel: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "model"),
				GPUs: g, CPUMilli: 32000, MemoryMiB: 1 << 16, NVLinkSize: int32(rapid.IntRange(0, 8).Draw(t, "nvl")),
				PCIeSize: int32(rapid.IntRange(0, 4).Draw(t, "pcie")), SocketSize: int32(rapid.IntRange(0, 8).Draw(t, "sock")),
				NVLinkDomain: int32(rapid.IntRange(0, 2).Draw(t, "nvldom")), Leaf: int32(i / 3), Spine: int32(i / 6)})
		}
		c, err := sim.NewCluster(nodes)
		if err != nil {
			t.Fatal(err)
		}
		type alloc struct {
			n     sim.NodeID
			gpus  []sim.GPUID
			milli sim.MilliGPU
			cpu   int64
		}
		var live []alloc
		for step := 0; step < 60; step++ {
			if len(live) > 0 && rapid.Bool().Draw(t, "release") {
				i := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				a := live[i]
				c.Release(a.n, a.gpus, a.milli, a.cpu, 0)
				live = append(live[:i], live[i+1:]...)
			} else {
				n := sim.NodeID(rapid.IntRange(0, nn-1).Draw(t, "node"))
				first, end := c.NodeGPUs(n)
				var gpus []sim.GPUID
				milli := sim.WholeGPU
				if end > first {
					if rapid.Bool().Draw(t, "frac") {
						milli = sim.MilliGPU(rapid.IntRange(1, 1000).Draw(t, "milli"))
						gpus = []sim.GPUID{first + sim.GPUID(rapid.IntRange(0, int(end-first)-1).Draw(t, "gpu"))}
					} else {
						for g := first; g < end; g++ {
							if rapid.Bool().Draw(t, "take") {
								gpus = append(gpus, g)
							}
						}
					}
				}
				cpu := int64(rapid.IntRange(0, 8000).Draw(t, "cpu"))
				if c.Allocate(n, gpus, milli, cpu, 0) == nil {
					live = append(live, alloc{n, gpus, milli, cpu})
				}
			}
			checkIndexes(t, c)
		}
	})
}

func checkIndexes(t *rapid.T, c *sim.Cluster) {
	var free, cpu int64
	modelFree := make([]int64, len(c.Models()))
	domFree := [sim.NumLevels]map[int32]int32{}
	for l := range domFree {
		domFree[l] = map[int32]int32{}
	}
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		first, end := c.NodeGPUs(n)
		var k int32
		for g := first; g < end; g++ {
			if c.GPUUsed(g) == 0 {
				k++
				for l := sim.Level(0); l < sim.NumLevels; l++ {
					domFree[l][c.GPUDomain(g, l)]++
				}
			}
		}
		if k != c.NodeFreeGPUs(n) {
			t.Fatalf("node %d: index %d free, recount %d", n, c.NodeFreeGPUs(n), k)
		}
		m := c.NodeModel(n)
		// the node is in exactly the bucket of its free count
		for b := int32(0); b <= c.MaxGPUsPerNode(); b++ {
			in := c.NextNodeWithFree(m, b, n) == n
			if in != (b == k) {
				t.Fatalf("node %d (free %d) bucket %d membership %v", n, k, b, in)
			}
		}
		free += int64(k)
		modelFree[m] += int64(k)
		cpu += c.NodeFreeCPU(n)
	}
	if free != c.FreeGPUs() || cpu != c.FreeCPU() {
		t.Fatalf("totals: free %d/%d cpu %d/%d", c.FreeGPUs(), free, c.FreeCPU(), cpu)
	}
	for m := range modelFree {
		if modelFree[m] != c.ModelFree(m) {
			t.Fatalf("model %d free %d, recount %d", m, c.ModelFree(m), modelFree[m])
		}
	}
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		var largest int32
		for d := range c.Domains(l) {
			if got, want := c.DomainFree(l, int32(d)), domFree[l][int32(d)]; got != want {
				t.Fatalf("level %s domain %d: index %d free, recount %d", l, d, got, want)
			}
			largest = max(largest, domFree[l][int32(d)])
		}
		if c.LargestFreeDomain(l) != largest {
			t.Fatalf("level %s: largest free domain %d, recount %d", l, c.LargestFreeDomain(l), largest)
		}
	}
}

// GB200 NVL72-style nodes that name one cluster-wide NVLink domain share it; the
// zero value keeps NVLink inside the node.
func TestNVLinkDomains(t *testing.T) {
	var nodes []sim.NodeSpec
	for i := 0; i < 4; i++ {
		nodes = append(nodes, sim.NodeSpec{Name: fmt.Sprintf("t%d", i), GPUModel: "B200", GPUs: 4, NVLinkDomain: int32(1 + i/2)})
	}
	nodes = append(nodes, sim.NodeSpec{Name: "plain", GPUModel: "B200", GPUs: 4, NVLinkSize: 2})
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if c.GPUDomain(0, sim.LevelNVLink) != c.GPUDomain(4, sim.LevelNVLink) || c.GPUDomain(0, sim.LevelNVLink) == c.GPUDomain(8, sim.LevelNVLink) {
		t.Error("trays 0,1 should share an NVLink domain, tray 2 another")
	}
	d := c.GPUDomain(16, sim.LevelNVLink)
	if c.Domains(sim.LevelNVLink)[d].GPUs != 2 || c.GPUDomain(17, sim.LevelNVLink) != d || c.GPUDomain(18, sim.LevelNVLink) == d {
		t.Error("the plain node should have two 2-GPU NVLink groups")
	}
	if c.Domains(sim.LevelNVLink)[c.GPUDomain(0, sim.LevelNVLink)].GPUs != 8 {
		t.Error("a 2-tray domain has 8 GPUs")
	}
}
