package fgd

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpusim/gpusim/sim"
)

// FillConfig configures one fill run.
type FillConfig struct {
	// Load is the target GPU demand as a multiple of the cluster's GPU capacity (the
	// paper uses 1.3). The pod list is resized to it; <= 0 keeps the list as is;
	// values above 100 or NaN are rejected.
	Load float64
	// Seed seeds the shuffle, the resizing and the policy's tie-breaking (the paper
	// repeats every run with seeds 42..51).
	Seed uint64
	// Policy is one of Policies().
	Policy string
	// Target selects the typical pods of the fragmentation measure; the zero value
	// is the authors' experiment setting.
	Target TargetConfig
}

// FillPoint is the state of the cluster when the arrived GPU demand reached
// ArrivedPct percent of capacity: the mean over every pod arrival whose arrived
// demand rounds to ArrivedPct (as the authors' merge_*_discrete.py scripts do).
type FillPoint struct {
	ArrivedPct int     `json:"arrived_pct" yaml:"arrived_pct"`
	AllocRatio float64 `json:"alloc_ratio" yaml:"alloc_ratio"`   // allocated milli-GPU / capacity x 100
	FragGPUPct float64 `json:"frag_gpu_pct" yaml:"frag_gpu_pct"` // fragmented milli-GPU / capacity x 100
	FragRatio  float64 `json:"frag_ratio" yaml:"frag_ratio"`     // fragmented / idle x 100
}

// FillResult is the outcome of a fill run.
type FillResult struct {
	// GPUAllocationRatio is the allocation ratio (percent of GPU capacity) at the
	// target load (the curve's last point, e.g. 130 for Load 1.3).
	GPUAllocationRatio float64 `json:"fill.gpu_allocation_ratio" yaml:"fill.gpu_allocation_ratio"`
	// FragmentedGPURatio is the fragmented GPU amount as a percent of GPU capacity at
	// the target load (the paper's Fig. 7b metric).
	FragmentedGPURatio float64 `json:"fill.fragmented_gpu_ratio" yaml:"fill.fragmented_gpu_ratio"`
	// Pods is the number of pods that arrived (after resizing); Unscheduled of them
	// fitted nowhere.
	Pods        int `json:"fill.pods" yaml:"fill.pods"`
	Unscheduled int `json:"fill.unscheduled_pods" yaml:"fill.unscheduled_pods"`
	// Curve has one point per whole percent of arrived demand, 0..round(100 x Load).
	Curve []FillPoint `json:"curve" yaml:"curve"`
}

