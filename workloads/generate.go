package workloads

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/gpusim/gpusim/sim"
)

// Stream names used by Generate (under sim.Stream(seed, name)).
const (
	StreamClasses   = "workload/classes"
	StreamSizes     = "workload/sizes"
	StreamShare     = "workload/share"
	StreamDurations = "workload/durations"
	StreamWalltime  = "workload/walltime"
	StreamQueues    = "workload/queues"
	StreamUsers     = "workload/users"
	StreamArrivals  = "workload/arrivals"
)

// maxSpanS bounds the expected arrival span (seconds) so times stay far from
// overflowing sim.Time.
const maxSpanS = 1e11

// maxSwitches bounds the expected number of bursty state switches.
const maxSwitches = 1e8

// Generate produces s.Jobs jobs sorted by submit time with IDs "job-000001", ...,
// using only sim.Stream(seed, "workload/...") streams. It works on a copy of s with
// SetDefaults applied (s is not modified) and returns an error for an invalid s.
//
// clusterGPUs is the cluster's GPU count: it sets the arrival rate (see the package
// documentation for the load formula) and caps a job's GPU count. maxGPUsPerNode
// bounds the GPUs per replica: a job with more GPUs is split into equal replicas
// of the largest size <= maxGPUsPerNode that divides its GPU count (16 GPUs on
// 8-GPU nodes = 2 replicas of 8; 12 GPUs = 2 replicas of 6).
func (s *Synthetic) Generate(seed uint64, clusterGPUs int64, maxGPUsPerNode int32) ([]sim.JobSpec, error) {
	if clusterGPUs < 1 {
		return nil, fmt.Errorf("workload: cluster GPUs must be >= 1, got %d", clusterGPUs)
	}
	if maxGPUsPerNode < 1 {
		return nil, fmt.Errorf("workload: max GPUs per node must be >= 1, got %d", maxGPUsPerNode)
	}
	c := s.clone()
	c.SetDefaults()
	if fe := c.Validate(); len(fe) > 0 {
		return nil, fmt.Errorf("workload: invalid synthetic workload: %w", fe)
	}
	g := newGenerator(&c, seed, clusterGPUs, maxGPUsPerNode)
	jobs := make([]sim.JobSpec, c.Jobs)
	var demand float64 // GPU-seconds
	for i := range jobs {
		g.job(&jobs[i])
		demand += jobDemand(&jobs[i])
	}
	if demand <= 0 {
		return nil, fmt.Errorf("workload: the class mix demands no GPU time, so no arrival rate gives load %g (give some class GPUs > 0)", c.Load)
	}
	span := demand / (c.Load * float64(clusterGPUs))
	if span > maxSpanS {
		return nil, fmt.Errorf("workload: expected arrival span %.3g s exceeds %.3g s (durations or load too extreme)", span, maxSpanS)
	}
	rate := float64(c.Jobs) / span
	times, err := arrivals(&c.Arrival, rate, c.Jobs, sim.Stream(seed, StreamArrivals))
	if err != nil {
		return nil, err
	}
	for i := range jobs {
		jobs[i].Submit = sim.Time(sim.Seconds(times[i]))
	}
	// Arrival times are nondecreasing; the stable sort only guards against rounding.
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Submit < jobs[b].Submit })
	for i := range jobs {
		jobs[i].ID = sim.JobID(fmt.Sprintf("job-%06d", i+1))
	}
	return jobs, nil
}

// clone copies s deeply enough that SetDefaults on the copy leaves s untouched.
func (s *Synthetic) clone() Synthetic {
	c := *s
	c.Classes = slices.Clone(s.Classes)
	c.Queues = slices.Clone(s.Queues)
	c.Teams = slices.Clone(s.Teams)
	return c
}

// jobDemand is the job's GPU-seconds at reference speed.
func jobDemand(j *sim.JobSpec) float64 {
	return float64(j.GPUDemandMilli()) / 1000 * j.Duration.Seconds()
}

// OfferedLoad is the empirical offered load of jobs on clusterGPUs GPUs: total
// GPU-seconds divided by the span from t=0 to the last submit, per GPU. It returns
// 0 when the span or clusterGPUs is not positive.
func OfferedLoad(jobs []sim.JobSpec, clusterGPUs int64) float64 {
	var d float64
	var last sim.Time
	for i := range jobs {
		d += jobDemand(&jobs[i])
		last = max(last, jobs[i].Submit)
	}
	if last <= 0 || clusterGPUs <= 0 {
		return 0
	}
	return d / last.Seconds() / float64(clusterGPUs)
}

