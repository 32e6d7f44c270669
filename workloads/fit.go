package workloads

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gpusim/gpusim/sim"
)

// Fit thresholds.
const (
	// MinFitJobs is the fewest jobs Fit accepts (a rate needs a span).
	MinFitJobs = 2
	// fitMaxValues caps the distinct GPU sizes / shares kept per class; rarer values
	// are merged into their nearest kept neighbour.
	fitMaxValues = 32
)

// roundingGrains are the walltime granularities Fit recognizes (seconds, coarsest
// first).
var roundingGrains = []float64{3600, 1800, 900, 600, 300, 60, 1}

// ErrTooFewJobs is returned by Fit for a trace with fewer than MinFitJobs jobs.
var ErrTooFewJobs = errors.New("workload: too few jobs to fit")

// TraceStats are the arrival statistics of a trace that a Synthetic does not hold
// directly (its rate follows from Load and the cluster size).
type TraceStats struct {
	Jobs            int
	SpanS           float64 // first to last submit, seconds
	RatePerHour     float64 // Poisson MLE: (jobs-1) / span
	GPUHoursPerHour float64 // GPU demand rate: total GPU-hours / span in hours
	GapCV           float64 // coefficient of variation of inter-arrival gaps (1 for Poisson)
	DiurnalAmp      float64 // relative amplitude A of the first daily harmonic
	PeakHour        float64 // hour of day of that harmonic's peak (t=0 is hour 0)
	// DiurnalScore is the squared signal-to-noise ratio of the daily harmonic across
	// whole days (its mean over days against the day-to-day spread; 0 with fewer
	// than MinDiurnalDays days). Values above DiurnalScoreMin are significant.
	DiurnalScore float64
	// Burst is the fitted two-state MMPP (zero unless the gaps are bursty).
	Burst Arrival
}

// Load is the trace's offered load on a cluster of clusterGPUs GPUs (0 if unknown).
func (st TraceStats) Load(clusterGPUs int64) float64 {
	if clusterGPUs <= 0 {
		return 0
	}
	return st.GPUHoursPerHour / float64(clusterGPUs)
}

// Stats computes the trace's arrival statistics; it needs at least MinFitJobs jobs
// with distinct submit times.
func Stats(jobs []sim.JobSpec) (TraceStats, error) {
	if len(jobs) < MinFitJobs {
		return TraceStats{}, fmt.Errorf("%w: %d jobs, need %d", ErrTooFewJobs, len(jobs), MinFitJobs)
	}
	ts := make([]float64, len(jobs))
	var demand float64
	for i := range jobs {
		ts[i] = jobs[i].Submit.Seconds()
		demand += jobDemand(&jobs[i])
	}
	sort.Float64s(ts)
	span := ts[len(ts)-1] - ts[0]
	if !(span > 0) {
		return TraceStats{}, fmt.Errorf("workload: all %d jobs are submitted at the same time; cannot fit an arrival rate", len(jobs))
	}
	st := TraceStats{Jobs: len(jobs), SpanS: span}
	st.RatePerHour = float64(len(jobs)-1) / span * 3600
	st.GPUHoursPerHour = demand / span
	gaps := make([]float64, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		gaps[i-1] = ts[i] - ts[i-1]
	}
	if m, sd := meanStd(gaps); m > 0 {
		st.GapCV = sd / m
	}
	st.DiurnalAmp, st.PeakHour, st.DiurnalScore = diurnalHarmonic(ts, DefaultPeriodS)
	if st.GapCV >= MinBurstCV {
		st.Burst = fitBursty(ts, gaps)
	}
	return st, nil
}

