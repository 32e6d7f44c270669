package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Telemetry stragglers (docs/telemetry.md). A node's GPUs can run slow for a
// while (thermal or power-brake clock throttling): a degradation episode sets
// the node's clock factor to Clock < 1 from At for Duration. Overlapping
// episodes of one node combine by the minimum. A synchronous gang (data or
// model parallel, one step at a time) runs at its slowest member's speed, so a
// running job's speed is its speed without telemetry (speed model × power
// throttle) times the minimum clock factor over its nodes. When a node's factor
// changes, every running job on it is cut into a new run segment at the new
// speed, keeping its work, its checkpoint and the rest of a restore or
// checkpoint save in progress. Without Config.Telemetry none of this code runs
// and no output changes.

// Degradation is one episode of a node running slow.
type Degradation struct {
	At       Time
	Duration Duration
	Node     NodeID
	// Clock is the node's clock factor during the episode, in (0, 1]: its GPUs
	// run at Clock × their normal speed.
	Clock float64
	// ECC, when > 1, multiplies the node's failure hazard during the episode
	// (TelemetryConfig.ECC; uncorrected ECC errors precede GPU memory failures).
	ECC float64
}

// DegradationSource yields episodes in nondecreasing At order; Next returns
// false when there are no more. A run consumes it, so each engine needs its own.
type DegradationSource interface {
	Next() (Degradation, bool)
}

// TelemetryConfig turns on telemetry stragglers (Config.Telemetry).
type TelemetryConfig struct {
	Source DegradationSource
	// ECC couples episodes with ECC > 1 to failure injection (Config.Failures
	// required; ignored without it): during such an episode node n fails, on
	// top of its failure processes, at the extra rate (ECC − 1) / NodeMTBF[n],
	// each failure a node incident (Cause "telemetry/ecc") repaired after a
	// draw of Repair. Draws (time to failure, then repair, per ECC episode at
	// its start) use the RNG stream "telemetry/ecc" of Config.Seed.
	ECC *ECCCoupling
}

// ECCCoupling is TelemetryConfig.ECC.
type ECCCoupling struct {
	NodeMTBF []Duration // per node: the MTBF of its node failure process
	Repair   Dist
}

// TelemetryStats is Result.Telemetry: what the stragglers cost.
type TelemetryStats struct {
	Episodes int64 // episodes that began within the run
	// DegradedNodeSeconds integrates the nodes with a clock factor < 1.
	DegradedNodeSeconds float64
	// SlowedGPUSeconds integrates the GPUs (× share) of running jobs whose gang
	// factor is < 1: GPU time spent in a straggling gang.
	SlowedGPUSeconds float64
	// LostGPUSeconds integrates GPUs × (1 − gang factor): the GPU time the
	// stragglers turned into no work (a gang at factor 0.8 for an hour on 8
	// GPUs loses 1.6 GPU-hours).
	LostGPUSeconds float64
	// JobsSlowed counts the jobs that ran at a gang factor < 1 at some time.
	JobsSlowed int64
	// Resegments counts the run segments cut by clock changes.
	Resegments int64
	// ECCFailures counts the node failures the ECC hazard added (started
	// incidents; a failure drawn while the node was already out is dropped).
	ECCFailures int64
	// JobSlowed is per job (JobRef order): whether it ever ran slowed.
	JobSlowed []bool
}

type telState struct {
	cfg     *TelemetryConfig
	next    Degradation
	hasNext bool
	eps     []Degradation // episodes begun, by index (qDegradeEnd's job)
	active  [][]int32     // per node: indices of its episodes in effect
	clock   []float64     // per node: clock factor (1 when healthy)
	nDeg    int           // nodes with clock < 1
	base    []float64     // per job: speed without the clock factor
	fac     []float64     // per job: gang factor of its current run
	ck0     []Duration    // per job: checkpointed work at its segment's start
	slowM   int64         // Σ milli-GPUs of running jobs with fac < 1
	lossM   float64       // Σ milli-GPUs × (1 − fac) of running jobs
	lastT   Time
	idle    int
	refs    []JobRef
	ecc     *rand.Rand
	eccRep  []Duration // per episode: the repair of its ECC failure
	stats   TelemetryStats
}

const (
	qDegradeEnd   uint8 = 6 // an episode ends (job = episode index)
	qDegradeBegin uint8 = 7 // the next episode begins (telState.next)
	qECCFail      uint8 = 8 // an ECC-driven node failure (job = episode index)
)