// cumulative is a discrete sampler over indexes 0..n-1.
type cumulative []float64

func newCumulative(weights []float64, n int) cumulative {
	c := make(cumulative, n)
	var t float64
	for i := range n {
		w := 1.0
		if len(weights) == n {
			w = weights[i]
		}
		if !(w > 0) || math.IsInf(w, 0) {
			w = 0
		}
		t += w
		c[i] = t
	}
	return c
}

// pick returns an index with probability proportional to its weight (-1 if all are
// 0). It always draws exactly one number from r.
func (c cumulative) pick(r *rand.Rand) int { return c.pickU(r.Float64()) }

type generator struct {
	s                      *Synthetic
	clusterGPUs            int64
	maxPerNode             int32
	rClass, rSize, rShare  *rand.Rand
	rDur, rWall            *rand.Rand
	rQueue, rUser          *rand.Rand
	classes                cumulative
	sizes, shares          []cumulative
	queues, teams          []cumulative // per class: over s.Queues / s.Teams
	users                  []cumulative // per team
	split                  map[int32]int32
	models                 [][]string
	pri                    []int32
	elastic                []*sim.ElasticSpec // per class; nil = rigid
	durLo, durHi, mu, sig  []float64
	durMin, durMax         []float64
	wallMin, wallMax, wRnd []float64
}

func newGenerator(s *Synthetic, seed uint64, clusterGPUs int64, maxPerNode int32) *generator {
	g := &generator{s: s, clusterGPUs: clusterGPUs, maxPerNode: maxPerNode, split: map[int32]int32{},
		rClass: sim.Stream(seed, StreamClasses), rSize: sim.Stream(seed, StreamSizes),
		rShare: sim.Stream(seed, StreamShare), rDur: sim.Stream(seed, StreamDurations),
		rWall: sim.Stream(seed, StreamWalltime), rQueue: sim.Stream(seed, StreamQueues),
		rUser: sim.Stream(seed, StreamUsers)}
	cw := make([]float64, len(s.Classes))
	for i, c := range s.Classes {
		cw[i] = c.Weight
	}
	g.classes = newCumulative(cw, len(cw))
	for _, c := range s.Classes {
		var es *sim.ElasticSpec
		if e := c.Elastic; e != nil {
			es = &sim.ElasticSpec{Min: e.MinReplicas, Max: e.MaxReplicas, Step: max(e.Step, 1)}
		}
		g.elastic = append(g.elastic, es)
		g.sizes = append(g.sizes, newCumulative(c.GPUs.Weights, len(c.GPUs.Values)))
		g.shares = append(g.shares, newCumulative(c.GPUMilli.Weights, len(c.GPUMilli.Values)))
		qw := make([]float64, len(s.Queues))
		for k, q := range s.Queues {
			if accepts(q.Classes, c.Class) {
				qw[k] = q.Weight
			}
		}
		g.queues = append(g.queues, newCumulative(qw, len(qw)))
		tw := make([]float64, len(s.Teams))
		for k, t := range s.Teams {
			if accepts(t.Classes, c.Class) {
				tw[k] = t.Weight
			}
		}
		g.teams = append(g.teams, newCumulative(tw, len(tw)))
		g.models = append(g.models, slices.Clone(c.AllowedModels))
		g.pri = append(g.pri, *c.Priority)
		d := c.Duration
		mu := math.Log(float64(d.MedianS))
		g.mu = append(g.mu, mu)
		g.sig = append(g.sig, d.Sigma)
		g.durMin = append(g.durMin, float64(d.MinS))
		g.durMax = append(g.durMax, float64(d.MaxS))
		lo, hi := 0.0, 1.0
		if d.Sigma > 0 {
			lo = normCDF((math.Log(float64(d.MinS)) - mu) / d.Sigma)
			hi = normCDF((math.Log(float64(d.MaxS)) - mu) / d.Sigma)
		}
		g.durLo = append(g.durLo, lo)
		g.durHi = append(g.durHi, hi)
		g.wallMin = append(g.wallMin, c.Walltime.FactorMin)
		g.wallMax = append(g.wallMax, c.Walltime.FactorMax)
		g.wRnd = append(g.wRnd, float64(c.Walltime.RoundToS))
	}
	for _, t := range s.Teams {
		g.users = append(g.users, zipf(t.Users, s.UserSkew))
	}
	return g
}

