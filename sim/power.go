package sim

import (
	"errors"
	"fmt"
	"math"
)

// Power and carbon accounting, and a cluster power cap (docs/power.md).
//
// Model. A GPU of model m draws IdleW when nothing runs on it and
// IdleW + (MaxW-IdleW)·u at utilisation u (a linear curve, Fan et al., "Power
// provisioning for a warehouse-sized computer", ISCA 2007, §4.1). A running job
// uses GPUMilli/1000 of each of its GPUs at full utilisation (u = its share), so
// with power fraction φ (1 unless throttled) it adds
//
//	dyn = Σ_gpus (MaxW-IdleW)·GPUMilli/1000·φ
//
// to the cluster's draw, and is attributed GPUMilli/1000 of each GPU's idle power
// plus its dyn. Cluster power is Σ_all GPUs IdleW + Σ_running dyn: integer
// milliwatts, updated in O(replicas) at each start and stop, never by a scan.
//
// Cap. With Cap > 0, the draw after a start may not exceed Cap. In admit mode a
// job starts only if its full-power dyn fits; in throttle mode it starts if at
// least MinCapW per GPU fits and gets φ = min(1, headroom/dyn_full): its power
// limit is set once at start (as nvidia-smi -pl at launch) and its speed becomes
// φ^SpeedExponent (docs/power.md: the speed-vs-power model). The engine rejects
// a start that breaks the cap (PlanError); policies check View.PowerFits first.

// PowerCapMode is how a power cap is enforced.
type PowerCapMode uint8

// Power cap modes.
const (
	// PowerCapAdmit admits a job only while its full power fits under the cap.
	PowerCapAdmit PowerCapMode = iota
	// PowerCapThrottle admits a job while its minimum power fits and caps its
	// power (and speed) to the headroom.
	PowerCapThrottle
)

// String returns the mode's scenario name.
func (m PowerCapMode) String() string {
	if m == PowerCapThrottle {
		return "throttle"
	}
	return "admit"
}

// GPUPower is a GPU model's power curve, in watts.
type GPUPower struct {
	IdleW float64 // draw with nothing running (utilisation 0)
	MaxW  float64 // draw at utilisation 1 (the board power / TDP)
	// MinCapW is the lowest power limit the board accepts (nvidia-smi "Min Power
	// Limit"): a throttled GPU never gets less. Only used in throttle mode.
	MinCapW float64
}

// PowerConfig turns on power and carbon accounting (Config.Power).
type PowerConfig struct {
	// Models gives the curve of every GPU model of the cluster, by name.
	Models map[string]GPUPower
	// CapW is the cluster power cap in watts (all GPUs, idle ones included);
	// 0 = no cap.
	CapW float64
	// Mode is how the cap is enforced.
	Mode PowerCapMode
	// SpeedExponent k: a job throttled to power fraction φ of its dynamic
	// power runs at speed φ^k (throttle mode; 0 means 1/3).
	SpeedExponent float64
	// Carbon is the grid carbon intensity; nil = no carbon accounting.
	Carbon *CarbonSeries
}

// CarbonSeries is a grid carbon intensity in gCO2e/kWh, piecewise constant:
// Values[i] holds over [i·Step, (i+1)·Step) of virtual time; the series repeats
// after its end (time t reads Values[(t/Step) mod len]).
type CarbonSeries struct {
	Step   Duration
	Values []float64
	cum    []float64 // cum[i] = Σ_{k<i} Values[k]·Step seconds
}

// NewCarbonSeries checks and indexes a series: step > 0, at least one value,
// every value finite and >= 0.
func NewCarbonSeries(step Duration, values []float64) (*CarbonSeries, error) {
	if step <= 0 {
		return nil, errors.New("carbon series: step must be > 0")
	}
	if len(values) == 0 {
		return nil, errors.New("carbon series: no values")
	}
	cs := &CarbonSeries{Step: step, Values: values, cum: make([]float64, len(values)+1)}
	for i, v := range values {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("carbon series: value %d is %v (want a finite value >= 0)", i, v)
		}
		cs.cum[i+1] = cs.cum[i] + v*step.Seconds()
	}
	return cs, nil
}

