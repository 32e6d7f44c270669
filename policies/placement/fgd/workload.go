package fgd

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// nonZeroCPU is the CPU request kube-scheduler assumes for a pod that requests none
// (schedulerutil.GetNonzeroRequests); the authors' scorers and shape keys use it.
const nonZeroCPU = 100

// Shape is a task's resource shape as the fragmentation measure and the scorers see
// it. Two pods with the same Shape are the same "typical pod".
type Shape struct {
	CPUMilli int64  // CPU request; a zero request counts as 100 (kube-scheduler's non-zero default)
	GPUs     int32  // GPUs requested (0 = CPU-only)
	GPUMilli int32  // milli-GPU per requested GPU (0 for CPU-only, 1000 = whole GPU)
	Models   string // allowed GPU models joined by "|" in input order; "" = any model
}

// less is the authors' PodResource.Less: CPU, then milli-GPU, then GPU count, then models.
func (s Shape) less(o Shape) bool {
	if s.CPUMilli != o.CPUMilli {
		return s.CPUMilli < o.CPUMilli
	}
	if s.GPUMilli != o.GPUMilli {
		return s.GPUMilli < o.GPUMilli
	}
	if s.GPUs != o.GPUs {
		return s.GPUs < o.GPUs
	}
	return s.Models < o.Models
}

// allows reports whether a task of this shape may use GPUs of model m. Like the
// authors' IsNodeAccessibleToPodByType: no constraint allows any model, a node
// without a model (CPU node) is refused to constrained shapes, and empty list
// entries are ignored.
func (s Shape) allows(m string) bool {
	if s.Models == "" {
		return true
	}
	if m == "" {
		return false
	}
	named := 0
	for _, x := range strings.Split(s.Models, "|") {
		if x == "" {
			continue
		}
		named++
		if x == m {
			return true
		}
	}
	return named == 0
}

// ShapeOf returns the shape of one replica of the job. The GPU milli of a CPU-only
// job is 0 whatever the spec says.
func ShapeOf(j *sim.JobSpec) Shape {
	s := Shape{CPUMilli: j.CPUMilli, GPUs: j.GPUsPerReplica, Models: strings.Join(j.GPUModels, "|")}
	if s.CPUMilli <= 0 {
		s.CPUMilli = nonZeroCPU
	}
	if s.GPUs > 0 {
		s.GPUMilli = int32(j.GPUMilli)
	} else {
		s.GPUs = 0
	}
	return s
}

// TargetConfig selects the typical pods. The zero value is what the authors'
// experiment scripts use for every published FGD run (generate_config_and_run.py:
// isInvolvedCpuPods true, podPopularityThreshold 95, podIncreaseStep 1,
// gpuResWeight 0). Note that the simulator's built-in fallbacks, used only when
// these are unset, are 60 % and steps of 10 (see docs/fgd.md).
type TargetConfig struct {
	// PopularityPct is the share of all pods (in percent, 0 < x <= 100) the typical
	// shapes must cover. 0 means 95.
	PopularityPct float64
	// Step is how many shapes are added at a time while covering. 0 means 1.
	Step int
	// ExcludeCPUOnly leaves CPU-only pods out of the target workload.
	ExcludeCPUOnly bool
	// GPUWeight, when > 0, counts a whole-GPU pod as 1 + GPUs x GPUWeight pods.
	GPUWeight float64
}

// TargetWorkload is the workload the fragmentation is measured against: shapes
// and their frequencies (summing to 1), most popular first.
type TargetWorkload struct {
	Shapes []Shape
	Freq   []float64
}

// NewTargetWorkload picks the typical pods of a pod list as the authors'
// GetTypicalPods does: count pods per Shape (each replica is a pod), sort by count
// (descending; ties by Shape, descending), take shapes Step at a time until they
// cover PopularityPct of all pods, and renormalise their frequencies to sum to 1.
// It fails on an empty list or a bad config, never panics.
func NewTargetWorkload(pods []sim.JobSpec, cfg TargetConfig) (*TargetWorkload, error) {
	return NewTargetWorkloadFunc(len(pods), func(i int) *sim.JobSpec { return &pods[i] }, cfg)
}