// Fit estimates a Synthetic from a trace: Jobs = the trace's job count; the class
// mix (job shares); per class the GPU-count distribution (replicas x GPUs), the
// fractional-share distribution of 1-GPU jobs, a log-normal duration by maximum
// likelihood on ln(duration) (bounds = the observed extremes), the walltime factor
// range and rounding, the most common priority, median CPU/memory per GPU and the
// GPU models when all jobs agree; queues and teams with their job shares, users per
// team and the Zipf skew of user activity; and the arrival process chosen by
// TraceStats.Process.
//
// Load is left at DefaultLoad because it depends on the cluster: set it from
// Stats(jobs).Load(clusterGPUs) to reproduce the trace's pressure. Fields a trace
// does not inform (e.g. a class without walltimes) get the class defaults. Jobs
// with a duration <= 0 are ignored for the duration fit. The result passes Validate.
func Fit(jobs []sim.JobSpec) (*Synthetic, error) {
	for i := range jobs {
		if err := jobs[i].Validate(); err != nil {
			return nil, fmt.Errorf("workload: job %d (%q): %w", i, jobs[i].ID, err)
		}
	}
	st, err := Stats(jobs)
	if err != nil {
		return nil, err
	}
	s := &Synthetic{Jobs: min(len(jobs), MaxJobs), Load: DefaultLoad}
	s.Arrival = st.Process()
	byClass := map[string][]*sim.JobSpec{}
	for i := range jobs {
		c := string(jobs[i].Class)
		if _, ok := DefaultClass(c); !ok {
			c = string(sim.ClassUnknown)
		}
		byClass[c] = append(byClass[c], &jobs[i])
	}
	for _, c := range sim.Classes {
		js := byClass[string(c)]
		if len(js) == 0 {
			continue
		}
		m := fitClass(string(c), js)
		m.Weight = round4(float64(len(js)) / float64(len(jobs)))
		if m.Weight == 0 {
			m.Weight = 1e-4
		}
		s.Classes = append(s.Classes, m)
	}

	s.Queues = fitQueues(jobs)
	s.Teams, s.UserSkew = fitTeams(jobs)
	s.SetDefaults()
	if fe := s.Validate(); len(fe) > 0 {
		return nil, fmt.Errorf("workload: fitted workload is invalid (please report): %w", fe)
	}
	return s, nil
}

func fitClass(class string, js []*sim.JobSpec) ClassMix {
	def, _ := DefaultClass(class)
	m := ClassMix{Class: class}

	// GPU counts.
	gpuCount := map[int32]int{}
	shareCount := map[sim.MilliGPU]int{}
	for _, j := range js {
		g := j.TotalGPUs()
		gpuCount[g]++
		if g == 1 {
			shareCount[j.GPUMilli]++
		}
	}
	m.GPUs = histDist(gpuCount)
	if len(shareCount) > 1 || (len(shareCount) == 1 && shareCount[sim.WholeGPU] == 0) {
		m.GPUMilli = histDist(shareCount)
	} else {
		m.GPUMilli = Dist[sim.MilliGPU]{Values: []sim.MilliGPU{sim.WholeGPU}}
	}

	// Durations: MLE of a log-normal is the mean and (1/n) sd of ln(duration).
	var logs []float64
	lo, hi := math.Inf(1), 0.0
	for _, j := range js {
		d := j.Duration.Seconds()
		if d <= 0 {
			continue
		}
		logs = append(logs, math.Log(d))
		lo, hi = min(lo, d), max(hi, d)
	}
	if len(logs) == 0 {
		m.Duration = def.Duration
	} else {
		mu, sd := meanStd(logs)
		sd *= math.Sqrt(float64(len(logs)-1) / float64(len(logs))) // MLE (1/n) form
		m.Duration = LogNormal{MedianS: Seconds(min(round4(math.Exp(mu)), MaxDurationS)), Sigma: min(round4(sd), MaxSigma),
			MinS: Seconds(min(lo, MaxDurationS)), MaxS: Seconds(min(hi, MaxDurationS))}
		m.Duration.MinS = min(m.Duration.MinS, m.Duration.MedianS)
		m.Duration.MaxS = max(m.Duration.MaxS, m.Duration.MedianS)
	}

	m.Walltime = fitWalltime(js, def.Walltime)

	// Priority: the most common value (ties to the smallest).
	pri := map[int32]int{}
	for _, j := range js {
		pri[j.Priority]++
	}
	p := mode(pri)
	m.Priority = &p

	// CPU and memory: medians per GPU (whole-GPU equivalent) and for CPU-only jobs.
	var cpuG, memG, cpu0, mem0 []float64
	for _, j := range js {
		if j.GPUsPerReplica == 0 {
			cpu0 = append(cpu0, float64(j.CPUMilli))
			mem0 = append(mem0, float64(j.MemoryMiB))
			continue
		}
		per := float64(j.GPUsPerReplica) * float64(j.GPUMilli) / 1000
		if !(per > 0) {
			continue
		}
		cpuG = append(cpuG, float64(j.CPUMilli)/per)
		memG = append(memG, float64(j.MemoryMiB)/per)
	}
	m.CPUMilliPerGPU = int64(math.Round(median(cpuG)))
	m.MemoryMiBPerGPU = int64(math.Round(median(memG)))
	m.CPUMilli = int64(math.Round(median(cpu0)))
	m.MemoryMiB = int64(math.Round(median(mem0)))

	// GPU models: kept only when every job of the class names the same set.
	first := js[0].GPUModels
	same := len(first) > 0
	for _, j := range js[1:] {
		if !same {
			break
		}
		same = slices.Equal(j.GPUModels, first)
	}
	if same {
		m.AllowedModels = slices.Clone(first)
	}
	return m
}