// At returns the intensity (gCO2e/kWh) in effect at time t (t >= 0).
func (cs *CarbonSeries) At(t Time) float64 {
	return cs.Values[int((int64(t)/int64(cs.Step))%int64(len(cs.Values)))]
}

// integral returns ∫_0^t intensity dt in (gCO2e/kWh)·s.
func (cs *CarbonSeries) integral(t Time) float64 {
	n := int64(len(cs.Values))
	i := int64(t) / int64(cs.Step)
	cycles, k := i/n, i%n
	frac := Duration(int64(t) - i*int64(cs.Step))
	return float64(cycles)*cs.cum[n] + cs.cum[k] + cs.Values[k]*frac.Seconds()
}

// Mean returns the mean intensity over [a, b) (At(a) when b <= a).
func (cs *CarbonSeries) Mean(a, b Time) float64 {
	if b <= a {
		return cs.At(a)
	}
	return (cs.integral(b) - cs.integral(a)) / Duration(b-a).Seconds()
}

// GramsCO2 returns the emissions of a constant draw of w watts over [a, b).
func (cs *CarbonSeries) GramsCO2(w float64, a, b Time) float64 {
	if b <= a {
		return 0
	}
	return w / 1000 * (cs.integral(b) - cs.integral(a)) / 3600
}

// PowerStats is the power and carbon outcome of a run (Result.Power).
type PowerStats struct {
	// Per job, indexed by JobRef: energy (J) and emissions (g) attributed to
	// the job over all its runs, and its highest attributed draw (W).
	JobEnergyJ []float64
	JobCarbonG []float64
	JobPeakW   []float64
	EnergyJ    float64 // whole cluster over [0, End], idle GPUs included
	CarbonG    float64 // whole cluster over [0, End]; 0 without a series
	PeakW      float64 // highest cluster draw
	IdleW      float64 // cluster draw with nothing running
	CapW       float64 // the cap (0 = none)
	CapMode    PowerCapMode
	Throttled  int64 // starts that got φ < 1
	HasCarbon  bool
	// Queues lists the jobs' queues in order of first appearance (JobRef
	// order; "" for jobs without one) and QueuePeakW each one's highest draw
	// attributed to its running jobs.
	Queues     []string
	QueuePeakW []float64
}

// powerState is the engine's incremental power bookkeeping.
type powerState struct {
	cfg    *PowerConfig
	dynMW  []int64 // per model: (MaxW-IdleW) in mW
	idleMW []int64 // per model: IdleW in mW
	minMW  []int64 // per model: (MinCapW-IdleW) in mW, >= 0
	capMW  int64   // 0 = none
	baseMW int64   // Σ all GPUs idle
	dynSum int64   // Σ running jobs' dyn
	k      float64 // speed exponent
	jobMW  []int64 // per job: attributed draw of its current run (0 when not running)
	jobDyn []int64 // per job: dyn of its current run
	since  []Time  // per job: start of its current run
	stats  PowerStats
	jobQ   []int32 // per job: index in stats.Queues
	qMW    []int64 // per queue: attributed draw now
}

