package workloads

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// LevelCore names the fabric above the spine level (GPUs under different spines).
const LevelCore = "core"

// Link is the per-GPU bandwidth and per-step latency of one topology level.
type Link struct {
	// GBps is the unidirectional bandwidth per GPU in gigabytes (1e9 B) per second.
	GBps float64 `yaml:"gbps"`
	// LatencyUS is the latency of one ring step in microseconds.
	LatencyUS float64 `yaml:"latencyUs"`
}

// ClassComm is a class's per-iteration work for the speed model.
type ClassComm struct {
	// ComputeS is the compute time of one iteration on the reference GPU model.
	ComputeS Seconds `yaml:"computeS"`
	// MBPerIter is the data all-reduced per iteration in megabytes (1e6 B), e.g.
	// the gradient size; 0 = no communication.
	MBPerIter float64 `yaml:"mbPerIter"`
}

// SpeedConfig configures the placement-dependent speed model (see SpeedModel).
// Zero fields take the defaults of DefaultSpeedConfig via SetDefaults; map entries
// given replace the default entry of the same key, others keep their defaults.
type SpeedConfig struct {
	// ReferenceModel is the GPU model at which JobSpec durations were measured;
	// empty = the cluster's most common GPU model (so packed jobs on a homogeneous
	// cluster run at speed 1).
	ReferenceModel string `yaml:"referenceModel,omitempty"`
	// Throughput is each GPU model's relative per-GPU throughput. A cluster model
	// matches the longest key that is a case-insensitive prefix of its name
	// ("H100" matches "H100-SXM-80GB"); an unmatched model counts as the reference.
	Throughput map[string]float64 `yaml:"throughput,omitempty"`
	// Links maps a level (nvlink, pcie, socket, node, leaf, spine, core) to its link.
	Links map[string]Link `yaml:"links,omitempty"`
	// Classes maps a class name to its iteration model; a class without an entry
	// (and CPU-only or 1-GPU jobs) is only scaled by throughput.
	Classes map[string]ClassComm `yaml:"classes,omitempty"`
}

// DefaultThroughput is the relative per-GPU throughput of common models: the ratio
// of dense FP16/BF16 tensor-core peak (NVIDIA datasheets; A100 = 312 TFLOPS = 1).
// Achieved training speedups are usually smaller than peak ratios; calibrate when
// it matters.
func DefaultThroughput() map[string]float64 {
	return map[string]float64{
		"V100": 0.40, // 125 TFLOPS
		"T4":   0.21, // 65
		"A10":  0.40, // 125
		"A30":  0.53, // 165
		"A40":  0.48, // 150
		"A100": 1.00, // 312
		"L4":   0.39, // 121
		"L40":  0.58, // 181
		"L40S": 1.16, // 362
		"H100": 3.17, // 989 (SXM)
		"H200": 3.17, // 989
		"B200": 7.21, // 2250
	}
}

// DefaultLinks are per-GPU unidirectional bandwidths and step latencies by level:
//
//   - nvlink 450 GB/s: NVLink 4 (H100), 900 GB/s bidirectional per GPU.
//   - pcie 25 GB/s: PCIe Gen4 x16 (32 GB/s raw per direction, ~25 achieved).
//   - socket 20 GB/s: peer-to-peer across PCIe switches via the CPU root complex.
//   - node 10 GB/s: across CPU sockets (UPI/xGMI), where P2P is often disabled.
//   - leaf 50 GB/s: one 400 Gb/s NDR InfiniBand NIC per GPU (rail-optimized, as
//     in DGX H100), through one leaf switch.
//   - spine 25 GB/s: crossing the spine of a 2:1 oversubscribed fat tree.
//   - core 12.5 GB/s: crossing spines (4:1).
//
// Latencies: 2-3 us for NVLink/PCIe, 5-10 us for network hops (NCCL ring step).
func DefaultLinks() map[string]Link {
	return map[string]Link{
		"nvlink":  {GBps: 450, LatencyUS: 2},
		"pcie":    {GBps: 25, LatencyUS: 3},
		"socket":  {GBps: 20, LatencyUS: 4},
		"node":    {GBps: 10, LatencyUS: 5},
		"leaf":    {GBps: 50, LatencyUS: 6},
		"spine":   {GBps: 25, LatencyUS: 8},
		LevelCore: {GBps: 12.5, LatencyUS: 10},
	}
}

// DefaultSpeedClasses are the per-class iteration models:
//
//   - training: 0.5 s compute, 1000 MB (a ~500M-parameter model's FP16 gradients).
//   - experiment: 0.2 s, 200 MB (a ~100M-parameter model).
//   - batch-inference: 0.1 s, 10 MB (mostly independent replicas; small syncs).
//   - serving: 0.05 s, 50 MB (tensor-parallel activations per step).
//   - preprocessing: none (CPU-bound; throughput only).
func DefaultSpeedClasses() map[string]ClassComm {
	return map[string]ClassComm{
		string(sim.ClassTraining):       {ComputeS: 0.5, MBPerIter: 1000},
		string(sim.ClassExperiment):     {ComputeS: 0.2, MBPerIter: 200},
		string(sim.ClassBatchInference): {ComputeS: 0.1, MBPerIter: 10},
		string(sim.ClassServing):        {ComputeS: 0.05, MBPerIter: 50},
		string(sim.ClassUnknown):        {ComputeS: 0.5, MBPerIter: 500},
	}
}