// zipf is the cumulative of weights 1/k^skew, k = 1..n.
func zipf(n int, skew float64) cumulative {
	c := make(cumulative, n)
	var t float64
	for k := range n {
		t += math.Pow(float64(k+1), -skew)
		c[k] = t
	}
	return c
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func normQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// job fills every field of j except ID and Submit. Each purpose draws from its own
// stream a fixed number of times per job (the class stream once, etc.), so streams
// stay aligned across configurations.
func (g *generator) job(j *sim.JobSpec) {
	ci := g.classes.pick(g.rClass)
	c := &g.s.Classes[ci]
	j.Class = sim.JobClass(c.Class)
	j.Priority = g.pri[ci]
	j.GPUModels = slices.Clone(g.models[ci])

	gpus := c.GPUs.Values[max(g.sizes[ci].pick(g.rSize), 0)]
	gpus = int32(min(int64(gpus), g.clusterGPUs))
	j.Replicas, j.GPUsPerReplica = 1, gpus
	if gpus > g.maxPerNode {
		d := g.splitSize(gpus)
		j.Replicas, j.GPUsPerReplica = gpus/d, d
	}
	j.GPUMilli = sim.WholeGPU
	u := g.rShare.Float64() // always drawn: keeps the stream aligned
	if es := g.elastic[ci]; es != nil && gpus > 0 {
		j.Replicas, j.Elastic = c.Elastic.preferred(j.Replicas), es
	} else if gpus == 1 {
		if k := g.shares[ci].pickU(u); k >= 0 {
			j.GPUMilli = c.GPUMilli.Values[k]
		}
	}
	if gpus == 0 {
		j.CPUMilli, j.MemoryMiB = c.CPUMilli, c.MemoryMiB
	} else {
		j.CPUMilli = scaleShare(c.CPUMilliPerGPU*int64(j.GPUsPerReplica), j.GPUMilli)
		j.MemoryMiB = scaleShare(c.MemoryMiBPerGPU*int64(j.GPUsPerReplica), j.GPUMilli)
	}

	dur := g.duration(ci)
	j.Duration = sim.Seconds(dur)
	f := g.wallMin[ci] + (g.wallMax[ci]-g.wallMin[ci])*g.rWall.Float64()
	w := dur * f
	if r := g.wRnd[ci]; r > 0 {
		w = math.Ceil(w/r) * r
	}
	j.Walltime = max(sim.Seconds(w), sim.Second)

	q := g.queues[ci].pick(g.rQueue)
	j.Queue = g.s.Queues[max(q, 0)].Name
	t := max(g.teams[ci].pick(g.rUser), 0)
	k := g.users[t].pick(g.rUser)
	j.Team = g.s.Teams[t].Name
	j.User = fmt.Sprintf("%s-u%02d", j.Team, k+1)
}

// pickU is pick with a given uniform draw in [0,1).
func (c cumulative) pickU(u float64) int {
	if len(c) == 0 || c[len(c)-1] <= 0 {
		return -1
	}
	x := u * c[len(c)-1]
	i := sort.Search(len(c), func(k int) bool { return c[k] > x })
	return min(i, len(c)-1)
}

// duration draws class ci's truncated log-normal duration in seconds.
func (g *generator) duration(ci int) float64 {
	u := g.rDur.Float64()
	var x float64
	if g.sig[ci] == 0 {
		x = math.Exp(g.mu[ci])
	} else {
		p := g.durLo[ci] + (g.durHi[ci]-g.durLo[ci])*u
		x = math.Exp(g.mu[ci] + g.sig[ci]*normQuantile(p))
	}
	if math.IsNaN(x) {
		x = math.Exp(g.mu[ci])
	}
	return min(max(x, g.durMin[ci]), g.durMax[ci])
}

// splitSize is the largest divisor of gpus that is <= maxPerNode.
func (g *generator) splitSize(gpus int32) int32 {
	if d, ok := g.split[gpus]; ok {
		return d
	}
	d := min(g.maxPerNode, gpus)
	for ; d > 1; d-- {
		if gpus%d == 0 {
			break
		}
	}
	g.split[gpus] = d
	return d
}

// scaleShare returns x * milli / 1000 without overflow (at least 1 when x > 0).
func scaleShare(x int64, milli sim.MilliGPU) int64 {
	if milli >= sim.WholeGPU {
		return x
	}
	m := int64(milli)
	return max(x/1000*m+x%1000*m/1000, min(x, 1))
}