// fitWalltime estimates the walltime model from jobs with both a duration and a
// walltime. The rounding grain is the coarsest of roundingGrains that at least 90%
// of walltimes are multiples of. Each job's factor is estimated as
// (walltime - grain/2) / duration (undoing half a grain of rounding on average),
// using jobs at least two grains long when there are enough; the range is the 1st
// to 99th percentile widened by the uniform's expected end gaps.
func fitWalltime(js []*sim.JobSpec, def Walltime) Walltime {
	var ws, ds []float64
	for _, j := range js {
		if j.Walltime > 0 && j.Duration > 0 {
			ws = append(ws, j.Walltime.Seconds())
			ds = append(ds, j.Duration.Seconds())
		}
	}
	if len(ws) == 0 {
		return def
	}
	grain := 0.0
	for _, g := range roundingGrains {
		n := 0
		for _, w := range ws {
			if r := math.Mod(w, g); r < 1e-6 || g-r < 1e-6 {
				n++
			}
		}
		if float64(n) >= 0.9*float64(len(ws)) {
			grain = g
			break
		}
	}
	var fs, all []float64
	for i := range ws {
		f := (ws[i] - grain/2) / ds[i]
		if grain == 0 {
			f = ws[i] / ds[i]
		}
		all = append(all, f)
		if ds[i] >= 2*grain {
			fs = append(fs, f)
		}
	}
	if len(fs) < 20 {
		fs = all
	}
	sort.Float64s(fs)
	lo, hi := quantile(fs, 0.01), quantile(fs, 0.99)
	pad := (hi - lo) * 0.01 / 0.98
	lo, hi = max(lo-pad, 0.01), hi+pad
	hi = max(hi, lo)
	return Walltime{FactorMin: round4(min(lo, MaxWallFactor)), FactorMax: round4(min(hi, MaxWallFactor)), RoundToS: Seconds(grain)}
}

// fitQueues returns the queues by job share; a queue lists the classes seen in it
// unless it saw every class of the trace.
func fitQueues(jobs []sim.JobSpec) []QueueMix {
	names, counts, classes, all := groupBy(jobs, func(j *sim.JobSpec) string { return j.Queue }, DefaultQueue)
	out := make([]QueueMix, len(names))
	for i, n := range names {
		out[i] = QueueMix{Name: n, Weight: share(counts[n], len(jobs))}
		if len(classes[n]) < all {
			out[i].Classes = classes[n]
		}
	}
	return out
}

// fitTeams returns the teams by job share with their user counts, and the Zipf
// skew of user activity (least-squares slope of log(jobs) on log(rank), averaged
// over teams with at least 3 users, weighted by jobs).
func fitTeams(jobs []sim.JobSpec) ([]TeamMix, float64) {
	team := func(j *sim.JobSpec) string { return j.Team }
	names, counts, classes, all := groupBy(jobs, team, "default")
	users := map[string]map[string]int{}
	for i := range jobs {
		t := cmp.Or(jobs[i].Team, "default")
		if users[t] == nil {
			users[t] = map[string]int{}
		}
		users[t][cmp.Or(jobs[i].User, "unknown")]++
	}
	out := make([]TeamMix, len(names))
	var skewSum, skewW float64
	for i, n := range names {
		out[i] = TeamMix{Name: n, Weight: share(counts[n], len(jobs)), Users: len(users[n])}
		if len(classes[n]) < all {
			out[i].Classes = classes[n]
		}
		if len(users[n]) >= 3 {
			var c []float64
			for _, v := range users[n] {
				c = append(c, float64(v))
			}
			sort.Sort(sort.Reverse(sort.Float64Slice(c)))
			skewSum += zipfSlope(c) * float64(counts[n])
			skewW += float64(counts[n])
		}
	}
	skew := DefaultUserSkew
	if skewW > 0 {
		skew = round4(min(max(skewSum/skewW, 0.01), 10))
	}
	return out, skew
}