func (e *Engine) initPower() error {
	pc := e.cfg.Power
	c := e.cluster
	if e.cfg.Sharing != nil {
		return errors.New("sim: power accounting does not support device-level sharing yet")
	}
	ms := c.Models()
	ps := &powerState{cfg: pc, dynMW: make([]int64, len(ms)), idleMW: make([]int64, len(ms)), minMW: make([]int64, len(ms)),
		capMW: int64(math.Round(pc.CapW * 1000)), k: pc.SpeedExponent}
	if ps.k == 0 {
		ps.k = 1.0 / 3
	}
	for i, m := range ms {
		gp, ok := pc.Models[m]
		if !ok {
			if c.ModelCapacity(i) == 0 {
				continue
			}
			return fmt.Errorf("sim: power: no power curve for GPU model %q", m)
		}
		if !(gp.IdleW >= 0) || !(gp.MaxW >= gp.IdleW) || math.IsInf(gp.MaxW, 0) {
			return fmt.Errorf("sim: power: GPU model %q: want 0 <= idle <= max, got idle %v, max %v", m, gp.IdleW, gp.MaxW)
		}
		ps.idleMW[i] = int64(math.Round(gp.IdleW * 1000))
		ps.dynMW[i] = int64(math.Round(gp.MaxW*1000)) - ps.idleMW[i]
		ps.minMW[i] = max(0, int64(math.Round(gp.MinCapW*1000))-ps.idleMW[i])
		ps.baseMW += ps.idleMW[i] * c.ModelCapacity(i)
	}
	n := len(e.jobs)
	ps.jobMW, ps.jobDyn, ps.since = make([]int64, n), make([]int64, n), make([]Time, n)
	ps.stats = PowerStats{JobEnergyJ: make([]float64, n), JobCarbonG: make([]float64, n), JobPeakW: make([]float64, n),
		IdleW: float64(ps.baseMW) / 1000, CapW: pc.CapW, CapMode: pc.Mode, HasCarbon: pc.Carbon != nil, PeakW: float64(ps.baseMW) / 1000}
	ps.jobQ = make([]int32, n)
	qi := map[string]int32{}
	for i := range e.jobs {
		q := e.jobs[i].Spec.Queue
		k, ok := qi[q]
		if !ok {
			k = int32(len(ps.stats.Queues))
			qi[q] = k
			ps.stats.Queues = append(ps.stats.Queues, q)
		}
		ps.jobQ[i] = k
	}
	ps.qMW = make([]int64, len(ps.stats.Queues))
	ps.stats.QueuePeakW = make([]float64, len(ps.stats.Queues))
	e.pow = ps
	return nil
}

// jobDemand returns job j's dyn at full power, its minimum dyn (throttle
// floor) and its attributed idle share, in mW, on the given nodes.
func (ps *powerState) jobDemand(c *Cluster, s *JobSpec, nodes []NodeID) (full, least, idle int64) {
	for r, n := range nodes {
		m := c.NodeModel(n)
		g := int64(s.ReplicaGPUs(r)) * int64(s.GPUMilli)
		full += ps.dynMW[m] * g / 1000
		least += min(ps.minMW[m], ps.dynMW[m]) * g / 1000
		idle += ps.idleMW[m] * g / 1000
	}
	return full, least, idle
}

// mayFit is a placement-free necessary condition for fits: false when job s
// cannot start under the cap on any nodes of any model it allows.
func (ps *powerState) mayFit(c *Cluster, s *JobSpec) bool {
	if ps.capMW == 0 || s.GPUsPerReplica == 0 {
		return true
	}
	least := int64(math.MaxInt64)
	for m := range ps.dynMW {
		if c.ModelCapacity(m) == 0 || !s.AllowsModel(c.Models()[m]) {
			continue
		}
		d := ps.dynMW[m]
		if ps.cfg.Mode == PowerCapThrottle {
			d = min(ps.minMW[m], d)
		}
		least = min(least, d)
	}
	if least == math.MaxInt64 {
		return true
	}
	// jobDemand floors per replica: subtract one mW per replica to stay below it.
	need := least*int64(s.GPUsPerReplica)*int64(s.GPUMilli)/1000*int64(s.Replicas) - int64(s.Replicas)
	if s.Unequal() { // the last replica floors on its own, smaller share
		need -= least*int64(s.GPUsPerReplica)*int64(s.GPUMilli)/1000 - least*int64(s.LastReplicaGPUs)*int64(s.GPUMilli)/1000
	}
	return ps.baseMW+ps.dynSum+need <= ps.capMW
}

// fits reports whether job s can start on nodes under the cap now.
func (ps *powerState) fits(c *Cluster, s *JobSpec, nodes []NodeID) bool {
	if ps.capMW == 0 || s.GPUsPerReplica == 0 {
		return true
	}
	full, least, _ := ps.jobDemand(c, s, nodes)
	need := full
	if ps.cfg.Mode == PowerCapThrottle {
		need = least
	}
	return ps.baseMW+ps.dynSum+need <= ps.capMW
}

