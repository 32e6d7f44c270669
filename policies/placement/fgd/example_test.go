package fgd_test

import (
	"fmt"

	"github.com/gpusim/gpusim/policies/placement/fgd"
	"github.com/gpusim/gpusim/sim"
)

// A fill on a toy cluster: two 2-GPU T4 nodes and one 8-GPU G2 node, a workload of
// fractional and whole-GPU pods, resized to 1.3 x the 12 GPUs.
func ExampleRunFill() {
	nodes := []sim.NodeSpec{
		{Name: "t4-a", GPUModel: "T4", GPUs: 2, CPUMilli: 32000, MemoryMiB: 131072, NVLinkDomain: -1},
		{Name: "t4-b", GPUModel: "T4", GPUs: 2, CPUMilli: 32000, MemoryMiB: 131072, NVLinkDomain: -1},
		{Name: "g2", GPUModel: "G2", GPUs: 8, CPUMilli: 96000, MemoryMiB: 786432, NVLinkDomain: -1},
	}
	var pods []sim.JobSpec
	for i, milli := range []sim.MilliGPU{500, 300, 1000, 700, 1000, 250} {
		pods = append(pods, sim.JobSpec{ID: sim.JobID(fmt.Sprint("p", i)), Replicas: 1, CPUMilli: 4000, MemoryMiB: 8192, GPUsPerReplica: 1, GPUMilli: milli})
	}
	for _, policy := range []string{fgd.BestFit, fgd.FGD} {
		res, err := fgd.RunFill(nodes, pods, fgd.FillConfig{Load: 1.3, Seed: 42, Policy: policy})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d pods, %d unscheduled, %.1f%% of GPU milli allocated, %.1f%% fragmented\n",
			policy, res.Pods, res.Unscheduled, res.GPUAllocationRatio, res.FragmentedGPURatio)
	}
	// Output:
	// best-fit: 24 pods, 5 unscheduled, 97.1% of GPU milli allocated, 2.9% fragmented
	// fgd: 24 pods, 5 unscheduled, 97.1% of GPU milli allocated, 2.9% fragmented
}
