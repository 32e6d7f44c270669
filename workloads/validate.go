package workloads

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// Validate reports every invalid field, with paths relative to the Synthetic block
// (e.g. "classes[1].duration.medianS"). It expects SetDefaults to have run: zero
// values that have defaults are reported as missing otherwise.
func (s *Synthetic) Validate() sim.FieldErrors {
	var fe sim.FieldErrors
	if s.Jobs < 1 || s.Jobs > MaxJobs {
		fe.Add("jobs", "must be in 1..%d, got %d", MaxJobs, s.Jobs)
	}
	if !finite(s.Load) || s.Load <= 0 || s.Load > MaxLoad {
		fe.Add("load", "must be > 0 and <= %g, got %g", MaxLoad, s.Load)
	}
	fe = append(fe, s.Arrival.validate().Prefix("arrival")...)
	if len(s.Classes) == 0 {
		fe.Add("classes", "must list at least one class")
	}
	var total float64
	for i := range s.Classes {
		fe = append(fe, s.Classes[i].validate().Prefix(fmt.Sprintf("classes[%d]", i))...)
		if w := s.Classes[i].Weight; finite(w) && w > 0 {
			total += w
		}
	}
	if len(s.Classes) > 0 && total <= 0 {
		fe.Add("classes", "the class weights must not all be 0")
	}
	if !finite(s.UserSkew) || s.UserSkew < 0 || s.UserSkew > 10 {
		fe.Add("userSkew", "must be in 0..10, got %g", s.UserSkew)
	}
	for i, q := range s.Queues {
		p := fmt.Sprintf("queues[%d]", i)
		if strings.TrimSpace(q.Name) == "" {
			fe.Add(p+".name", "must not be empty")
		}
		checkWeight(&fe, p+".weight", q.Weight)
		checkClassList(&fe, p+".classes", q.Classes)
		for j := range i {
			if s.Queues[j].Name == q.Name && q.Name != "" {
				fe.Add(p+".name", "duplicate queue %q (also queues[%d])", q.Name, j)
				break
			}
		}
	}
	for i, t := range s.Teams {
		p := fmt.Sprintf("teams[%d]", i)
		if strings.TrimSpace(t.Name) == "" {
			fe.Add(p+".name", "must not be empty")
		}
		checkWeight(&fe, p+".weight", t.Weight)
		if t.Users < 1 || t.Users > MaxUsersPerTeam {
			fe.Add(p+".users", "must be in 1..%d, got %d", MaxUsersPerTeam, t.Users)
		}
		checkClassList(&fe, p+".classes", t.Classes)
		for j := range i {
			if s.Teams[j].Name == t.Name && t.Name != "" {
				fe.Add(p+".name", "duplicate team %q (also teams[%d])", t.Name, j)
				break
			}
		}
	}
	// Every class that can occur needs a queue and a team that accept it.
	for i, c := range s.Classes {
		if !(finite(c.Weight) && c.Weight > 0) {
			continue
		}
		if len(s.Queues) == 0 {
			fe.Add("queues", "must list at least one queue")
			break
		}
		if !anyAccepts(len(s.Queues), func(k int) (float64, []string) { return s.Queues[k].Weight, s.Queues[k].Classes }, c.Class) {
			fe.Add(fmt.Sprintf("classes[%d].class", i), "no queue with weight > 0 accepts class %q", c.Class)
		}
	}
	for i, c := range s.Classes {
		if !(finite(c.Weight) && c.Weight > 0) {
			continue
		}
		if len(s.Teams) == 0 {
			fe.Add("teams", "must list at least one team")
			break
		}
		if !anyAccepts(len(s.Teams), func(k int) (float64, []string) { return s.Teams[k].Weight, s.Teams[k].Classes }, c.Class) {
			fe.Add(fmt.Sprintf("classes[%d].class", i), "no team with weight > 0 runs class %q", c.Class)
		}
	}
	return fe
}

func anyAccepts(n int, get func(int) (float64, []string), class string) bool {
	for k := range n {
		w, cl := get(k)
		if finite(w) && w > 0 && accepts(cl, class) {
			return true
		}
	}
	return false
}

// accepts reports whether a class list (empty = all) contains class.
func accepts(list []string, class string) bool {
	if len(list) == 0 {
		return true
	}
	for _, c := range list {
		if c == class {
			return true
		}
	}
	return false
}

