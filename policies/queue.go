package policies

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// order is the queue order of a queue policy.
type order uint8

const (
	orderFIFO     order = iota // (submit, id)
	orderPriority              // priority desc, then (submit, id)
	orderSJF                   // walltime estimate asc, then (submit, id)
)

type backfillMode uint8

const (
	bfNone backfillMode = iota
	bfEASY
	bfConservative
)

// QueueParams are the parameters shared by the queue policies.
type QueueParams struct {
	// Placement is any placement of package placement (placement.New): first-fit
	// (default), best-fit, spread, the topology-aware ones or the FGD family.
	Placement string `yaml:"placement"`
	// Strict: when the next job in queue order does not fit, stop (head-of-line
	// blocking, the default for fifo/priority/sjf); when false, skip it and try later jobs.
	Strict *bool `yaml:"strict"`
	// Window (backfill): only running jobs expected to end within now+window count
	// towards a reservation; a job whose reservation would start later gets none
	// (Slurm bf_window; 0 = unlimited, the default).
	Window Dur `yaml:"window"`
	// MaxJobsTest (backfill): how many pending jobs after the head one backfill pass
	// examines (Slurm bf_max_job_test; default 500 for easy, 100 for conservative).
	MaxJobsTest int `yaml:"maxJobsTest"`
	// Resolution (backfill): expected end times are rounded up to a multiple of this
	// (Slurm bf_resolution; default 0 = exact).
	Resolution Dur `yaml:"resolution"`
	// AvoidDegraded: place no job on a node that runs slow now (telemetry
	// stragglers, docs/telemetry.md; sim.View.NodeDegraded). The jobs running
	// there stay. Without a telemetry: block no node is degraded.
	AvoidDegraded bool `yaml:"avoidDegraded"`
	// Forecast, when set, holds GPUs for imminent large gangs (prospective
	// scheduling, docs/forecast.md; not with conservative-backfill).
	Forecast *ForecastParams `yaml:"forecast"`
}

func init() {
	reg := func(name, summary, params string, o order, bf backfillMode) {
		Register(Info{Name: name, Summary: summary, Params: params}, func(n *yaml.Node, _ Env) (sim.Policy, error) {
			var p QueueParams
			if err := DecodeParams(n, &p); err != nil {
				return nil, err
			}
			return newQueuePolicy(name, o, bf, p)
		})
	}
	const basic = "placement: first-fit|best-fit|spread|topology-best-fit|tas|hived|binpack|fgd (gpusim policies lists them); strict: true|false; avoidDegraded: true|false; forecast: {minGPUs, horizon, decay, by, history, queue} (off)"
	const bfp = "placement; window (0=unlimited); maxJobsTest; resolution; avoidDegraded; forecast (easy only)"
	reg("fifo", "First come, first served with strict head-of-line blocking: nothing starts while the oldest job waits.", basic, orderFIFO, bfNone)
	reg("priority", "Highest priority first (then submit time); strict head-of-line blocking unless strict: false.", basic, orderPriority, bfNone)
	reg("sjf", "Shortest job first by the walltime estimate (never the true duration unless oracle); blocking unless strict: false.", basic, orderSJF, bfNone)
	reg("easy-backfill", "FIFO plus EASY backfill (Slurm semantics with one reservation): later jobs start only if they do not delay the head job's reservation.", bfp, orderFIFO, bfEASY)
	reg("conservative-backfill", "FIFO plus conservative backfill: every examined job gets a reservation; a job starts early only if it delays none of them (GPU-count profile per model).", bfp, orderFIFO, bfConservative)
}