// zipfSlope is minus the least-squares slope of ln(count) on ln(rank).
func zipfSlope(counts []float64) float64 {
	var sx, sy, sxx, sxy float64
	n := float64(len(counts))
	for k, c := range counts {
		x, y := math.Log(float64(k+1)), math.Log(c)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return DefaultUserSkew
	}
	return -(n*sxy - sx*sy) / den
}

// groupBy groups jobs by key (empty keys become def) and returns the sorted names,
// job counts, the classes seen per name (in sim.Classes order), and the number of
// distinct classes in the whole trace.
func groupBy(jobs []sim.JobSpec, key func(*sim.JobSpec) string, def string) ([]string, map[string]int, map[string][]string, int) {
	counts := map[string]int{}
	seen := map[string]map[string]bool{}
	allSeen := map[string]bool{}
	for i := range jobs {
		k := cmp.Or(key(&jobs[i]), def)
		c := string(jobs[i].Class)
		if _, ok := DefaultClass(c); !ok {
			c = string(sim.ClassUnknown)
		}
		counts[k]++
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		seen[k][c] = true
		allSeen[c] = true
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	classes := map[string][]string{}
	for _, k := range names {
		for _, c := range sim.Classes {
			if seen[k][string(c)] {
				classes[k] = append(classes[k], string(c))
			}
		}
	}
	return names, counts, classes, len(allSeen)
}

func share(n, total int) float64 { return max(round4(float64(n)/float64(total)), 1e-4) }

// histDist turns value counts into a Dist sorted by value. With more than
// fitMaxValues distinct values, the rarest are merged into the nearest kept value.
func histDist[T cmp.Ordered](counts map[T]int) Dist[T] {
	vals := make([]T, 0, len(counts))
	for v := range counts {
		vals = append(vals, v)
	}
	if len(vals) > fitMaxValues {
		slices.SortFunc(vals, func(a, b T) int {
			return cmp.Or(counts[b]-counts[a], cmp.Compare(a, b))
		})
		kept := slices.Clone(vals[:fitMaxValues])
		slices.Sort(kept)
		merged := map[T]int{}
		for _, v := range kept {
			merged[v] = counts[v]
		}
		for _, v := range vals[fitMaxValues:] {
			i, _ := slices.BinarySearch(kept, v)
			// nearest of kept[i-1], kept[i] by position (values are ordered)
			switch {
			case i == len(kept):
				i--
			case i > 0 && nearerLower(kept[i-1], v, kept[i]):
				i--
			}
			merged[kept[i]] += counts[v]
		}
		counts, vals = merged, kept
	}
	slices.Sort(vals)
	var total int
	for _, v := range vals {
		total += counts[v]
	}
	d := Dist[T]{Values: vals, Weights: make([]float64, len(vals))}
	for i, v := range vals {
		d.Weights[i] = round4(float64(counts[v]) / float64(total))
		if d.Weights[i] == 0 {
			d.Weights[i] = 1e-4
		}
	}
	return d
}

// nearerLower reports whether v is at least as close to lo as to hi (numeric types).
func nearerLower[T cmp.Ordered](lo, v, hi T) bool {
	switch x := any(v).(type) {
	case int32:
		return x-any(lo).(int32) <= any(hi).(int32)-x
	case sim.MilliGPU:
		return x-any(lo).(sim.MilliGPU) <= any(hi).(sim.MilliGPU)-x
	}
	return true
}

func mode(m map[int32]int) int32 {
	var best int32
	bestN := -1
	for v, n := range m {
		if n > bestN || (n == bestN && v < best) {
			best, bestN = v, n
		}
	}
	return best
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	sort.Float64s(s)
	return quantile(s, 0.5)
}

// quantile of sorted x by linear interpolation.
func quantile(x []float64, q float64) float64 {
	if len(x) == 0 {
		return 0
	}
	p := q * float64(len(x)-1)
	i := int(p)
	if i >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[i] + (p-float64(i))*(x[i+1]-x[i])
}

func meanStd(x []float64) (float64, float64) {
	if len(x) == 0 {
		return 0, 0
	}
	var m float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	if len(x) < 2 {
		return m, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(x)-1))
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