func (a *Arrival) validate() sim.FieldErrors {
	var fe sim.FieldErrors
	switch a.Process {
	case ProcessPoisson:
	case ProcessDiurnal:
		if !finite(a.PeakToTrough) || a.PeakToTrough < 1 || a.PeakToTrough > MaxRatio {
			fe.Add("peakToTrough", "must be in 1..%g, got %g", MaxRatio, a.PeakToTrough)
		}
		if !finite(float64(a.PeriodS)) || a.PeriodS < 1 || a.PeriodS > MaxDurationS {
			fe.Add("periodS", "must be in 1..%g seconds, got %g", MaxDurationS, float64(a.PeriodS))
		}
		if !finite(a.PeakHour) || a.PeakHour < 0 || a.PeakHour > 24 {
			fe.Add("peakHour", "must be in 0..24, got %g", a.PeakHour)
		}
	case ProcessBursty:
		if !finite(a.BurstFactor) || a.BurstFactor < 1 || a.BurstFactor > MaxRatio {
			fe.Add("burstFactor", "must be in 1..%g, got %g", MaxRatio, a.BurstFactor)
		}
		if !finite(float64(a.MeanBurstS)) || a.MeanBurstS < 1 || a.MeanBurstS > MaxDurationS {
			fe.Add("meanBurstS", "must be in 1..%g seconds, got %g", MaxDurationS, float64(a.MeanBurstS))
		}
		if !finite(a.BurstFraction) || a.BurstFraction <= 0 || a.BurstFraction >= 1 {
			fe.Add("burstFraction", "must be strictly between 0 and 1, got %g", a.BurstFraction)
		}
	default:
		fe.Add("process", "unknown arrival process %q (want poisson, diurnal or bursty)", a.Process)
	}
	return fe
}

func (m *ClassMix) validate() sim.FieldErrors {
	var fe sim.FieldErrors
	if _, ok := DefaultClass(m.Class); !ok {
		fe.Add("class", "unknown class %q (want one of %s)", m.Class, classNames())
	}
	checkWeight(&fe, "weight", m.Weight)
	validateDist(&fe, "gpus", m.GPUs, func(v int32) string {
		if v < 0 || v > MaxGPUsPerJob {
			return fmt.Sprintf("must be in 0..%d, got %d", MaxGPUsPerJob, v)
		}
		return ""
	}, true)
	validateDist(&fe, "gpuMilli", m.GPUMilli, func(v sim.MilliGPU) string {
		if v < 1 || v > sim.WholeGPU {
			return fmt.Sprintf("must be in 1..1000, got %d", v)
		}
		return ""
	}, false)
	d := m.Duration
	if !finite(float64(d.MedianS)) || d.MedianS <= 0 || d.MedianS > MaxDurationS {
		fe.Add("duration.medianS", "must be > 0 and <= %g seconds, got %g", MaxDurationS, float64(d.MedianS))
	}
	if !finite(d.Sigma) || d.Sigma < 0 || d.Sigma > MaxSigma {
		fe.Add("duration.sigma", "must be in 0..%g, got %g", MaxSigma, d.Sigma)
	}
	if !finite(float64(d.MinS)) || d.MinS < 0 || d.MinS > MaxDurationS {
		fe.Add("duration.minS", "must be in 0..%g seconds, got %g", MaxDurationS, float64(d.MinS))
	}
	if !finite(float64(d.MaxS)) || d.MaxS <= 0 || d.MaxS > MaxDurationS {
		fe.Add("duration.maxS", "must be > 0 and <= %g seconds, got %g", MaxDurationS, float64(d.MaxS))
	} else if d.MaxS < d.MinS {
		fe.Add("duration.maxS", "must be >= minS (%g), got %g", float64(d.MinS), float64(d.MaxS))
	}
	w := m.Walltime
	if !finite(w.FactorMin) || w.FactorMin <= 0 || w.FactorMin > MaxWallFactor {
		fe.Add("walltime.factorMin", "must be > 0 and <= %g, got %g", MaxWallFactor, w.FactorMin)
	}
	if !finite(w.FactorMax) || w.FactorMax <= 0 || w.FactorMax > MaxWallFactor {
		fe.Add("walltime.factorMax", "must be > 0 and <= %g, got %g", MaxWallFactor, w.FactorMax)
	} else if w.FactorMax < w.FactorMin {
		fe.Add("walltime.factorMax", "must be >= factorMin (%g), got %g", w.FactorMin, w.FactorMax)
	}
	if !finite(float64(w.RoundToS)) || w.RoundToS < 0 || w.RoundToS > MaxDurationS {
		fe.Add("walltime.roundToS", "must be in 0..%g seconds, got %g", MaxDurationS, float64(w.RoundToS))
	}
	if m.CPUMilliPerGPU < 0 {
		fe.Add("cpuMilliPerGPU", "must be >= 0, got %d", m.CPUMilliPerGPU)
	}
	if m.MemoryMiBPerGPU < 0 {
		fe.Add("memoryMiBPerGPU", "must be >= 0, got %d", m.MemoryMiBPerGPU)
	}
	if m.CPUMilli < 0 {
		fe.Add("cpuMilli", "must be >= 0, got %d", m.CPUMilli)
	}
	if m.MemoryMiB < 0 {
		fe.Add("memoryMiB", "must be >= 0, got %d", m.MemoryMiB)
	}
	// Per-replica requests must not overflow int64 for the largest replica.
	const maxPerGPU = math.MaxInt64 / MaxGPUsPerJob
	if m.CPUMilliPerGPU > maxPerGPU {
		fe.Add("cpuMilliPerGPU", "must be <= %d, got %d", int64(maxPerGPU), m.CPUMilliPerGPU)
	}
	if m.MemoryMiBPerGPU > maxPerGPU {
		fe.Add("memoryMiBPerGPU", "must be <= %d, got %d", int64(maxPerGPU), m.MemoryMiBPerGPU)
	}
	for i, s := range m.AllowedModels {
		if strings.TrimSpace(s) == "" {
			fe.Add(fmt.Sprintf("allowedModels[%d]", i), "must not be empty")
		}
	}
	if e := m.Elastic; e != nil {
		if e.MinReplicas < 1 {
			fe.Add("elastic.minReplicas", "must be >= 1, got %d", e.MinReplicas)
		}
		if e.MaxReplicas < e.MinReplicas {
			fe.Add("elastic.maxReplicas", "must be >= minReplicas (%d), got %d", e.MinReplicas, e.MaxReplicas)
		}
		if e.Step < 0 {
			fe.Add("elastic.step", "must be >= 1, got %d", e.Step)
		}
		if p := e.PreferredReplicas; p != 0 && e.MinReplicas >= 1 && e.Step >= 0 && (p < e.MinReplicas || p > e.MaxReplicas || (p-e.MinReplicas)%max(e.Step, 1) != 0) {
			fe.Add("elastic.preferredReplicas", "must be one of minReplicas + k*step <= maxReplicas, got %d", p)
		}
	}
	return fe
}