// DefaultSpeedConfig returns the documented defaults.
func DefaultSpeedConfig() SpeedConfig {
	var c SpeedConfig
	c.SetDefaults()
	return c
}

// SetDefaults merges the default tables under the given entries.
func (c *SpeedConfig) SetDefaults() {
	def := DefaultThroughput()
	for k := range c.Throughput { // model keys match case-insensitively
		for d := range def {
			if strings.EqualFold(k, d) {
				delete(def, d)
			}
		}
	}
	c.Throughput = mergeDefaults(c.Throughput, def)
	c.Links = mergeDefaults(c.Links, DefaultLinks())
	c.Classes = mergeDefaults(c.Classes, DefaultSpeedClasses())
}

func mergeDefaults[V any](m, def map[string]V) map[string]V {
	out := make(map[string]V, len(def)+len(m))
	for k, v := range def {
		out[k] = v
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func linkNames() []string {
	names := make([]string, 0, sim.NumLevels+1)
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		names = append(names, l.String())
	}
	return append(names, LevelCore)
}

// Validate reports invalid entries with paths relative to the block.
func (c *SpeedConfig) Validate() sim.FieldErrors {
	var fe sim.FieldErrors
	upper := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(c.Throughput)) {
		if prev, ok := upper[strings.ToUpper(k)]; ok {
			fe.Add("throughput."+k, "duplicates %q (model names match case-insensitively)", prev)
		}
		upper[strings.ToUpper(k)] = k
		if v := c.Throughput[k]; !finite(v) || v <= 0 {
			fe.Add("throughput."+k, "must be a finite number > 0, got %g", v)
		}
		if strings.TrimSpace(k) == "" {
			fe.Add("throughput", "model names must not be empty")
		}
	}
	names := linkNames()
	for _, k := range slices.Sorted(maps.Keys(c.Links)) {
		l := c.Links[k]
		if !slices.Contains(names, k) {
			fe.Add("links."+k, "unknown level (want one of %s)", strings.Join(names, ", "))
			continue
		}
		if !finite(l.GBps) || l.GBps <= 0 {
			fe.Add("links."+k+".gbps", "must be a finite number > 0, got %g", l.GBps)
		}
		if !finite(l.LatencyUS) || l.LatencyUS < 0 {
			fe.Add("links."+k+".latencyUs", "must be a finite number >= 0, got %g", l.LatencyUS)
		}
	}
	for _, n := range names {
		if _, ok := c.Links[n]; !ok {
			fe.Add("links."+n, "missing (call SetDefaults)")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Classes)) {
		cc := c.Classes[k]
		if _, ok := DefaultClass(k); !ok {
			fe.Add("classes."+k, "unknown class (want one of %s)", classNames())
			continue
		}
		if !finite(float64(cc.ComputeS)) || cc.ComputeS < 0 || cc.ComputeS > MaxDurationS {
			fe.Add("classes."+k+".computeS", "must be in 0..%g seconds, got %g", MaxDurationS, float64(cc.ComputeS))
		}
		if !finite(cc.MBPerIter) || cc.MBPerIter < 0 || cc.MBPerIter > 1e12 {
			fe.Add("classes."+k+".mbPerIter", "must be in 0..1e12, got %g", cc.MBPerIter)
		}
		if cc.ComputeS == 0 && cc.MBPerIter > 0 {
			fe.Add("classes."+k+".computeS", "must be > 0 when mbPerIter > 0")
		}
	}
	return fe
}

// SpeedModel is a placement-dependent sim.SpeedModel. A job's iteration takes
//
//	T = computeS x refThroughput / minThroughput(placement)  +  allreduce(level, p)
//	allreduce(level, p) = 2(p-1)/p x bytes / bandwidth(level) + 2(p-1) x latency(level)
//
// (a ring all-reduce over the p GPUs of the gang, bound by the slowest topology
// level the placement crosses: the tightest of nvlink, pcie, socket, node, leaf,
// spine at which all its GPUs share one domain, else core). The speed is
// Tref / T, where Tref is the same iteration on reference GPUs with the fastest
// all-reduce among the levels at or above the tightest one whose domain around the
// job's first GPU holds p GPUs. So a tightly packed job on reference GPUs runs at
// speed 1, a scattered one slower (never faster), and one on faster GPUs faster. It holds no mutable state
// and is safe for concurrent simulations.
type SpeedModel struct {
	ref     string
	tput    []modelTput // sorted by key length, longest first
	links   [sim.NumLevels + 1]Link
	classes map[sim.JobClass]ClassComm
}

type modelTput struct {
	key string // upper case
	v   float64
}