func (e *Engine) initTelemetry() error {
	tc := e.cfg.Telemetry
	if tc.Source == nil {
		return errors.New("sim: telemetry without a source")
	}
	if e.cfg.Sharing != nil {
		return errors.New("sim: telemetry stragglers are not supported with device-level GPU sharing")
	}
	nn := e.cluster.NumNodes()
	t := &telState{cfg: tc, active: make([][]int32, nn), clock: make([]float64, nn),
		base: make([]float64, len(e.jobs)), fac: make([]float64, len(e.jobs)), ck0: make([]Duration, len(e.jobs))}
	for i := range t.clock {
		t.clock[i] = 1
	}
	t.stats.JobSlowed = make([]bool, len(e.jobs))
	if ec := tc.ECC; ec != nil && e.cfg.Failures != nil {
		if len(ec.NodeMTBF) != nn {
			return fmt.Errorf("sim: telemetry ECC coupling has %d node MTBFs for %d nodes", len(ec.NodeMTBF), nn)
		}
		t.ecc = Stream(e.cfg.Seed, "telemetry/ecc")
	}
	e.tel = t
	e.pullDegradation()
	return nil
}

func (e *Engine) pullDegradation() {
	t := e.tel
	d, ok := t.cfg.Source.Next()
	t.hasNext = ok
	if !ok {
		return
	}
	d.At = max(d.At, e.now)
	t.next = d
	e.seq++
	e.q.push(qitem{t: d.At, kind: qDegradeBegin, seq: e.seq})
}

// telemetryOnly reports whether the queue's next event is a telemetry event
// that can no longer matter: every job arrived and none runs, and no job is
// pending or nothing could change for it (no node degraded and no repair
// outstanding), or many such events passed idle.
func (e *Engine) telemetryOnly() bool {
	t := e.tel
	if e.q.Len() == 0 || e.nextArr < len(e.jobs) || len(e.running) > 0 {
		return false
	}
	if k := e.q.top().kind; k < qDegradeEnd || k > qECCFail {
		return false
	}
	if e.pendN == 0 || t.nDeg == 0 && (e.fail == nil || e.fail.open == 0) {
		return true
	}
	return t.idle > 100_000
}

// sideEvent applies a popped failure or telemetry event.
func (e *Engine) sideEvent(it qitem) error {
	if it.kind >= qDegradeEnd {
		return e.telEvent(it)
	}
	return e.failEvent(it)
}

// telEvent applies a popped episode begin or end.
func (e *Engine) telEvent(it qitem) error {
	t := e.tel
	e.events++
	if len(e.running) == 0 && e.nextArr >= len(e.jobs) {
		t.idle++
	} else {
		t.idle = 0
	}
	if it.kind == qECCFail {
		d := &t.eps[it.job]
		if e.fail.nodeHeld(d.Node) {
			return nil // already out of service
		}
		t.stats.ECCFailures++
		return e.incident(Incident{At: e.now, Repair: t.eccRep[it.job], GPU: -1, Nodes: []NodeID{d.Node}, Cause: "telemetry/ecc"})
	}
	if it.kind == qDegradeEnd {
		d := &t.eps[it.job]
		l := t.active[d.Node]
		if i := slices.Index(l, int32(it.job)); i >= 0 {
			t.active[d.Node] = slices.Delete(l, i, i+1)
		}
		return e.setClock(d.Node)
	}
	d := t.next
	e.pullDegradation()
	if d.Node < 0 || int(d.Node) >= e.cluster.NumNodes() {
		return fmt.Errorf("telemetry episode at t=%s: node %d out of range", d.At, d.Node)
	}
	if !(d.Clock > 0 && d.Clock <= 1) || d.ECC < 0 || math.IsNaN(d.ECC) || math.IsInf(d.ECC, 0) {
		return fmt.Errorf("telemetry episode at t=%s on node %s: clock factor %v not in (0, 1] or ECC multiplier %v not finite and >= 0", d.At, e.cluster.nodes[d.Node].Name, d.Clock, d.ECC)
	}
	if d.Duration <= 0 {
		return nil
	}
	idx := len(t.eps)
	t.eps = append(t.eps, d)
	t.stats.Episodes++
	t.active[d.Node] = append(t.active[d.Node], int32(idx))
	e.seq++
	e.q.push(qitem{t: d.At.Add(d.Duration), kind: qDegradeEnd, seq: e.seq, job: JobRef(idx)})
	if t.ecc != nil {
		t.eccRep = append(t.eccRep, 0)
		if d.ECC > 1 {
			ttf := Dist{Kind: DistExponential, Mean: Duration(float64(t.cfg.ECC.NodeMTBF[d.Node]) / (d.ECC - 1))}.Sample(t.ecc)
			t.eccRep[idx] = t.cfg.ECC.Repair.Sample(t.ecc)
			if ttf < d.Duration {
				e.seq++
				e.q.push(qitem{t: d.At.Add(ttf), kind: qECCFail, seq: e.seq, job: JobRef(idx)})
			}
		}
	}
	return e.setClock(d.Node)
}

