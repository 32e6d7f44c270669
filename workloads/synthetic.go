package workloads

import (
	"bytes"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
)

// Seconds is a span of time in seconds as written in YAML (may be fractional).
type Seconds float64

// Duration converts s to a sim.Duration (rounded to the microsecond, saturating).
func (s Seconds) Duration() sim.Duration { return sim.Seconds(float64(s)) }

// Arrival processes.
const (
	ProcessPoisson = "poisson" // homogeneous Poisson arrivals
	ProcessDiurnal = "diurnal" // Poisson with a sinusoidal daily rate
	ProcessBursty  = "bursty"  // two-state Markov-modulated Poisson (on/off bursts)
)

// Defaults of the top-level and arrival fields.
const (
	DefaultJobs          = 2000
	DefaultLoad          = 0.85
	DefaultProcess       = ProcessPoisson
	DefaultPeakToTrough  = 3.0     // diurnal: peak rate / trough rate
	DefaultPeriodS       = 86400.0 // diurnal: period (24 h)
	DefaultPeakHour      = 14.0    // diurnal: hour of the period (t=0 is hour 0) with the peak rate
	DefaultBurstFactor   = 10.0    // bursty: rate inside a burst / rate outside
	DefaultMeanBurstS    = 600.0   // bursty: mean burst length
	DefaultBurstFraction = 0.1     // bursty: long-run fraction of time spent in bursts
	DefaultUserSkew      = 1.0     // Zipf exponent of user activity within a team
	DefaultMinDurationS  = 1.0     // duration.minS when a duration block is given without it
	DefaultMaxDurationS  = 7 * 86400.0
	DefaultWallFactorMin = 1.2 // walltime.factorMin of the class defaults
	DefaultWallFactorMax = 3.0 // walltime.factorMax of the class defaults
	DefaultWallRoundToS  = 900.0
	DefaultQueue         = "default"
)

// Limits that keep generation bounded (checked by Validate).
const (
	MaxJobs         = 10_000_000
	MaxLoad         = 100.0
	MaxRatio        = 1000.0 // peakToTrough and burstFactor
	MaxGPUsPerJob   = 1 << 20
	MaxDurationS    = 10 * 365 * 86400.0
	MaxSigma        = 10.0
	MaxWallFactor   = 1000.0
	MaxUsersPerTeam = 1_000_000
)

// Synthetic is the `workload.synthetic` block of a scenario. Zero fields take the
// documented defaults via SetDefaults; Validate expects SetDefaults to have run.
type Synthetic struct {
	// Jobs is the number of jobs to generate (default DefaultJobs).
	Jobs int `yaml:"jobs"`
	// Load is the target offered load: GPU-seconds demanded per second divided by
	// the cluster's GPU count (default DefaultLoad). Values > 1 overload the cluster.
	Load float64 `yaml:"load"`
	// Arrival is the arrival process (default poisson).
	Arrival Arrival `yaml:"arrival"`
	// Classes is the job mix; empty means DefaultClasses().
	Classes []ClassMix `yaml:"classes"`
	// Queues maps jobs to queues; empty means one queue named DefaultQueue.
	Queues []QueueMix `yaml:"queues"`
	// Teams maps jobs to teams and users; empty means DefaultTeams().
	Teams []TeamMix `yaml:"teams"`
	// UserSkew is the Zipf exponent of user activity inside a team: user k of a team
	// (k = 1..users) is picked with weight 1/k^userSkew (default DefaultUserSkew; a
	// negative value is invalid; use a tiny positive value for near-uniform users).
	UserSkew float64 `yaml:"userSkew"`
}

// Arrival configures the arrival process. The mean rate is never given: it follows
// from Synthetic.Load (see the package documentation).
type Arrival struct {
	// Process is poisson (default), diurnal or bursty.
	Process string `yaml:"process"`
	// PeakToTrough is the diurnal ratio of the highest to the lowest rate (>= 1).
	PeakToTrough float64 `yaml:"peakToTrough,omitempty"`
	// PeriodS is the diurnal period in seconds (default one day).
	PeriodS Seconds `yaml:"periodS,omitempty"`
	// PeakHour is the hour (0..24 scaled to the period) of the diurnal peak; t=0 is
	// hour 0. Zero means DefaultPeakHour; use 24 for a peak at t=0.
	PeakHour float64 `yaml:"peakHour,omitempty"`
	// BurstFactor is the bursty rate inside a burst divided by the rate outside (>= 1).
	BurstFactor float64 `yaml:"burstFactor,omitempty"`
	// MeanBurstS is the mean length of a burst in seconds (exponential).
	MeanBurstS Seconds `yaml:"meanBurstS,omitempty"`
	// BurstFraction is the long-run fraction of time spent in bursts (0 < f < 1).
	BurstFraction float64 `yaml:"burstFraction,omitempty"`
}