type queuePolicy struct {
	name    string
	order   order
	strict  bool
	bf      backfillMode
	placer  placement.Placer
	window  sim.Duration
	maxTest int
	res     sim.Duration

	prepC *sim.Cluster // cluster the placer was prepared for (placement.Prepare)

	// avoid (QueueParams.AvoidDegraded): while some node is degraded, pl.Allow
	// is allowFn, which refuses them (through view, the current View).
	avoid   bool
	view    *sim.View
	allowFn func(sim.NodeID) bool

	// hold, when set, is asked first about every pending job of the main pass:
	// true keeps the job pending (it recorded its reason) without blocking the
	// jobs behind it (the carbon-aware policy).
	hold func(v *sim.View, p *sim.Plan, j *sim.Job) bool
	// fc (QueueParams.Forecast) holds GPUs for imminent large gangs.
	fc *forecast

	pq  *jobHeap // pending, for non-FIFO orders
	run *jobHeap // running, by (estimated end, ref), for backfill
	pl  placement.Placement

	started []*sim.Job
	// backfill scratch, indexed by node
	extraMilli []sim.MilliGPU // by GPU
	touchedN   []bool         // by node
	nodesTmp   []sim.NodeID
	beforeTmp  []int64
	extraCPU   []int64
	extraMem   []int64
	touched    []sim.NodeID
	hostC      []int64 // per model: replicas of the head that fit at the shadow time
	prof       profile
	profs      []profile
}