// RunFill runs the FGD paper's fill experiment: the cluster built from nodes
// starts empty; the pod list (all single-replica pods) is shuffled and resized to
// Load x GPU capacity; the pods arrive one at a time, are placed by the policy (or
// stay unscheduled) and never leave; the metrics are sampled at every arrival and
// averaged per whole percent of arrived GPU demand.
//
// Order and resizing follow the authors' simulator: the original pods are sorted by
// ID and shuffled (stream "fgd/shuffle"); if their GPU demand is below the target,
// copies of pods drawn uniformly with replacement (stream "fgd/tune", from the
// ID-sorted list) are appended until the next copy would exceed the target (the
// authors compare the target with the copy's per-GPU milli, not its total; kept
// for fidelity); if it is above, random pods are dropped until it is not. The
// target workload of the fragmentation measure is computed from the original list.
func RunFill(nodes []sim.NodeSpec, pods []sim.JobSpec, cfg FillConfig) (*FillResult, error) {
	c, pl, byID, demand, err := fillSetup(nodes, pods, cfg)
	if err != nil {
		return nil, err
	}
	capMilli := c.NumGPUs() * int64(sim.WholeGPU)
	sort.SliceStable(byID, func(a, b int) bool { return byID[a].ID < byID[b].ID })
	order := append([]*sim.JobSpec(nil), byID...)
	shuf := sim.Stream(cfg.Seed, "fgd/shuffle")
	shuf.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })

	if cfg.Load > 0 {
		target := cfg.Load * float64(capMilli)
		tune := sim.Stream(cfg.Seed, "fgd/tune")
		switch {
		case float64(demand) < target:
			// Each draw adds >= 1 milli with probability >= 1/len(pods), so the loop
			// ends; the bound only guards against pathological inputs.
			limit := 64*len(pods) + int(target)
			for i := 0; i < limit; i++ {
				p := byID[tune.IntN(len(byID))]
				if float64(demand+int64(p.GPUMilli)*int64(min(p.GPUsPerReplica, 1))) > target {
					break
				}
				demand += p.GPUDemandMilli()
				order = append(order, p)
			}
		case float64(demand) > target:
			for float64(demand) > target && len(order) > 0 {
				k := tune.IntN(len(order))
				demand -= order[k].GPUDemandMilli()
				order = append(order[:k], order[k+1:]...)
			}
		}
	}

	maxK := int(math.Round(100 * cfg.Load))
	type bucket struct {
		n                int
		alloc, frag, fgr float64
	}
	var buckets []bucket
	var arrived int64
	res := &FillResult{Pods: len(order)}
	var last FillPoint
	for _, p := range order {
		arrived += p.GPUDemandMilli()
		if _, ok, err := pl.PlaceAndCommit(p); err != nil {
			return nil, err
		} else if !ok {
			res.Unscheduled++
		}
		f := pl.Frag()
		pt := FillPoint{
			AllocRatio: 100 * float64(c.AllocatedMilli()) / float64(capMilli),
			FragGPUPct: 100 * f.FragMilli / float64(capMilli),
			FragRatio:  f.Ratio(),
		}
		k := int(math.RoundToEven(100 * float64(arrived) / float64(capMilli)))
		for len(buckets) <= k {
			buckets = append(buckets, bucket{})
		}
		b := &buckets[k]
		b.n++
		b.alloc += pt.AllocRatio
		b.frag += pt.FragGPUPct
		b.fgr += pt.FragRatio
		last = pt
	}
	if cfg.Load <= 0 {
		maxK = len(buckets) - 1
	}
	for k := 0; k <= maxK; k++ {
		var agg bucket
		if k < len(buckets) && buckets[k].n > 0 {
			agg = buckets[k]
		} else {
			for kk := k - 1; kk <= k+1; kk++ {
				if kk >= 0 && kk < len(buckets) {
					b := buckets[kk]
					agg.n += b.n
					agg.alloc += b.alloc
					agg.frag += b.frag
					agg.fgr += b.fgr
				}
			}
		}
		if agg.n == 0 {
			continue
		}
		n := float64(agg.n)
		res.Curve = append(res.Curve, FillPoint{ArrivedPct: k, AllocRatio: agg.alloc / n, FragGPUPct: agg.frag / n, FragRatio: agg.fgr / n})
	}
	end := last
	if len(res.Curve) > 0 && res.Curve[len(res.Curve)-1].ArrivedPct == maxK {
		end = res.Curve[len(res.Curve)-1]
	}
	res.GPUAllocationRatio = end.AllocRatio
	res.FragmentedGPURatio = end.FragGPUPct
	return res, nil
}

// fillSetup is RunFill's start-up: the checks of the configuration, the
// cluster and every pod, then the cluster, the placer, the pods by ID (not yet
// sorted) and their total GPU demand.
func fillSetup(nodes []sim.NodeSpec, pods []sim.JobSpec, cfg FillConfig) (*sim.Cluster, *Placer, []*sim.JobSpec, int64, error) {
	if len(pods) == 0 {
		return nil, nil, nil, 0, fmt.Errorf("fgd: fill needs pods")
	}
	if math.IsNaN(cfg.Load) || math.IsInf(cfg.Load, 0) || cfg.Load > 100 {
		return nil, nil, nil, 0, fmt.Errorf("fgd: load %v out of range", cfg.Load)
	}
	if _, err := parsePolicy(cfg.Policy); err != nil {
		return nil, nil, nil, 0, err
	}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		return nil, nil, nil, 0, fmt.Errorf("fgd: %w", err)
	}
	if c.NumGPUs() == 0 {
		return nil, nil, nil, 0, fmt.Errorf("fgd: the cluster has no GPUs")
	}
	tw, err := NewTargetWorkload(pods, cfg.Target)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	pl, err := NewPlacer(c, cfg.Policy, tw, cfg.Seed)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	byID := make([]*sim.JobSpec, len(pods))
	var demand int64
	for i := range pods {
		if _, err := pl.request(&pods[i]); err != nil {
			return nil, nil, nil, 0, err
		}
		byID[i] = &pods[i]
		demand += pods[i].GPUDemandMilli()
	}
	if cfg.Load > 0 && demand <= 0 {
		return nil, nil, nil, 0, fmt.Errorf("fgd: the pods ask no GPU; cannot resize to load %v", cfg.Load)
	}
	return c, pl, byID, demand, nil
}

// CheckFill runs RunFill's start-up checks (configuration, cluster, every pod)
// without filling: nil when RunFill would start.
func CheckFill(nodes []sim.NodeSpec, pods []sim.JobSpec, cfg FillConfig) error {
	_, _, _, _, err := fillSetup(nodes, pods, cfg)
	return err
}