// Dist is a discrete distribution: Values drawn with probability proportional to
// Weights. Empty Weights means uniform; otherwise len(Weights) == len(Values).
type Dist[T any] struct {
	Values  []T       `yaml:"values"`
	Weights []float64 `yaml:"weights,omitempty"`
}

// MarshalYAML writes the distribution in flow style ({values: [...], weights: [...]}).
func (d Dist[T]) MarshalYAML() (any, error) {
	type plain Dist[T]
	return flow(plain(d))
}

// LogNormal is a log-normal distribution truncated to [MinS, MaxS] (by inverse-CDF
// sampling, so no point masses at the bounds).
type LogNormal struct {
	// MedianS is the median in seconds (exp(mu)); required (> 0).
	MedianS Seconds `yaml:"medianS"`
	// Sigma is the standard deviation of ln(duration); 0 gives a constant duration.
	Sigma float64 `yaml:"sigma"`
	// MinS is the lower bound in seconds (default DefaultMinDurationS).
	MinS Seconds `yaml:"minS"`
	// MaxS is the upper bound in seconds (default DefaultMaxDurationS).
	MaxS Seconds `yaml:"maxS"`
}

// Walltime models the user's time limit as a multiple of the true duration:
// walltime = roundUp(duration * U(factorMin, factorMax), roundToS). Users
// over-estimate (Slurm-like); a factor < 1 makes jobs hit their limit.
type Walltime struct {
	// FactorMin is the smallest estimate/duration factor (> 0, required when the
	// block is given).
	FactorMin float64 `yaml:"factorMin"`
	// FactorMax is the largest factor (default FactorMin).
	FactorMax float64 `yaml:"factorMax"`
	// RoundToS rounds the walltime up to a multiple of this many seconds (0 = none).
	RoundToS Seconds `yaml:"roundToS"`
}

// Elastic makes a class's jobs elastic gangs (sim.ElasticSpec,
// docs/elastic.md): sizes minReplicas, minReplicas+step, ... up to
// maxReplicas replicas of the drawn replica size. A job's preferred size (the
// size its duration is measured at, and what rigid policies start) is
// PreferredReplicas, or else its drawn replica count brought into the sizes
// (clamped, then down to a size). Throughput is linear in replicas.
type Elastic struct {
	MinReplicas int32 `yaml:"minReplicas"`
	MaxReplicas int32 `yaml:"maxReplicas"`
	// Step is the resize granularity in replicas (default 1).
	Step int32 `yaml:"step,omitempty"`
	// PreferredReplicas fixes every job's preferred size (0: the drawn count).
	PreferredReplicas int32 `yaml:"preferredReplicas,omitempty"`
}

// preferred is the preferred size of a job drawn with n replicas.
func (e *Elastic) preferred(n int32) int32 {
	if e.PreferredReplicas > 0 {
		return e.PreferredReplicas
	}
	n = min(max(n, e.MinReplicas), e.MaxReplicas)
	return n - (n-e.MinReplicas)%max(e.Step, 1)
}

