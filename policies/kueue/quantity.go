package kueue

import (
	"math"

	"github.com/gpusim/gpusim/policies"
)

// Resource names Kueue quotas use, and gpusim's units for them.
const (
	ResGPU    = "nvidia.com/gpu" // whole GPUs
	ResCPU    = "cpu"            // millicores
	ResMemory = "memory"         // MiB
)

// parseQuantity parses a Kubernetes resource quantity ("16", "500m", "64Gi", "1.5",
// "2e3") for resource res into gpusim units: GPUs for nvidia.com/gpu, millicores for
// cpu, MiB for memory (rounded up), the plain number otherwise.
func parseQuantity(res, s string) (int64, error) {
	v, err := policies.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	switch res {
	case ResCPU:
		return int64(math.Ceil(v*1000 - 1e-9)), nil
	case ResMemory:
		return int64(math.Ceil(v/(1<<20) - 1e-9)), nil
	default:
		return int64(math.Ceil(v - 1e-9)), nil
	}
}
