package policies

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// ForecastParams switch on prospective scheduling for a queue policy
// (QueueParams.Forecast; docs/forecast.md): a demand forecast holds GPUs free
// for imminent large gangs, and a hold whose gang does not come decays.
type ForecastParams struct {
	// MinGPUs: a job is a large gang when it asks for at least this many GPUs
	// (replicas × GPUs per replica). Required, >= 1.
	MinGPUs int `yaml:"minGPUs"`
	// Horizon: a predicted arrival holds its GPUs from Horizon before it. > 0.
	Horizon Dur `yaml:"horizon"`
	// Decay: after a predicted arrival that did not come, the hold shrinks
	// linearly to zero over Decay (0: dropped at once).
	Decay Dur `yaml:"decay"`
	// By keys the arrival history: user (default), queue, class or all.
	By string `yaml:"by"`
	// History: how many of a key's last inter-arrival gaps are averaged
	// (default 4).
	History int `yaml:"history"`
	// Queue: pending large gangs hold their GPUs too (default true).
	Queue *bool `yaml:"queue"`
}

// ForecastStats is what a forecast did over a run (summary.json "forecast").
type ForecastStats struct {
	MinGPUs int
	// HeldGPUSeconds is the integral of the history holds (GPUs held for
	// predicted arrivals) over time, in GPU-seconds.
	HeldGPUSeconds float64
	// QueueHeldGPUSeconds is the same for pending large gangs' holds.
	QueueHeldGPUSeconds float64
	// Hits: large gangs that arrived while their key's hold was up. Misses:
	// holds that decayed to zero with no arrival. Early: gangs that came before
	// their hold started. Open: holds still up at the end.
	Hits, Misses, Early, Open int
	// Predictions: forecasts made (one per large-gang arrival with history).
	Predictions int
}

// ForecastReporter is implemented by queue policies run with a forecast.
type ForecastReporter interface {
	// ForecastStats returns the forecast's record, closing it at time end.
	// ok is false when the policy runs without a forecast.
	ForecastStats(end sim.Time) (s ForecastStats, ok bool)
}

const (
	byUser = iota
	byQueue
	byClass
	byAll
)

// fcKey is one key's arrival history and current prediction.
type fcKey struct {
	last    sim.Time       // last large-gang arrival
	gaps    []sim.Duration // last History inter-arrival gaps (ring)
	ng      int            // gaps seen (ring position = ng % History)
	size    int64          // predicted size: the last gang's GPUs
	eta     sim.Time       // predicted next arrival; Never: no prediction
	counted sim.Time       // hold integrated up to here (for the open prediction)
}

// forecast is a queue policy's prospective-hold state.
type forecast struct {
	min            int64
	horizon, decay sim.Duration
	by             int
	history        int
	queue          bool

	keys  map[string]*fcKey
	order []*fcKey // creation order: deterministic iteration
	seen  []bool   // per job: its first arrival was observed

	holds []fcHold // this scheduling point's holds
	run   []fcRel  // scratch: running jobs' estimated ends
	stats ForecastStats
	lastQ sim.Time // queue holds integrated up to here
	qHeld int64    // queue holds' GPUs since lastQ

	wake    sim.Time // next change of a prediction's hold
	heldAny bool     // this pass held a job
}

// fcHold is GPUs held for a gang expected at eta.
type fcHold struct {
	eta  sim.Time
	gpus int64
	job  sim.JobRef // the pending gang of a queue hold; -1 for a prediction
}

type fcRel struct {
	t    sim.Time
	gpus int64
}

func newForecast(p *ForecastParams) (*forecast, error) {
	var errs []error
	if p.MinGPUs < 1 {
		errs = append(errs, fmt.Errorf("forecast.minGPUs: must be >= 1 (got %d)", p.MinGPUs))
	}
	if p.Horizon <= 0 {
		errs = append(errs, fmt.Errorf("forecast.horizon: must be > 0"))
	}
	if p.History < 0 {
		errs = append(errs, fmt.Errorf("forecast.history: must be >= 0 (got %d)", p.History))
	}
	f := &forecast{min: int64(p.MinGPUs), horizon: sim.Duration(p.Horizon), decay: sim.Duration(p.Decay),
		history: p.History, queue: true, keys: map[string]*fcKey{}}
	if f.history == 0 {
		f.history = 4
	}
	if p.Queue != nil {
		f.queue = *p.Queue
	}
	switch p.By {
	case "", "user":
		f.by = byUser
	case "queue":
		f.by = byQueue
	case "class":
		f.by = byClass
	case "all":
		f.by = byAll
	default:
		errs = append(errs, fmt.Errorf("forecast.by: want user, queue, class or all (got %q)", p.By))
	}
	f.stats.MinGPUs = p.MinGPUs
	return f, errors.Join(errs...)
}