// setClock recomputes node n's clock factor from its active episodes and
// re-speeds the running jobs on n whose gang factor changed (in JobRef order).
func (e *Engine) setClock(n NodeID) error {
	t := e.tel
	t.integrate(e.now)
	f := 1.0
	for _, i := range t.active[n] {
		f = min(f, t.eps[i].Clock)
	}
	old := t.clock[n]
	if f == old {
		return nil
	}
	if old < 1 {
		t.nDeg--
	}
	if f < 1 {
		t.nDeg++
	}
	t.clock[n] = f
	t.refs = t.refs[:0]
	for _, j := range e.running {
		if slices.Contains(j.Nodes, n) {
			t.refs = append(t.refs, j.Ref)
		}
	}
	slices.Sort(t.refs)
	for _, r := range t.refs {
		j := &e.jobs[r]
		if g := e.gangClock(j); g != t.fac[r] {
			if err := e.respeed(j, g); err != nil {
				return err
			}
		}
	}
	return nil
}

// gangClock is the minimum clock factor over j's nodes.
func (e *Engine) gangClock(j *Job) float64 {
	f := 1.0
	for _, n := range j.Nodes {
		f = min(f, e.tel.clock[n])
	}
	return f
}

// integrate accrues the telemetry metrics up to now.
func (t *telState) integrate(now Time) {
	if now <= t.lastT {
		return
	}
	dt := float64(now-t.lastT) / 1e6
	t.stats.DegradedNodeSeconds += float64(t.nDeg) * dt
	t.stats.SlowedGPUSeconds += float64(t.slowM) / 1000 * dt
	t.stats.LostGPUSeconds += t.lossM / 1000 * dt
	t.lastT = now
}

func milliGPUs(j *Job) int64 { return int64(j.Spec.TotalGPUs()) * int64(j.Spec.GPUMilli) }

// account adds (sign > 0) or removes j's gang factor from the running sums.
func (t *telState) account(j *Job, sign int64) {
	f := t.fac[j.Ref]
	if f >= 1 {
		return
	}
	m := milliGPUs(j)
	t.slowM += sign * m
	t.lossM += float64(sign*m) * (1 - f)
	if sign > 0 && !t.stats.JobSlowed[j.Ref] {
		t.stats.JobSlowed[j.Ref] = true
		t.stats.JobsSlowed++
	}
}

// telStart applies the gang factor to a job being started (j.speed is its
// speed without telemetry).
func (e *Engine) telStart(j *Job) {
	t := e.tel
	t.integrate(e.now)
	t.base[j.Ref] = j.speed
	t.ck0[j.Ref] = j.Done
	f := e.gangClock(j)
	t.fac[j.Ref] = f
	j.speed *= f
	t.account(j, +1)
}

// telStop removes a stopping job from the running sums.
func (e *Engine) telStop(j *Job) {
	e.tel.integrate(e.now)
	e.tel.account(j, -1)
}

// telRecovered re-applies the gang factor after a fault-tolerant recovery
// moved j's replicas (newBase: the speed model re-evaluated j's speed; the
// power throttle is not re-applied, as failures.go does). The recovery's new
// segment keeps all work, so it is also the segment's checkpoint.
func (e *Engine) telRecovered(j *Job, newBase bool) {
	t := e.tel
	t.integrate(e.now)
	t.account(j, -1)
	if newBase {
		t.base[j.Ref] = j.speed
	}
	f := e.gangClock(j)
	t.fac[j.Ref] = f
	j.speed = t.base[j.Ref] * f
	t.ck0[j.Ref] = j.runDone
	t.account(j, +1)
}

// respeed cuts running job j's run at now into a new segment at gang factor
// f: the work done so far is kept (as in a fault-tolerant recovery, but with
// no pause and no events), the checkpoint stays the last one saved, and the
// rest of a restore or a checkpoint save in progress is paid at the start of
// the new segment.
func (e *Engine) respeed(j *Job, f float64) error {
	t := e.tel
	sp := &j.Spec
	el := Duration(e.now - j.LastStart)
	done, ckpt, ovh := e.runProgress(j, el)
	rest := max(0, j.runRestore-el) // restore left
	if iv, c := e.ivOf(j), e.cfg.CheckpointSave; rest == 0 && iv > 0 && c > 0 && done > j.runDone && done > ckpt && done < sp.Duration && done%iv == 0 {
		// saving the checkpoint at done: ovh holds the restore, the saves
		// completed in this segment and the elapsed part of this one; the rest
		// of it opens the next segment
		saved := Duration(0)
		if ckpt > j.runDone {
			saved = (ckpt/iv - j.runDone/iv) * c
		}
		rest = max(0, c-(ovh-j.runRestore-saved))
	}
	t.integrate(e.now)
	t.account(j, -1)
	j.Overhead += ovh
	j.Wasted += ovh // all work is kept: only the restore and save time is lost
	if ckpt > t.ck0[j.Ref] {
		t.ck0[j.Ref] = ckpt
	}
	j.usedWall += el
	j.Done = done
	t.fac[j.Ref] = f
	j.speed = t.base[j.Ref] * f
	t.account(j, +1)
	t.stats.Resegments++
	j.LastStart, j.runDone, j.runRestore = e.now, done, rest
	e.queueEnd(j) // the old end event becomes stale
	return nil
}