// ClassMix is one class of the job mix. Zero fields take the class's defaults from
// DefaultClass (see SetDefaults); a given duration or walltime block is taken
// as a whole (with its own field defaults).
type ClassMix struct {
	// Class is one of the sim.Classes names (required).
	Class string `yaml:"class"`
	// Weight is the class's relative share of jobs (>= 0; the weights must not all be 0).
	Weight float64 `yaml:"weight"`
	// GPUs is the total GPUs per job; 0 = CPU-only. A job larger than a node is split
	// into equal replicas of at most maxGPUsPerNode GPUs.
	GPUs Dist[int32] `yaml:"gpus"`
	// GPUMilli is the share of the GPU (1..1000) for 1-GPU jobs; empty = whole GPU.
	GPUMilli Dist[sim.MilliGPU] `yaml:"gpuMilli,omitempty"`
	// Duration is the true run time.
	Duration LogNormal `yaml:"duration"`
	// Walltime is the user's estimate.
	Walltime Walltime `yaml:"walltime"`
	// Priority of the class's jobs (unset = class default; serving is high).
	Priority *int32 `yaml:"priority,omitempty"`
	// CPUMilliPerGPU and MemoryMiBPerGPU are requested per GPU of a replica.
	CPUMilliPerGPU  int64 `yaml:"cpuMilliPerGPU"`
	MemoryMiBPerGPU int64 `yaml:"memoryMiBPerGPU"`
	// CPUMilli and MemoryMiB are requested by a CPU-only (0-GPU) job.
	CPUMilli  int64 `yaml:"cpuMilli"`
	MemoryMiB int64 `yaml:"memoryMiB"`
	// AllowedModels restricts the GPU models (empty = any).
	AllowedModels []string `yaml:"allowedModels,omitempty"`
	// Elastic makes the class's jobs elastic gangs (see Elastic).
	Elastic *Elastic `yaml:"elastic,omitempty"`
}

// QueueMix is a queue jobs are submitted to. A job of class c goes to one of the
// queues that accept c, picked by weight.
type QueueMix struct {
	Name   string  `yaml:"name"`
	Weight float64 `yaml:"weight"`
	// Classes the queue accepts; empty = all.
	Classes []string `yaml:"classes,omitempty"`
}

// TeamMix is a team of users. A job of class c belongs to one of the teams that
// run c, picked by weight; its user is "<team>-u<k>", k Zipf-distributed over 1..Users.
type TeamMix struct {
	Name   string  `yaml:"name"`
	Weight float64 `yaml:"weight"`
	// Users is the team's number of users (default 1).
	Users int `yaml:"users"`
	// Classes the team runs; empty = all.
	Classes []string `yaml:"classes,omitempty"`
}

func i32(v int32) *int32 { return &v }

var defaultWalltime = Walltime{FactorMin: DefaultWallFactorMin, FactorMax: DefaultWallFactorMax, RoundToS: DefaultWallRoundToS}

// DefaultClass returns the defaults of class c (a sim.Classes name); ok is false for
// an unknown name. The defaults are sized for a DGX-like cluster (8 GPUs per node).
func DefaultClass(c string) (m ClassMix, ok bool) {
	switch sim.JobClass(c) {
	case sim.ClassTraining:
		// Long gangs: a few up to 32 GPUs (4 DGX nodes); median 30 min, heavy tail.
		return ClassMix{Class: c, Weight: 0.25,
			GPUs:           Dist[int32]{Values: []int32{1, 2, 4, 8, 16, 32}, Weights: []float64{0.2, 0.15, 0.2, 0.25, 0.12, 0.08}},
			Duration:       LogNormal{MedianS: 1800, Sigma: 1.0, MinS: 120, MaxS: 86400},
			Walltime:       defaultWalltime,
			Priority:       i32(10),
			CPUMilliPerGPU: 8000, MemoryMiBPerGPU: 65536, CPUMilli: 4000, MemoryMiB: 16384,
		}, true
	case sim.ClassExperiment:
		// Short interactive/debug runs, often on a GPU slice.
		return ClassMix{Class: c, Weight: 0.40,
			GPUs:           Dist[int32]{Values: []int32{1, 2, 4}, Weights: []float64{0.7, 0.2, 0.1}},
			GPUMilli:       Dist[sim.MilliGPU]{Values: []sim.MilliGPU{500, 1000}, Weights: []float64{0.3, 0.7}},
			Duration:       LogNormal{MedianS: 600, Sigma: 1.0, MinS: 30, MaxS: 4 * 3600},
			Walltime:       defaultWalltime,
			Priority:       i32(20),
			CPUMilliPerGPU: 4000, MemoryMiBPerGPU: 32768, CPUMilli: 2000, MemoryMiB: 8192,
		}, true
	case sim.ClassPreprocessing:
		// IO/CPU heavy; mostly CPU-only.
		return ClassMix{Class: c, Weight: 0.10,
			GPUs:           Dist[int32]{Values: []int32{0, 1}, Weights: []float64{0.8, 0.2}},
			Duration:       LogNormal{MedianS: 900, Sigma: 0.8, MinS: 60, MaxS: 6 * 3600},
			Walltime:       defaultWalltime,
			Priority:       i32(5),
			CPUMilliPerGPU: 16000, MemoryMiBPerGPU: 65536, CPUMilli: 16000, MemoryMiB: 65536,
		}, true
	case sim.ClassBatchInference:
		// Throughput jobs, tolerant of delay.
		return ClassMix{Class: c, Weight: 0.15,
			GPUs:           Dist[int32]{Values: []int32{1, 2, 4, 8}, Weights: []float64{0.5, 0.25, 0.15, 0.1}},
			Duration:       LogNormal{MedianS: 1200, Sigma: 0.7, MinS: 60, MaxS: 12 * 3600},
			Walltime:       defaultWalltime,
			Priority:       i32(5),
			CPUMilliPerGPU: 4000, MemoryMiBPerGPU: 32768, CPUMilli: 2000, MemoryMiB: 8192,
		}, true
	case sim.ClassServing:
		// Long-lived model servers with a latency SLO: high priority so policies do
		// not casually preempt them; small ones share a GPU.
		return ClassMix{Class: c, Weight: 0.10,
			GPUs:           Dist[int32]{Values: []int32{1, 2, 4, 8}, Weights: []float64{0.55, 0.25, 0.15, 0.05}},
			GPUMilli:       Dist[sim.MilliGPU]{Values: []sim.MilliGPU{250, 500, 1000}, Weights: []float64{0.25, 0.25, 0.5}},
			Duration:       LogNormal{MedianS: 4 * 3600, Sigma: 0.5, MinS: 1800, MaxS: 86400},
			Walltime:       defaultWalltime,
			Priority:       i32(100),
			CPUMilliPerGPU: 4000, MemoryMiBPerGPU: 32768, CPUMilli: 2000, MemoryMiB: 8192,
		}, true
	case sim.ClassUnknown:
		// Generic jobs of unknown class (e.g. fitted from a trace without classes).
		return ClassMix{Class: c, Weight: 0.10,
			GPUs:           Dist[int32]{Values: []int32{1, 2, 4, 8}, Weights: []float64{0.4, 0.3, 0.2, 0.1}},
			Duration:       LogNormal{MedianS: 1800, Sigma: 1.0, MinS: 60, MaxS: 86400},
			Walltime:       defaultWalltime,
			Priority:       i32(10),
			CPUMilliPerGPU: 4000, MemoryMiBPerGPU: 32768, CPUMilli: 2000, MemoryMiB: 8192,
		}, true
	}
	return ClassMix{}, false
}