func (f *forecast) large(s *sim.JobSpec) bool { return int64(s.TotalGPUs()) >= f.min }

func (f *forecast) key(s *sim.JobSpec) string {
	switch f.by {
	case byQueue:
		return s.Queue
	case byClass:
		return string(s.Class)
	case byAll:
		return ""
	}
	return s.User
}

// heldAt is the GPUs k holds at time t (0 outside its window): its size from
// eta−horizon to eta, then ceil(size·(1 − (t−eta)/decay)) until eta+decay.
func (f *forecast) heldAt(k *fcKey, t sim.Time) int64 {
	if k.eta == sim.Never || t < k.eta.Add(-f.horizon) {
		return 0
	}
	if t <= k.eta {
		return k.size
	}
	over := int64(t.Sub(k.eta))
	d := int64(f.decay)
	if over >= d {
		return 0
	}
	return (k.size*(d-over) + d - 1) / d
}

// heldSeconds is the integral of heldAt over [a, b), in GPU-seconds.
func (f *forecast) heldSeconds(k *fcKey, a, b sim.Time) float64 {
	if k.eta == sim.Never || b <= a {
		return 0
	}
	var us float64
	// Flat part [eta−horizon, eta].
	lo, hi := max(a, k.eta.Add(-f.horizon)), min(b, k.eta)
	if hi > lo {
		us += float64(k.size) * float64(hi.Sub(lo))
	}
	// Decay: heldAt = h on over ∈ [ceil(d(S−h)/S), ceil(d(S−h+1)/S)).
	d, s := int64(f.decay), k.size
	for h := s; h >= 1 && d > 0; h-- {
		from := k.eta.Add(sim.Duration((d*(s-h) + s - 1) / s))
		to := k.eta.Add(sim.Duration((d*(s-h+1) + s - 1) / s))
		lo, hi := max(a, from), min(b, to)
		if hi > lo {
			us += float64(h) * float64(hi.Sub(lo))
		}
	}
	return us / 1e6
}

// arrive records job j's first arrival at now.
func (f *forecast) arrive(v *sim.View, j *sim.Job) {
	if n := v.NumJobs(); len(f.seen) < n { // first call, or jobs submitted since (live runs)
		f.seen = append(f.seen, make([]bool, n-len(f.seen))...)
	}
	if f.seen[j.Ref] || !f.large(&j.Spec) {
		return
	}
	f.seen[j.Ref] = true
	now := v.Now()
	name := f.key(&j.Spec)
	k := f.keys[name]
	if k == nil {
		k = &fcKey{eta: sim.Never, gaps: make([]sim.Duration, f.history)}
		f.keys[name] = k
		f.order = append(f.order, k)
	} else {
		f.close(k, now)
		k.gaps[k.ng%f.history] = now.Sub(k.last)
		k.ng++
	}
	k.last, k.size = now, int64(j.Spec.TotalGPUs())
	k.eta = sim.Never
	if n := min(k.ng, f.history); n > 0 {
		var sum sim.Duration
		for _, g := range k.gaps[:n] {
			sum += g
		}
		k.eta = now.Add(sum / sim.Duration(n))
		k.counted = now
		f.stats.Predictions++
	}
}

// close ends k's open prediction at an arrival at now: a hit when its hold
// was up, a miss when it had decayed away.
func (f *forecast) close(k *fcKey, now sim.Time) {
	if k.eta == sim.Never {
		return
	}
	f.stats.HeldGPUSeconds += f.heldSeconds(k, k.counted, now)
	switch {
	case now < k.eta.Add(-f.horizon):
		f.stats.Early++ // the hold had not started
	case f.heldAt(k, now) > 0:
		f.stats.Hits++
	default:
		f.stats.Misses++
	}
	k.eta = sim.Never
}

// ForecastStats implements ForecastReporter.
func (q *queuePolicy) ForecastStats(end sim.Time) (ForecastStats, bool) {
	f := q.fc
	if f == nil {
		return ForecastStats{}, false
	}
	s := f.stats
	s.QueueHeldGPUSeconds += float64(f.qHeld) * float64(end.Sub(f.lastQ)) / 1e6
	for _, k := range f.order {
		if k.eta == sim.Never {
			continue
		}
		s.HeldGPUSeconds += f.heldSeconds(k, k.counted, end)
		switch {
		case end < k.eta.Add(-f.horizon):
			// not started: no verdict
		case f.heldAt(k, end) > 0:
			s.Open++
		default:
			s.Misses++
		}
	}
	return s, true
}