// validateDist checks a discrete distribution; required means Values must not be empty.
func validateDist[T any](fe *sim.FieldErrors, path string, d Dist[T], check func(T) string, required bool) {
	if len(d.Values) == 0 {
		if required {
			fe.Add(path+".values", "must not be empty")
		}
		if len(d.Weights) > 0 {
			fe.Add(path+".weights", "given without values")
		}
		return
	}
	for i, v := range d.Values {
		if msg := check(v); msg != "" {
			fe.Add(fmt.Sprintf("%s.values[%d]", path, i), "%s", msg)
		}
	}
	if len(d.Weights) == 0 {
		return
	}
	if len(d.Weights) != len(d.Values) {
		fe.Add(path+".weights", "has %d entries, values has %d", len(d.Weights), len(d.Values))
		return
	}
	var total float64
	for i, w := range d.Weights {
		if !finite(w) || w < 0 {
			fe.Add(fmt.Sprintf("%s.weights[%d]", path, i), "must be a finite number >= 0, got %g", w)
			continue
		}
		total += w
	}
	if total <= 0 || math.IsInf(total, 0) {
		fe.Add(path+".weights", "must sum to a finite number > 0")
	}
}

func checkWeight(fe *sim.FieldErrors, path string, w float64) {
	if !finite(w) || w < 0 || w > 1e12 {
		fe.Add(path, "must be a finite number in 0..1e12, got %g", w)
	}
}

func checkClassList(fe *sim.FieldErrors, path string, list []string) {
	for i, c := range list {
		if _, ok := DefaultClass(c); !ok {
			fe.Add(fmt.Sprintf("%s[%d]", path, i), "unknown class %q (want one of %s)", c, classNames())
		}
	}
}

func classNames() string {
	names := make([]string, len(sim.Classes))
	for i, c := range sim.Classes {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
