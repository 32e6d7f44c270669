package kueue

import (
	"fmt"
	"math"
	"strconv"
	"strings"
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
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty quantity")
	}
	num := s
	mult := 1.0
	suffixes := []struct {
		suf string
		m   float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50},
		{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"m", 1e-3}}
	for _, x := range suffixes {
		if strings.HasSuffix(s, x.suf) {
			num = strings.TrimSuffix(s, x.suf)
			mult = x.m
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("invalid quantity %q", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("quantity %q must be >= 0", s)
	}
	v *= mult
	switch res {
	case ResCPU:
		return int64(math.Ceil(v*1000 - 1e-9)), nil
	case ResMemory:
		return int64(math.Ceil(v/(1<<20) - 1e-9)), nil
	default:
		return int64(math.Ceil(v - 1e-9)), nil
	}
}