// NewTargetWorkloadFunc is NewTargetWorkload over the n pods spec(0..n-1), read
// in place (a time replay builds its target workload from the engine's jobs
// without copying them).
func NewTargetWorkloadFunc(n int, spec func(i int) *sim.JobSpec, cfg TargetConfig) (*TargetWorkload, error) {
	pct := cfg.PopularityPct
	if pct == 0 {
		pct = 95
	}
	if !(pct > 0 && pct <= 100) {
		return nil, fmt.Errorf("fgd: popularity threshold %v%% out of range (0, 100]", cfg.PopularityPct)
	}
	step := cfg.Step
	if step == 0 {
		step = 1
	}
	if step < 0 {
		return nil, fmt.Errorf("fgd: typical-pod step %d must be >= 1", cfg.Step)
	}
	if cfg.GPUWeight < 0 || math.IsNaN(cfg.GPUWeight) || math.IsInf(cfg.GPUWeight, 0) {
		return nil, fmt.Errorf("fgd: GPU weight %v must be a finite number >= 0", cfg.GPUWeight)
	}
	counts := map[Shape]float64{}
	var total float64
	for i := 0; i < n; i++ {
		p := spec(i)
		s := ShapeOf(p)
		if cfg.ExcludeCPUOnly && s.GPUs == 0 {
			continue
		}
		w := 1.0
		if cfg.GPUWeight > 0 && s.GPUMilli == int32(sim.WholeGPU) {
			w = 1 + float64(s.GPUs)*cfg.GPUWeight
		}
		n := float64(max(p.Replicas, 1))
		counts[s] += w * n
		total += w * n
	}
	if len(counts) == 0 || total <= 0 {
		return nil, fmt.Errorf("fgd: no pods to build the target workload from")
	}
	type sc struct {
		s Shape
		n float64
	}
	list := make([]sc, 0, len(counts))
	for s, n := range counts {
		list = append(list, sc{s, n})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[j].s.less(list[i].s)
	})
	expected := pct * total / 100
	var cum float64
	i, upto := 0, 0
	freq := make([]float64, 0, len(list))
	for cum < expected && i < len(list) {
		upto += step
		for i < upto && i < len(list) {
			cum += list[i].n
			freq = append(freq, list[i].n/total)
			i++
		}
	}
	tw := &TargetWorkload{}
	for k := 0; k < i; k++ {
		f := freq[k]
		if i < len(list) {
			f /= cum / total
		}
		tw.Shapes = append(tw.Shapes, list[k].s)
		tw.Freq = append(tw.Freq, f)
	}
	return tw, nil
}

// Validate checks that the workload is usable: at least one shape, one frequency
// per shape, frequencies finite and in [0, 1].
func (tw *TargetWorkload) Validate() error {
	if tw == nil || len(tw.Shapes) == 0 {
		return fmt.Errorf("fgd: empty target workload")
	}
	if len(tw.Freq) != len(tw.Shapes) {
		return fmt.Errorf("fgd: target workload has %d shapes but %d frequencies", len(tw.Shapes), len(tw.Freq))
	}
	for i, f := range tw.Freq {
		if !(f >= 0 && f <= 1) {
			return fmt.Errorf("fgd: target shape %d has frequency %v outside [0, 1]", i, f)
		}
		s := tw.Shapes[i]
		if s.GPUs < 0 || s.GPUMilli < 0 || s.GPUMilli > int32(sim.WholeGPU) || (s.GPUs > 0) != (s.GPUMilli > 0) {
			return fmt.Errorf("fgd: target shape %d has a bad GPU request (%d x %d milli)", i, s.GPUs, s.GPUMilli)
		}
	}
	return nil
}