// start charges job j's run (placement already applied) and returns the speed
// factor of its power limit (1 unless throttled). An error means the start
// breaks the cap.
func (e *Engine) powerStart(j *Job) (float64, error) {
	ps := e.pow
	full, least, idle := ps.jobDemand(e.cluster, &j.Spec, j.Nodes)
	dyn, speed := full, 1.0
	if ps.capMW > 0 && full > 0 {
		head := ps.capMW - ps.baseMW - ps.dynSum
		if ps.cfg.Mode == PowerCapAdmit && full > head {
			return 0, fmt.Errorf("power cap: the job needs %.1f W at full power, %.1f W of the %.1f W cap is free", float64(full)/1000, float64(head)/1000, float64(ps.capMW)/1000)
		}
		if full > head {
			if least > head {
				return 0, fmt.Errorf("power cap: the job needs at least %.1f W (minimum power limits), %.1f W of the %.1f W cap is free", float64(least)/1000, float64(head)/1000, float64(ps.capMW)/1000)
			}
			dyn = head
			speed = math.Pow(float64(head)/float64(full), ps.k)
			ps.stats.Throttled++
		}
	}
	r := j.Ref
	ps.dynSum += dyn
	ps.jobDyn[r], ps.jobMW[r], ps.since[r] = dyn, dyn+idle, e.now
	if w := float64(dyn+idle) / 1000; w > ps.stats.JobPeakW[r] {
		ps.stats.JobPeakW[r] = w
	}
	if w := float64(ps.baseMW+ps.dynSum) / 1000; w > ps.stats.PeakW {
		ps.stats.PeakW = w
	}
	q := ps.jobQ[r]
	ps.qMW[q] += dyn + idle
	if w := float64(ps.qMW[q]) / 1000; w > ps.stats.QueuePeakW[q] {
		ps.stats.QueuePeakW[q] = w
	}
	return speed, nil
}

// powerStop closes job j's current run at now.
func (e *Engine) powerStop(j *Job) {
	ps := e.pow
	r := j.Ref
	w := float64(ps.jobMW[r]) / 1000
	ps.stats.JobEnergyJ[r] += w * Duration(e.now-ps.since[r]).Seconds()
	if cs := ps.cfg.Carbon; cs != nil {
		ps.stats.JobCarbonG[r] += cs.GramsCO2(w, ps.since[r], e.now)
	}
	ps.dynSum -= ps.jobDyn[r]
	ps.qMW[ps.jobQ[r]] -= ps.jobMW[r]
	ps.jobDyn[r], ps.jobMW[r] = 0, 0
}

// powerAdvance integrates the cluster draw over [now, t).
func (e *Engine) powerAdvance(t Time) {
	ps := e.pow
	w := float64(ps.baseMW+ps.dynSum) / 1000
	ps.stats.EnergyJ += w * Duration(t-e.now).Seconds()
	if cs := ps.cfg.Carbon; cs != nil {
		ps.stats.CarbonG += cs.GramsCO2(w, e.now, t)
	}
}

// powerClose closes the runs of jobs still running at the end of the run and
// returns the stats.
func (e *Engine) powerClose() *PowerStats {
	for _, j := range e.running {
		e.powerStop(j)
	}
	st := e.pow.stats
	return &st
}

// PowerOn reports whether the run accounts power (Config.Power set).
func (v *View) PowerOn() bool { return v.e.pow != nil }

// PowerFits reports whether pending job j may start on nodes (one per replica)
// under the power cap right now: always true without a cap. In throttle mode it
// is true when the job's minimum power fits (it may then start throttled).
func (v *View) PowerFits(j *Job, nodes []NodeID) bool {
	return v.e.pow == nil || v.e.pow.fits(v.e.cluster, &j.Spec, nodes)
}

// PowerMayFit is a quick test before placement: false when pending job j
// cannot start under the power cap now whatever its placement (then
// PowerFits is false for every placement); true without a cap.
func (v *View) PowerMayFit(j *Job) bool {
	return v.e.pow == nil || v.e.pow.mayFit(v.e.cluster, &j.Spec)
}

// PowerDrawW returns the cluster's current draw in watts (0 without power).
func (v *View) PowerDrawW() float64 {
	if v.e.pow == nil {
		return 0
	}
	return float64(v.e.pow.baseMW+v.e.pow.dynSum) / 1000
}

// Carbon returns the run's carbon intensity series (nil without one). It is a
// forecast policies may read (the series is treated as known in advance).
func (v *View) Carbon() *CarbonSeries {
	if v.e.pow == nil {
		return nil
	}
	return v.e.pow.cfg.Carbon
}

// HonorsPowerCap is implemented by policies that check View.PowerFits before
// every start, so they can run under a power cap.
type HonorsPowerCap interface {
	HonorsPowerCap() bool
}