// plan lists this scheduling point's holds: every key's prediction that is up,
// and (with Queue) every pending large gang, at the estimated time the
// running jobs' estimated ends free enough GPUs for it and the gangs before it
// in queue order. It asks for a wake-up when a hold next starts or shrinks.
func (f *forecast) plan(q *queuePolicy, v *sim.View, p *sim.Plan) {
	now := v.Now()
	f.holds = f.holds[:0]
	f.wake, f.heldAny = sim.Never, false
	for _, k := range f.order {
		if k.eta == sim.Never {
			continue
		}
		if h := f.heldAt(k, now); h > 0 {
			f.holds = append(f.holds, fcHold{eta: max(k.eta, now), gpus: h, job: -1})
		}
		f.wake = min(f.wake, f.nextChange(k, now))
	}
	if f.queue {
		c := v.Cluster()
		free := c.FreeGPUs()
		f.run = f.run[:0]
		var need int64
		q.eachPending(v, func(j *sim.Job) bool {
			if !f.large(&j.Spec) {
				return true
			}
			g := int64(j.Spec.TotalGPUs())
			need += g
			if len(f.run) == 0 {
				for _, r := range v.Running() {
					f.run = append(f.run, fcRel{t: r.EstimatedEnd(), gpus: int64(r.Spec.TotalGPUs())})
				}
				slices.SortFunc(f.run, func(a, b fcRel) int { return cmp.Compare(a.t, b.t) })
			}
			eta, have := now, free
			for _, r := range f.run {
				if have >= need {
					break
				}
				eta, have = r.t, have+r.gpus
			}
			if have < need {
				eta = sim.Never
			}
			f.holds = append(f.holds, fcHold{eta: max(eta, now), gpus: g, job: j.Ref})
			return true
		})
	}
	f.stats.QueueHeldGPUSeconds += float64(f.qHeld) * float64(now.Sub(f.lastQ)) / 1e6
	f.lastQ = now
}

// settle records, after a scheduling pass, the GPUs of the pending large gangs
// still waiting (the queue holds that stay up until the next point), and,
// when the pass held a job, asks for a scheduling point (a release) when a
// prediction's hold next starts or shrinks. Held GPU-seconds are integrated
// exactly between points (heldSeconds), so no other wake-up is needed.
func (f *forecast) settle(v *sim.View, p *sim.Plan) {
	if f.heldAny && f.wake != sim.Never {
		p.Release(f.wake)
	}
	f.qHeld = 0
	for _, h := range f.holds {
		if h.job >= 0 && v.Job(h.job).State == sim.StatePending {
			f.qHeld += h.gpus
		}
	}
}

// nextChange is the next time after now at which k's hold starts or shrinks.
func (f *forecast) nextChange(k *fcKey, now sim.Time) sim.Time {
	if start := k.eta.Add(-f.horizon); now < start {
		return start
	}
	d, s := int64(f.decay), k.size
	h := f.heldAt(k, now)
	switch {
	case h <= 0:
		return sim.Never
	case d == 0:
		return k.eta + 1 // dropped at once after eta
	}
	// heldAt falls to h−1 at over = ceil(d(S−h+1)/S).
	return k.eta.Add(sim.Duration((d*(s-h+1) + s - 1) / s))
}

// held reports (and records as reason reservation) that small job j may not
// start now: it would leave fewer free GPUs than the holds it would overlap
// (those whose gang is expected before j's estimated end). Large gangs are
// never held.
func (f *forecast) held(v *sim.View, p *sim.Plan, j *sim.Job) bool {
	if len(f.holds) == 0 || f.large(&j.Spec) {
		return false
	}
	end := v.Now().Add(max(j.Estimate-j.Done, 1))
	var need int64
	for _, h := range f.holds {
		if end > h.eta && (h.job < 0 || v.Job(h.job).State == sim.StatePending) {
			need += h.gpus
		}
	}
	if need == 0 || v.Cluster().FreeGPUs()-int64(j.Spec.TotalGPUs()) >= need {
		return false
	}
	p.Wait(j.Ref, sim.ReasonReservation)
	f.heldAny = true
	return true
}