// DefaultClasses returns the default mix: training, experiment, preprocessing,
// batch-inference and serving with DefaultClass's weights (0.25/0.40/0.10/0.15/0.10).
func DefaultClasses() []ClassMix {
	var out []ClassMix
	for _, c := range sim.Classes {
		if c == sim.ClassUnknown {
			continue
		}
		m, _ := DefaultClass(string(c))
		out = append(out, m)
	}
	return out
}

// DefaultTeams returns the default teams: vision and nlp (12 users each, all
// classes), speech (6 users) and platform (4 users, which alone runs serving).
func DefaultTeams() []TeamMix {
	research := []string{string(sim.ClassTraining), string(sim.ClassExperiment), string(sim.ClassPreprocessing), string(sim.ClassBatchInference)}
	return []TeamMix{
		{Name: "vision", Weight: 0.35, Users: 12, Classes: research},
		{Name: "nlp", Weight: 0.35, Users: 12, Classes: slices.Clone(research)},
		{Name: "speech", Weight: 0.15, Users: 6, Classes: slices.Clone(research)},
		{Name: "platform", Weight: 0.15, Users: 4},
	}
}

// DefaultSynthetic returns the embedded demo workload, fully filled in: 2000 jobs at
// load 0.85 with Poisson arrivals and the default class mix, queue and teams. On a
// 16-node DGX cluster (128 GPUs) its arrivals span about two days of simulated time.
func DefaultSynthetic() Synthetic {
	var s Synthetic
	s.SetDefaults()
	return s
}