func newQueuePolicy(name string, o order, bf backfillMode, p QueueParams) (*queuePolicy, error) {
	var errs []error // every problem is reported
	pl, err := placement.New(p.Placement)
	if err != nil {
		errs = append(errs, fmt.Errorf("placement: %w", err))
	}
	q := &queuePolicy{name: name, order: o, bf: bf, placer: pl, strict: true,
		window: sim.Duration(p.Window), maxTest: p.MaxJobsTest, res: sim.Duration(p.Resolution)}
	if p.Strict != nil {
		q.strict = *p.Strict
	}
	if p.AvoidDegraded {
		q.avoid = true
		q.allowFn = func(n sim.NodeID) bool { return !q.view.NodeDegraded(n) }
	}
	if bf != bfNone && !q.strict {
		errs = append(errs, fmt.Errorf("strict: backfill policies are strict by definition"))
	}
	if p.Forecast != nil {
		if bf == bfConservative {
			errs = append(errs, fmt.Errorf("forecast: not supported with conservative-backfill"))
		}
		fc, err := newForecast(p.Forecast)
		if err != nil {
			errs = append(errs, err)
		}
		q.fc = fc
	}
	if p.MaxJobsTest < 0 {
		errs = append(errs, fmt.Errorf("maxJobsTest: must be >= 0"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if q.maxTest == 0 {
		q.maxTest = 500
		if bf == bfConservative {
			q.maxTest = 100
		}
	}
	return q, nil
}

func (q *queuePolicy) Name() string { return q.name }

func (q *queuePolicy) less(a, b *sim.Job) bool {
	switch q.order {
	case orderPriority:
		if a.Spec.Priority != b.Spec.Priority {
			return a.Spec.Priority > b.Spec.Priority
		}
	case orderSJF:
		if a.Estimate != b.Estimate {
			return a.Estimate < b.Estimate
		}
	}
	return a.Ref < b.Ref // Ref order is (submit, id)
}

func (q *queuePolicy) estEnd(j *sim.Job) sim.Time {
	t := j.EstimatedEnd()
	if q.res > 1 && t != sim.Never {
		t = sim.Time((int64(t) + int64(q.res) - 1) / int64(q.res) * int64(q.res))
	}
	return t
}

func (q *queuePolicy) init(v *sim.View) {
	if q.order != orderFIFO && q.pq == nil {
		q.pq = newJobHeap(v.NumJobs(), q.less)
	}
	if q.bf != bfNone && q.run == nil {
		q.run = newJobHeap(v.NumJobs(), func(a, b *sim.Job) bool {
			ea, eb := q.estEnd(a), q.estEnd(b)
			if ea != eb {
				return ea < eb
			}
			return a.Ref < b.Ref
		})
		n := v.Cluster().NumNodes()
		q.extraMilli = make([]sim.MilliGPU, v.Cluster().NumGPUs())
		q.touchedN = make([]bool, n)
		q.extraCPU = make([]int64, n)
		q.extraMem = make([]int64, n)
		q.hostC = make([]int64, len(v.Cluster().Models()))
	}
}

// Observe keeps the pending and running indexes in step with the engine.
func (q *queuePolicy) Observe(v *sim.View, e sim.Event) {
	q.init(v)
	j := v.Job(e.Job)
	switch e.Kind {
	case sim.EvArrive:
		if q.pq != nil {
			q.pq.push(j)
		}
		if q.fc != nil {
			q.fc.arrive(v, j)
		}
	case sim.EvStart:
		if q.pq != nil {
			q.pq.remove(j)
		}
		if q.run != nil {
			q.run.push(j)
		}
	case sim.EvPreempt:
		if q.run != nil {
			q.run.remove(j)
		}
		if q.pq != nil {
			q.pq.push(j)
		}
	case sim.EvFinish, sim.EvKill, sim.EvTimeout:
		if q.run != nil {
			q.run.remove(j)
		}
	}
}

// eachPending visits pending jobs in queue order; f may start the visited job.
func (q *queuePolicy) eachPending(v *sim.View, f func(*sim.Job) bool) {
	if q.pq == nil {
		for j := v.PendingHead(); j != nil; {
			next := v.NextPending(j)
			if !f(j) {
				return
			}
			j = next
		}
		return
	}
	q.pq.each(f)
}

func (q *queuePolicy) start(p *sim.Plan, j *sim.Job) error {
	if err := p.AddStart(j.Ref, q.pl.Nodes, q.pl.GPUs); err != nil {
		return err
	}
	q.started = append(q.started, j)
	return nil
}

// powerHeld reports (and records as the job's wait reason) that placed job j
// may not start under the run's power cap (sim.View.PowerFits on q.pl).
func (q *queuePolicy) powerHeld(v *sim.View, p *sim.Plan, j *sim.Job) bool {
	if v.PowerFits(j, q.pl.Nodes) {
		return false
	}
	p.Wait(j.Ref, sim.ReasonPowerCap)
	return true
}

// HonorsPowerCap: every start of a queue policy is checked with View.PowerFits.
func (q *queuePolicy) HonorsPowerCap() bool { return true }

// settle moves this call's starts into the policy's own indexes now (the engine's
// notifications arrive after Schedule returns and are then no-ops).
func (q *queuePolicy) settle() {
	for _, j := range q.started {
		if q.pq != nil {
			q.pq.remove(j)
		}
		if q.run != nil {
			q.run.push(j)
		}
	}
	q.started = q.started[:0]
}

func (q *queuePolicy) Schedule(v *sim.View, p *sim.Plan) error {
	q.init(v)
	if q.avoid {
		q.view, q.pl.Allow = v, nil
		if v.DegradedNodes() > 0 {
			q.pl.Allow = q.allowFn
		}
	}
	c := v.Cluster()
	if q.prepC != c {
		if err := placement.Prepare(q.placer, v); err != nil {
			return err
		}
		q.prepC = c
	}
	var head *sim.Job
	var err error
	if q.fc != nil {
		q.fc.plan(q, v, p)
		defer q.fc.settle(v, p)
	}
	q.eachPending(v, func(j *sim.Job) bool {
		if q.hold != nil && q.hold(v, p, j) {
			return true // held by the policy (carbon-aware): does not block the queue
		}
		if q.fc != nil && q.fc.held(v, p, j) {
			return true // would take GPUs held for a large gang: does not block the queue
		}
		if !v.PowerMayFit(j) { // no placement can fit the cap: skip the search
			p.Wait(j.Ref, sim.ReasonPowerCap)
			if q.strict {
				head = j
				return false
			}
			return true
		}
		if q.placer.Place(c, j, &q.pl) {
			if q.powerHeld(v, p, j) {
				if q.strict {
					head = j
					return false
				}
				return true
			}
			if err = q.start(p, j); err != nil {
				return false
			}
			return true
		}
		p.Wait(j.Ref, placement.WhyNot(c, j))
		if q.strict {
			head = j
			return false
		}
		return true
	})
	q.settle()
	if err != nil || head == nil || q.bf == bfNone {
		return err
	}
	if q.bf == bfEASY {
		err = q.easy(v, p, head)
	} else {
		err = q.conservative(v, p, head)
	}
	q.settle()
	return err
}

// projFree returns node n's whole free GPUs in the projected state (live state
// with the milli-GPU in extraMilli given back).
func (q *queuePolicy) projFree(c *sim.Cluster, n sim.NodeID) int32 {
	if !q.touchedN[n] {
		return c.NodeFreeGPUs(n)
	}
	var k int32
	first, end := c.NodeGPUs(n)
	for g := first; g < end; g++ {
		if c.GPUUsed(g)-q.extraMilli[g] <= 0 {
			k++
		}
	}
	return k
}

// host returns how many replicas of s node n could take in the projected state,
// minus dGPU whole GPUs and dCPU/dMem.
func (q *queuePolicy) host(c *sim.Cluster, n sim.NodeID, s *sim.JobSpec, dGPU int32, dCPU, dMem int64) int64 {
	k := int64(1 << 40)
	if g := s.GPUsPerReplica; g > 0 {
		k = int64(q.projFree(c, n)-dGPU) / int64(g)
	}
	if s.CPUMilli > 0 {
		k = min(k, (c.NodeFreeCPU(n)+q.extraCPU[n]-dCPU)/s.CPUMilli)
	}
	if s.MemoryMiB > 0 {
		k = min(k, (c.NodeFreeMemory(n)+q.extraMem[n]-dMem)/s.MemoryMiB)
	}
	return max(k, 0)
}

func (q *queuePolicy) touch(n sim.NodeID) {
	if !q.touchedN[n] {
		q.touchedN[n] = true
		q.touched = append(q.touched, n)
	}
}

func (q *queuePolicy) clearExtras(c *sim.Cluster) {
	for _, n := range q.touched {
		q.extraCPU[n], q.extraMem[n] = 0, 0
		q.touchedN[n] = false
		first, end := c.NodeGPUs(n)
		for g := first; g < end; g++ {
			q.extraMilli[g] = 0
		}
	}
	q.touched = q.touched[:0]
}

// giveBack adds job j's current resources to the projected state (it will have
// ended by the shadow time), updating the head's per-model replica counts.
func (q *queuePolicy) giveBack(c *sim.Cluster, hs *sim.JobSpec, nodes []sim.NodeID, gpus []sim.GPUID, js *sim.JobSpec, updateC bool) {
	g := int(js.GPUsPerReplica)
	q.nodesTmp = q.nodesTmp[:0]
	for _, n := range nodes {
		if !containsNode(q.nodesTmp, n) {
			q.nodesTmp = append(q.nodesTmp, n)
		}
	}
	if len(q.beforeTmp) < len(q.nodesTmp) {
		q.beforeTmp = make([]int64, len(q.nodesTmp)*2)
	}
	for i, n := range q.nodesTmp {
		if m := c.NodeModel(n); updateC && q.hostC[m] >= 0 {
			q.beforeTmp[i] = q.host(c, n, hs, 0, 0, 0)
		}
	}
	for r, n := range nodes {
		q.touch(n)
		q.extraCPU[n] += js.CPUMilli
		q.extraMem[n] += js.MemoryMiB
		for _, gpu := range sim.ReplicaSlice(gpus, r, g) {
			q.extraMilli[gpu] += js.GPUMilli
		}
	}
	for i, n := range q.nodesTmp {
		if m := c.NodeModel(n); updateC && q.hostC[m] >= 0 {
			q.hostC[m] += q.host(c, n, hs, 0, 0, 0) - q.beforeTmp[i]
		}
	}
}

func containsNode(s []sim.NodeID, n sim.NodeID) bool {
	for _, x := range s {
		if x == n {
			return true
		}
	}
	return false
}

// easy runs one EASY backfill pass behind the blocked head job h: it finds the
// shadow time at which h fits once running jobs end at their estimated ends, then
// starts later jobs that fit now and either end (by estimate) before the shadow time
// or leave enough room for h at the shadow time. For a whole-GPU head the projected
// state is exact per GPU (milli-GPU given back by ending jobs); for a fractional or
// CPU-only head the shadow time comes from aggregate milli-GPU and only jobs that
// end before it are backfilled.
func (q *queuePolicy) easy(v *sim.View, p *sim.Plan, h *sim.Job) error {
	c := v.Cluster()
	now := v.Now()
	hs := &h.Spec
	wholeHead := hs.GPUsPerReplica > 0 && !hs.Fractional()
	shadow := sim.Never
	mstar := -1
	defer q.clearExtras(c)
	if wholeHead {
		models := c.Models()
		for m := range q.hostC {
			q.hostC[m] = -1
			if !hs.AllowsModel(models[m]) {
				continue
			}
			var cnt int64
			for k := hs.GPUsPerReplica; k <= c.MaxGPUsPerNode(); k++ {
				for n := c.NextNodeWithFree(m, k, 0); n >= 0; n = c.NextNodeWithFree(m, k, n+1) {
					cnt += q.host(c, n, hs, 0, 0, 0)
				}
			}
			q.hostC[m] = cnt
		}
		q.run.each(func(r *sim.Job) bool {
			t := q.estEnd(r)
			if q.window > 0 && t > now.Add(q.window) {
				return false
			}
			q.giveBack(c, hs, r.Nodes, r.GPUs, &r.Spec, true)
			for m, cnt := range q.hostC {
				if cnt >= int64(hs.Replicas) {
					shadow, mstar = t, m
					return false
				}
			}
			return true
		})
	} else {
		// Fractional or CPU-only head: aggregate milli-GPU, CPU and memory in
		// release order.
		needMilli := hs.GPUDemandMilli()
		needCPU := int64(hs.Replicas) * hs.CPUMilli
		needMem := int64(hs.Replicas) * hs.MemoryMiB
		free := c.NumGPUs()*int64(sim.WholeGPU) - c.AllocatedMilli()
		cpu, mem := c.FreeCPU(), c.FreeMemory()
		q.run.each(func(r *sim.Job) bool {
			t := q.estEnd(r)
			if q.window > 0 && t > now.Add(q.window) {
				return false
			}
			rs := &r.Spec
			free += rs.GPUDemandMilli()
			cpu += int64(rs.Replicas) * rs.CPUMilli
			mem += int64(rs.Replicas) * rs.MemoryMiB
			if free >= needMilli && cpu >= needCPU && mem >= needMem {
				shadow = t
				return false
			}
			return true
		})
	}
	if shadow != sim.Never {
		p.Reserve(h.Ref, shadow)
	}
	tested := 0
	passed := false
	var err error
	q.eachPending(v, func(j *sim.Job) bool {
		if !passed {
			passed = j == h
			return true
		}
		if tested >= q.maxTest {
			return false
		}
		tested++
		if q.fc != nil && q.fc.held(v, p, j) {
			return true
		}
		if !placement.QuickFit(c, &j.Spec) {
			p.Wait(j.Ref, sim.ReasonNoCapacity) // cannot fit now: O(1) rejection
			return true
		}
		if !q.placer.Place(c, j, &q.pl) {
			p.Wait(j.Ref, placement.WhyNot(c, j))
			return true
		}
		if q.powerHeld(v, p, j) {
			return true
		}
		rem := j.Estimate - j.Done
		if shadow == sim.Never || now.Add(max(rem, 0)) <= shadow {
			if err = q.start(p, j); err != nil {
				return false
			}
			if mstar >= 0 {
				// It ends before the shadow time: give its resources back in the
				// projected state, which is then what it was before the start (the
				// head's replica count is unchanged).
				q.giveBack(c, hs, q.pl.Nodes, q.pl.GPUs, &j.Spec, false)
			}
			return true
		}
		if mstar < 0 {
			p.Wait(j.Ref, sim.ReasonReservation) // non-whole head: only jobs that end before the shadow time
			return true
		}
		// Would h still fit at the shadow time if j keeps its resources?
		var loss int64
		js := &j.Spec
		g := int(js.GPUsPerReplica)
		for r, n := range q.pl.Nodes {
			if q.pl.UsedEarlier(r) || c.NodeModel(n) != mstar {
				continue
			}
			var dGPU int32
			var reps int64
			for r2 := r; r2 < len(q.pl.Nodes); r2++ {
				if q.pl.Nodes[r2] != n {
					continue
				}
				reps++
				for _, gpu := range sim.ReplicaSlice(q.pl.GPUs, r2, g) {
					if c.GPUUsed(gpu)-q.extraMilli[gpu] <= 0 {
						dGPU++ // a GPU free at the shadow time that j would still hold
					}
				}
			}
			loss += q.host(c, n, hs, 0, 0, 0) - q.host(c, n, hs, dGPU, reps*js.CPUMilli, reps*js.MemoryMiB)
		}
		if q.hostC[mstar]-loss >= int64(hs.Replicas) {
			if err = q.start(p, j); err != nil {
				return false
			}
			q.hostC[mstar] -= loss
		} else {
			p.Wait(j.Ref, sim.ReasonReservation)
		}
		return true
	})
	return err
}
