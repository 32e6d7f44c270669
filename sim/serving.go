package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Serving jobs (docs/serving.md): a job with a ServingSpec answers requests that
// arrive at a given rate, each needing a fixed service time on its GPU at full
// speed, under a P99 latency SLA. Its latency is predicted with an M/D/1 queue
// whose service time is stretched by the job's speed (1 alone, lower when
// co-located); a co-location that would take a serving job's predicted P99 over
// its SLA is refused by Cluster.CanShare.

// RatePoint is one step of a serving job's request-rate time series: from At
// (virtual time since the start of the run) the rate is Rate requests per second.
type RatePoint struct {
	At   Time
	Rate float64
}

// ServingSpec is a serving job's load and latency target (JobSpec.Serving).
// Call Prepare once before sharing it between engines (it caches MinSpeed).
type ServingSpec struct {
	// Rate is the request rate (requests/s) before the first point of Series,
	// or at all times without one. >= 0.
	Rate float64
	// Series changes the rate at given times (strictly increasing At, >= 0);
	// the rate is a step function of virtual time.
	Series []RatePoint
	// Service is the time one request takes on the job's GPU at full speed
	// (the D of M/D/1). > 0.
	Service Duration
	// SLA bounds the P99 response time (queueing plus service). > 0.
	SLA Duration

	minSpeed float64 // cached ServingMinSpeed (ready)
	ready    bool
}

// Validate checks the spec's fields; errors name the field.
func (s *ServingSpec) Validate() error {
	var errs []error
	if !(s.Rate >= 0) || math.IsInf(s.Rate, 0) {
		errs = append(errs, fmt.Errorf("rate: must be a finite number >= 0, got %v", s.Rate))
	}
	if s.Service <= 0 {
		errs = append(errs, errors.New("serviceTime: must be > 0"))
	}
	if s.SLA <= 0 {
		errs = append(errs, errors.New("sla: must be > 0"))
	}
	for i, p := range s.Series {
		if p.At < 0 || i > 0 && p.At <= s.Series[i-1].At {
			errs = append(errs, fmt.Errorf("rateSeries[%d].at: must be >= 0 and after the previous point", i))
		}
		if !(p.Rate >= 0) || math.IsInf(p.Rate, 0) {
			errs = append(errs, fmt.Errorf("rateSeries[%d].rate: must be a finite number >= 0, got %v", i, p.Rate))
		}
	}
	return errors.Join(errs...)
}

// Prepare validates the spec and caches its minimum speed. Not safe to call
// while engines use the spec.
func (s *ServingSpec) Prepare() error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.minSpeed, s.ready = ServingMinSpeed(s), true
	return nil
}

// RateAt is the request rate (requests/s) at virtual time t.
func (s *ServingSpec) RateAt(t Time) float64 {
	r := s.Rate
	for _, p := range s.Series {
		if p.At > t {
			break
		}
		r = p.Rate
	}
	return r
}

// PeakRate is the highest request rate of the spec over all time.
func (s *ServingSpec) PeakRate() float64 {
	r := s.Rate
	for _, p := range s.Series {
		r = max(r, p.Rate)
	}
	return r
}

// MinSpeed is ServingMinSpeed(s), cached by Prepare.
func (s *ServingSpec) MinSpeed() float64 {
	if s.ready {
		return s.minSpeed
	}
	return ServingMinSpeed(s)
}

// P99 is the predicted P99 response time (seconds) at request rate rate and
// speed factor speed: PredictP99(rate, Service, speed).
func (s *ServingSpec) P99(rate, speed float64) float64 {
	return PredictP99(rate, s.Service.Seconds(), speed)
}

// PredictP99 is the predicted 99th percentile of the response time (seconds:
// waiting plus service) of an M/D/1 queue: Poisson arrivals at lambda requests
// per second, one server, deterministic service time service (seconds) at full
// speed, served at speed factor speed (1 = alone on the GPU), so each request
// takes s' = service/speed and the load is rho = lambda s'.
//
//	W   = rho s' / (2 (1 - rho))              Pollaczek-Khinchine mean wait (M/D/1)
//	P99 = s'                                   when rho <= 0.01
//	P99 = s' + (W / rho) ln(100 rho)           otherwise
//
// The tail uses two exact M/G/1 facts, P(wait > 0) = rho and E[wait] = W, and
// approximates the wait of a request that waits as exponential with mean
// W / rho: P(wait > t) ~ rho exp(-rho t / W), whose 1 % quantile is
// (W/rho) ln(100 rho) (Kleinrock, Queueing Systems vol. 1, 1975, §5.6-5.7 for the
// P-K formula; the exponential tail is the standard heavy-traffic
// approximation of M/G/1 waiting times, Kingman 1962). rho >= 1 (or speed <= 0)
// is an unstable queue: +Inf. docs/serving.md compares it with a Monte-Carlo
// M/D/1 simulation.
func PredictP99(lambda, service, speed float64) float64 {
	if !(speed > 0) || !(service > 0) {
		return math.Inf(1)
	}
	sp := service / speed
	rho := lambda * sp
	if !(rho < 1) {
		return math.Inf(1)
	}
	if rho <= 0.01 {
		return sp
	}
	return sp + sp/(2*(1-rho))*math.Log(100*rho)
}