// segCkpt is the checkpointed work at the start of j's current run segment
// (j.runDone unless telemetry cut the run into segments).
func (e *Engine) segCkpt(j *Job) Duration {
	if e.tel != nil {
		return e.tel.ck0[j.Ref]
	}
	return j.runDone
}

func (e *Engine) finishTelemetry(end Time) *TelemetryStats {
	t := e.tel
	t.integrate(end)
	st := t.stats
	return &st
}

// NodeClock returns node n's clock factor now (1 when healthy or without
// telemetry).
func (v *View) NodeClock(n NodeID) float64 {
	if v.e.tel == nil {
		return 1
	}
	return v.e.tel.clock[n]
}

// NodeDegraded reports whether node n runs slow now (clock factor < 1).
func (v *View) NodeDegraded(n NodeID) bool {
	return v.e.tel != nil && v.e.tel.clock[n] < 1
}

// DegradedNodes returns how many nodes run slow now.
func (v *View) DegradedNodes() int {
	if v.e.tel == nil {
		return 0
	}
	return v.e.tel.nDeg
}

// DegradationList serves a fixed list of episodes (a replay, a test).
type DegradationList struct {
	eps []Degradation
	i   int
}

// NewDegradationList sorts a copy of eps by (At, Node, Duration, Clock, ECC),
// so that the run does not depend on the input order, and serves it.
func NewDegradationList(eps []Degradation) *DegradationList {
	l := &DegradationList{eps: slices.Clone(eps)}
	slices.SortFunc(l.eps, func(a, b Degradation) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Node, b.Node), cmp.Compare(a.Duration, b.Duration),
			cmp.Compare(a.Clock, b.Clock), cmp.Compare(a.ECC, b.ECC))
	})
	return l
}

// Next implements DegradationSource.
func (l *DegradationList) Next() (Degradation, bool) {
	if l.i >= len(l.eps) {
		return Degradation{}, false
	}
	l.i++
	return l.eps[l.i-1], true
}

// DegradationModel draws episodes: each node independently starts episodes as
// a Poisson process of mean inter-arrival Every (the superposition over Nodes
// is one Poisson process of rate len(Nodes)/Every with the node drawn
// uniformly), each lasting a draw of Duration at a clock factor uniform in
// [ClockMin, ClockMax].
type DegradationModel struct {
	Nodes    []NodeID
	Every    Duration
	Duration Dist
	ClockMin float64
	ClockMax float64
	ECC      float64 // every episode's ECC hazard multiplier (Degradation.ECC)
}

// DegradationGenerator is a DegradationSource drawing from a DegradationModel
// with the RNG stream "telemetry/episodes" of the run's seed.
type DegradationGenerator struct {
	m   DegradationModel
	rng *rand.Rand
	t   float64 // µs
}

// NewDegradationGenerator checks m and returns its generator.
func NewDegradationGenerator(seed uint64, m DegradationModel) (*DegradationGenerator, error) {
	if len(m.Nodes) == 0 {
		return nil, errors.New("degradation model: no nodes")
	}
	if m.Every <= 0 {
		return nil, errors.New("degradation model: every must be > 0")
	}
	if !(m.ClockMin > 0 && m.ClockMin <= m.ClockMax && m.ClockMax <= 1) {
		return nil, fmt.Errorf("degradation model: clock range [%v, %v] must satisfy 0 < min <= max <= 1", m.ClockMin, m.ClockMax)
	}
	return &DegradationGenerator{m: m, rng: Stream(seed, "telemetry/episodes")}, nil
}

// Next implements DegradationSource. Draw order per episode: inter-arrival,
// node, duration, clock factor.
func (g *DegradationGenerator) Next() (Degradation, bool) {
	m := &g.m
	u := 1 - g.rng.Float64()
	g.t += -float64(m.Every) / float64(len(m.Nodes)) * math.Log(u)
	if g.t > float64(Never)/4 {
		return Degradation{}, false
	}
	n := m.Nodes[g.rng.IntN(len(m.Nodes))]
	d := m.Duration.Sample(g.rng)
	c := m.ClockMin + (m.ClockMax-m.ClockMin)*g.rng.Float64()
	return Degradation{At: Time(g.t), Duration: d, Node: n, Clock: c, ECC: m.ECC}, true
}
