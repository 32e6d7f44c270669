package scenarios

import (
	"fmt"

	"github.com/gpusim/gpusim/sim"
)

// Cluster size limits. A scenario above them is rejected at validation, before
// any node is built: the model keeps per-GPU and per-node state, so a cluster of
// millions of nodes would take minutes and gigabytes before saying anything. The
// limits are far above the largest clusters simulated in practice (1,536 openb
// nodes; 10,240 GPUs in the benchmarks; the largest published training clusters
// have about 100,000 GPUs).
const (
	MaxNodes = 262_144   // nodes in one cluster (all pools, or an imported node list)
	MaxGPUs  = 2_097_152 // GPUs in one cluster
)

// checkClusterSize adds a problem when the pools add up to more than MaxNodes
// nodes or MaxGPUs GPUs. gpus gives a pool's GPUs per node (false when its
// template is invalid, which is reported elsewhere).
func checkClusterSize(fe *sim.FieldErrors, pools []PoolSpec, gpus func(PoolSpec) (int32, bool)) {
	var nodes, total int64
	for _, p := range pools {
		if p.Nodes < 1 {
			continue
		}
		nodes += int64(p.Nodes)
		if g, ok := gpus(p); ok {
			total += int64(p.Nodes) * int64(g)
		}
	}
	if nodes > MaxNodes {
		fe.Add("cluster.pools", "%d nodes in all: the limit is %d nodes per cluster", nodes, MaxNodes)
	}
	if total > MaxGPUs {
		fe.Add("cluster.pools", "%d GPUs in all: the limit is %d GPUs per cluster", total, MaxGPUs)
	}
}

// checkNodeCount rejects an imported node list above the limits.
func checkNodeCount(nodes []sim.NodeSpec) error {
	if len(nodes) > MaxNodes {
		return fmt.Errorf("%d nodes: the limit is %d nodes per cluster", len(nodes), MaxNodes)
	}
	var g int64
	for i := range nodes {
		g += int64(nodes[i].GPUs)
	}
	if g > MaxGPUs {
		return fmt.Errorf("%d GPUs: the limit is %d GPUs per cluster", g, MaxGPUs)
	}
	return nil
}