// ServingMinSpeed is the lowest speed factor in (0, 1] at which the predicted
// P99 (PredictP99 at the spec's peak rate) stays within the SLA: the serving
// job's QoS bound for co-location. PredictP99 falls as the speed rises, so the
// bound is found by bisection (to 1e-9, rounded up so that the bound itself
// meets the SLA). When the SLA is not met even at speed 1 the bound is 1:
// co-location must then not slow the job at all.
func ServingMinSpeed(s *ServingSpec) float64 {
	lam, svc, sla := s.PeakRate(), s.Service.Seconds(), s.SLA.Seconds()
	if !(PredictP99(lam, svc, 1) <= sla) {
		return 1
	}
	lo := lam * svc // rho = 1 at this speed (P99 infinite); 0 without load
	hi := 1.0
	for hi-lo > 1e-9 {
		mid := (lo + hi) / 2
		if PredictP99(lam, svc, mid) <= sla {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// ServingPoint is one sample of a serving job's predicted latency: from Time on
// (until its next point) the job ran at Speed (0 = not running) under request
// rate Rate, with predicted P99 P99 seconds (+Inf when rho >= 1; NaN when not
// running).
type ServingPoint struct {
	Time  Time
	Job   JobRef
	Rate  float64
	Speed float64
	P99   float64
}

// ServingJobStats is one serving job's latency record over a run.
type ServingJobStats struct {
	Job JobRef
	// MinSpeedBound is ServingMinSpeed of its spec (the QoS bound).
	MinSpeedBound float64
	// Running is the wall time it ran (served requests).
	Running Duration
	// Violation is the running time during which its predicted P99 was over its
	// SLA.
	Violation Duration
	// MinSpeed is the lowest latency speed (placement speed x sharing factor) it
	// ran at (0 if it never ran).
	MinSpeed float64
	// MaxP99 is the highest predicted P99 (seconds) while it ran (0 if it never
	// ran; +Inf if its queue was unstable).
	MaxP99 float64
}

// ServingStats is a run's serving record (Result.Serving; nil when no job has a
// ServingSpec).
type ServingStats struct {
	// Jobs holds one entry per serving job, in JobRef order.
	Jobs []ServingJobStats
	// Points is the predicted-P99 time series of every serving job, in time
	// order (ties: JobRef, then recording order).
	Points []ServingPoint
	// ColocatedTrainingGPUSeconds is the work (at reference speed, GPU x s)
	// that jobs without a ServingSpec did on GPUs they shared with a serving job:
	// the training throughput that co-location with serving jobs gained.
	ColocatedTrainingGPUSeconds float64
}

// servingState is the engine's serving record (nil when no job serves).
type servingState struct {
	idx   []int32 // JobRef -> index into stats.Jobs, -1 for other jobs
	speed []float64
	stats ServingStats
	// scratch for the co-location check (clients + 1 entries)
	ws    []int32
	solo  []float64
	milli []MilliGPU
	out   []float64
	refs  []JobRef
}

// initServing sets up the serving record when some job has a ServingSpec (it
// runs before initShare, and turns sharing on with an even split when the
// configuration has none, so that serving jobs' speeds are tracked).
func (e *Engine) initServing() {
	n := 0
	for i := range e.jobs {
		if e.jobs[i].Spec.Serving != nil {
			n++
		}
	}
	if n == 0 {
		return
	}
	if e.cfg.Sharing == nil {
		e.cfg.Sharing = &SharingConfig{}
	}
	sv := &servingState{idx: make([]int32, len(e.jobs)), speed: make([]float64, 0, n)}
	sv.stats.Jobs = make([]ServingJobStats, 0, n)
	for i := range e.jobs {
		sv.idx[i] = -1
		if sp := e.jobs[i].Spec.Serving; sp != nil {
			sv.idx[i] = int32(len(sv.stats.Jobs))
			sv.stats.Jobs = append(sv.stats.Jobs, ServingJobStats{Job: JobRef(i), MinSpeedBound: sp.MinSpeed()})
			sv.speed = append(sv.speed, 0)
		}
	}
	e.serving = sv
}

// initServingQoS installs the serving co-location check on the engine's
// cluster (after initShare).
func (e *Engine) initServingQoS() {
	sv := e.serving
	if sv == nil || !e.cluster.SharingOn() {
		return
	}
	k := len(e.share.out) + 1
	sv.ws, sv.solo, sv.milli, sv.out, sv.refs = make([]int32, k), make([]float64, k), make([]MilliGPU, k), make([]float64, k), make([]JobRef, k)
	e.cluster.servQoS = e.servingAdmits
}

// ServingAdmits reports whether a job with spec s, joining time-slicing or MPS
// GPU g as a sharer once the jobs in leaving (sharers of g that a policy
// preempts in the same plan) have left, keeps every serving job's speed at or
// above its ServingMinSpeed (docs/serving.md). CanShare applies it with none
// leaving; it is always true in runs without serving jobs, for a job that
// would be alone, and for other modes. Mode, clients and memory are not
// checked here.
func (c *Cluster) ServingAdmits(s *JobSpec, g GPUID, leaving []*Job) bool {
	return c.servQoS == nil || c.gpuMode[g] == ShareMIG || c.servQoS(s, g, leaving)
}

func leaves(leaving []*Job, r JobRef) bool {
	for _, j := range leaving {
		if j.Ref == r {
			return true
		}
	}
	return false
}

// servingAdmits is Cluster.ServingAdmits for the engine's cluster: the serving
// jobs that stay on g (speed = placement speed x new factor) and s itself when
// it serves (placement speed taken as 1). It does not allocate.
func (e *Engine) servingAdmits(s *JobSpec, g GPUID, leaving []*Job) bool {
	list := e.share.jobs[g]
	sv, c := e.serving, e.cluster
	k, serving := 0, s.Serving != nil
	ws, solo, milli, out, refs := sv.ws, sv.solo, sv.milli, sv.out, sv.refs
	for _, r := range list {
		if len(leaving) > 0 && leaves(leaving, r) {
			continue
		}
		j := &e.jobs[r]
		serving = serving || j.Spec.Serving != nil
		ws[k], solo[k], milli[k], refs[k] = j.sh.wl, j.Spec.SMUtil, j.Spec.GPUMilli, r
		k++
	}
	if k == 0 || !serving {
		return true
	}
	k++
	ws, solo, milli, out = ws[:k], solo[:k], milli[:k], out[:k]
	ws[k-1], solo[k-1], milli[k-1] = -1, s.SMUtil, s.GPUMilli
	if in := e.cfg.Sharing.Interference; in != nil && s.Workload != "" {
		if id, ok := in.WorkloadID(s.Workload); ok {
			ws[k-1] = id
		}
	}
	e.cfg.Sharing.Factors(c.models[c.nodeMdl[c.gpuNode[g]]], c.gpuMode[g], ws, solo, milli, out)
	for i, r := range refs[:k-1] {
		j := &e.jobs[r]
		if j.Spec.Serving != nil && j.sh.base*out[i] < sv.stats.Jobs[sv.idx[r]].MinSpeedBound {
			return false
		}
	}
	return s.Serving == nil || out[k-1] >= s.Serving.MinSpeed()
}

// servingSpeed sets serving job j's latency speed to v at now (0 = stopped) and
// records a point when it changed.
func (e *Engine) servingSpeed(j *Job, v float64) {
	sv := e.serving
	i := sv.idx[j.Ref]
	if i < 0 || sv.speed[i] == v && v > 0 {
		return
	}
	sv.speed[i] = v
	sp := j.Spec.Serving
	rate := sp.RateAt(e.now)
	p := math.NaN()
	if v > 0 {
		st := &sv.stats.Jobs[i]
		p = sp.P99(rate, v)
		st.MaxP99 = max(st.MaxP99, p)
		if st.MinSpeed == 0 || v < st.MinSpeed {
			st.MinSpeed = v
		}
	}
	sv.stats.Points = append(sv.stats.Points, ServingPoint{Time: e.now, Job: j.Ref, Rate: rate, Speed: v, P99: p})
}

// servingSegment accounts j's closing speed segment [t0, now) (el > 0): a
// serving job's running and violation time (and a point at each rate change
// inside (t0, now]); for another job on a GPU shared with a serving job, its
// work there.
func (e *Engine) servingSegment(j *Job, t0 Time, el Duration) {
	sv := e.serving
	i := sv.idx[j.Ref]
	if i < 0 {
		if j.sh.withServing {
			sv.stats.ColocatedTrainingGPUSeconds += j.speed * float64(el) / 1e6 * float64(len(j.GPUs))
		}
		return
	}
	st, sp, v := &sv.stats.Jobs[i], j.Spec.Serving, sv.speed[i]
	st.Running += el
	sla := sp.SLA.Seconds()
	from, rate := t0, sp.RateAt(t0)
	for _, pt := range sp.Series {
		if pt.At <= t0 {
			continue
		}
		if pt.At > e.now {
			break
		}
		if sp.P99(rate, v) > sla {
			st.Violation += pt.At.Sub(from)
		}
		from, rate = pt.At, pt.Rate
		p := sp.P99(rate, v)
		st.MaxP99 = max(st.MaxP99, p)
		sv.stats.Points = append(sv.stats.Points, ServingPoint{Time: pt.At, Job: j.Ref, Rate: rate, Speed: v, P99: p})
	}
	if sp.P99(rate, v) > sla {
		st.Violation += e.now.Sub(from)
	}
}

// servingResult is the run's serving record, points in time order.
func (e *Engine) servingResult() *ServingStats {
	st := e.serving.stats
	slices.SortStableFunc(st.Points, func(a, b ServingPoint) int {
		if a.Time != b.Time {
			return cmp.Compare(a.Time, b.Time)
		}
		return cmp.Compare(a.Job, b.Job)
	})
	return &st
}