// SetDefaults fills zero fields with the documented defaults. It is idempotent and
// leaves invalid values alone for Validate to report.
func (s *Synthetic) SetDefaults() {
	if s.Jobs == 0 {
		s.Jobs = DefaultJobs
	}
	if s.Load == 0 {
		s.Load = DefaultLoad
	}
	s.Arrival.setDefaults()
	if len(s.Classes) == 0 {
		s.Classes = DefaultClasses()
	}
	allZero := true
	for i := range s.Classes {
		s.Classes[i].setDefaults()
		allZero = allZero && s.Classes[i].Weight == 0
	}
	if allZero { // no weights given: the classes' default weights
		for i := range s.Classes {
			if d, ok := DefaultClass(s.Classes[i].Class); ok {
				s.Classes[i].Weight = d.Weight
			}
		}
	}
	if len(s.Queues) == 0 {
		s.Queues = []QueueMix{{Name: DefaultQueue, Weight: 1}}
	}
	if !slices.ContainsFunc(s.Queues, func(q QueueMix) bool { return q.Weight != 0 }) {
		for i := range s.Queues { // no weights given: equally likely
			s.Queues[i].Weight = 1
		}
	}
	if len(s.Teams) == 0 {
		s.Teams = DefaultTeams()
	}
	if !slices.ContainsFunc(s.Teams, func(t TeamMix) bool { return t.Weight != 0 }) {
		for i := range s.Teams {
			s.Teams[i].Weight = 1
		}
	}
	for i := range s.Teams {
		if s.Teams[i].Users == 0 {
			s.Teams[i].Users = 1
		}
	}
	if s.UserSkew == 0 {
		s.UserSkew = DefaultUserSkew
	}
}

func (a *Arrival) setDefaults() {
	if a.Process == "" {
		a.Process = DefaultProcess
	}
	switch a.Process {
	case ProcessDiurnal:
		if a.PeakToTrough == 0 {
			a.PeakToTrough = DefaultPeakToTrough
		}
		if a.PeriodS == 0 {
			a.PeriodS = DefaultPeriodS
		}
		if a.PeakHour == 0 {
			a.PeakHour = DefaultPeakHour
		}
	case ProcessBursty:
		if a.BurstFactor == 0 {
			a.BurstFactor = DefaultBurstFactor
		}
		if a.MeanBurstS == 0 {
			a.MeanBurstS = DefaultMeanBurstS
		}
		if a.BurstFraction == 0 {
			a.BurstFraction = DefaultBurstFraction
		}
	}
}

func (m *ClassMix) setDefaults() {
	d, ok := DefaultClass(m.Class)
	if !ok {
		return
	}
	if len(m.GPUs.Values) == 0 && len(m.GPUs.Weights) == 0 {
		m.GPUs = d.GPUs
	}
	if len(m.GPUMilli.Values) == 0 && len(m.GPUMilli.Weights) == 0 {
		m.GPUMilli = d.GPUMilli
	}
	if m.Duration == (LogNormal{}) {
		m.Duration = d.Duration
	} else {
		if m.Duration.MinS == 0 {
			m.Duration.MinS = DefaultMinDurationS
		}
		if m.Duration.MaxS == 0 {
			m.Duration.MaxS = max(DefaultMaxDurationS, m.Duration.MinS)
		}
	}
	if m.Walltime == (Walltime{}) {
		m.Walltime = d.Walltime
	} else if m.Walltime.FactorMax == 0 {
		m.Walltime.FactorMax = m.Walltime.FactorMin
	}
	if m.Priority == nil {
		m.Priority = d.Priority
	}
	if m.CPUMilliPerGPU == 0 {
		m.CPUMilliPerGPU = d.CPUMilliPerGPU
	}
	if m.MemoryMiBPerGPU == 0 {
		m.MemoryMiBPerGPU = d.MemoryMiBPerGPU
	}
	if m.CPUMilli == 0 {
		m.CPUMilli = d.CPUMilli
	}
	if m.MemoryMiB == 0 {
		m.MemoryMiB = d.MemoryMiB
	}
}

// MarshalYAMLBlock renders s as a YAML block (2-space indents, distributions in
// flow style), suitable for a scenario's workload.synthetic.
func (s *Synthetic) MarshalYAMLBlock() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("workload: encode synthetic block: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("workload: encode synthetic block: %w", err)
	}
	return b.Bytes(), nil
}

// flow encodes v as a flow-style YAML node.
func flow(v any) (any, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	n.Style = yaml.FlowStyle
	return &n, nil
}

// MarshalYAML writes the block in flow style ({medianS: ..., sigma: ...}).
func (d LogNormal) MarshalYAML() (any, error) {
	type plain LogNormal
	return flow(plain(d))
}

// MarshalYAML writes the block in flow style ({factorMin: ..., ...}).
func (w Walltime) MarshalYAML() (any, error) {
	type plain Walltime
	return flow(plain(w))
}