var _ sim.SpeedModel = (*SpeedModel)(nil)

// NewSpeedModel builds a SpeedModel from cfg (defaults applied to a copy).
func NewSpeedModel(cfg SpeedConfig) (*SpeedModel, error) {
	c := SpeedConfig{ReferenceModel: cfg.ReferenceModel, Throughput: cfg.Throughput, Links: cfg.Links, Classes: cfg.Classes}
	c.SetDefaults()
	if fe := c.Validate(); len(fe) > 0 {
		return nil, fmt.Errorf("workload: invalid speed model: %w", fe)
	}
	m := &SpeedModel{ref: c.ReferenceModel, classes: map[sim.JobClass]ClassComm{}}
	for k, v := range c.Throughput {
		m.tput = append(m.tput, modelTput{key: strings.ToUpper(k), v: v})
	}
	sort.Slice(m.tput, func(a, b int) bool {
		if len(m.tput[a].key) != len(m.tput[b].key) {
			return len(m.tput[a].key) > len(m.tput[b].key)
		}
		return m.tput[a].key < m.tput[b].key
	})
	for i, n := range linkNames() {
		m.links[i] = c.Links[n]
	}
	for k, v := range c.Classes {
		m.classes[sim.JobClass(k)] = v
	}
	return m, nil
}

// throughput returns model's relative throughput (0 if no key matches).
func (m *SpeedModel) throughput(model string) float64 {
	u := strings.ToUpper(model)
	for _, t := range m.tput {
		if strings.HasPrefix(u, t.key) {
			return t.v
		}
	}
	return 0
}

// reference returns the reference model's throughput on cluster c.
func (m *SpeedModel) reference(c *sim.Cluster) float64 {
	ref := m.ref
	if ref == "" {
		var best int64 = -1
		for i, name := range c.Models() {
			if n := c.ModelCapacity(i); n > best {
				ref, best = name, n
			}
		}
	}
	if v := m.throughput(ref); v > 0 {
		return v
	}
	return 1
}

// Speed returns the job's speed factor on its current placement (always finite and
// > 0). Jobs without GPUs run at speed 1.
func (m *SpeedModel) Speed(c *sim.Cluster, j *sim.Job) float64 {
	if len(j.GPUs) == 0 {
		return 1
	}
	ref, minT := m.slowestThroughput(c, j)
	cc := m.classes[j.Spec.Class]
	p := len(j.GPUs)
	if cc.ComputeS <= 0 || p < 2 || cc.MBPerIter == 0 {
		return minT / ref
	}
	compute := float64(cc.ComputeS)
	actual := compute*ref/minT + m.allreduce(actualLevel(c, j.GPUs), p, cc.MBPerIter)
	// The reference is the best achievable: the fastest level at or above the
	// tightest one that can hold the gang (levels need not get slower upwards).
	comm := math.Inf(1)
	for l := referenceLevel(c, j.GPUs[0], p); l <= int(sim.NumLevels); l++ {
		comm = min(comm, m.allreduce(l, p, cc.MBPerIter))
	}
	best := compute + comm
	s := best / actual
	if !(s > 0) || math.IsInf(s, 0) {
		return 1
	}
	return s
}

// allreduce is the ring all-reduce time in seconds of mb megabytes over p GPUs
// bound by level (sim.NumLevels = core).
func (m *SpeedModel) allreduce(level int, p int, mb float64) float64 {
	l := m.links[level]
	steps := 2 * float64(p-1)
	return steps/float64(p)*mb*1e6/(l.GBps*1e9) + steps*l.LatencyUS*1e-6
}

// actualLevel is the tightest level at which all gpus share one domain
// (sim.NumLevels = none: the placement crosses spines).
func actualLevel(c *sim.Cluster, gpus []sim.GPUID) int {
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		d := c.GPUDomain(gpus[0], l)
		same := true
		for _, g := range gpus[1:] {
			if c.GPUDomain(g, l) != d {
				same = false
				break
			}
		}
		if same {
			return int(l)
		}
	}
	return int(sim.NumLevels)
}

// referenceLevel is the tightest level whose domain around GPU g holds p GPUs.
func referenceLevel(c *sim.Cluster, g sim.GPUID, p int) int {
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		if int(c.Domains(l)[c.GPUDomain(g, l)].GPUs) >= p {
			return int(l)
		}
	}
	return int(sim.NumLevels)
}

// slowestThroughput returns the reference GPU throughput and the throughput of the
// slowest GPU model the job runs on (unknown models count as the reference): a
// gang proceeds at the pace of its slowest member.
func (m *SpeedModel) slowestThroughput(c *sim.Cluster, j *sim.Job) (ref, slowest float64) {
	ref = m.reference(c)
	slowest = math.Inf(1)
	for _, n := range j.Nodes {
		t := m.throughput(c.Node(n).GPUModel)
		if t <= 0 {
			t = ref
		}
		slowest = min(slowest, t)
	}
	if math.IsInf(slowest, 1) {
		slowest = ref
	}
	return ref, slowest
}
