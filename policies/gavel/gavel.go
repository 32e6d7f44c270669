// Package gavel is Gavel's round-based, heterogeneity-aware scheduling mechanism
// (Narayanan et al., OSDI'20; stanford-futuredata/gavel, scheduler/scheduler.py
// in simulation mode) with its min_total_duration (makespan) and
// max_min_fairness_perf policies solved as linear programs by gonum's simplex.
// See docs/gavel.md for the rules followed, the functions cited and every known
// difference.
package gavel

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/workloads"
)

// Policy names (Gavel's get_policy names of the heterogeneity-aware variants).
const (
	MinTotalDuration   = "min_total_duration"
	MaxMinFairness     = "max_min_fairness"
	FinishTimeFairness = "finish_time_fairness"
	MaxSumThroughput   = "max_sum_throughput"
	CostNormalized     = "max_sum_throughput_normalized_by_cost"
)

// Params are the gavel policy's parameters.
type Params struct {
	// Policy is the allocation policy: min_total_duration (default; Gavel's
	// MinTotalDurationPolicy, name MinTotalDuration_Perf), max_min_fairness
	// (MaxMinFairnessPolicyWithPerf) or finish_time_fairness
	// (FinishTimeFairnessPolicyWithPerf: Themis's ρ, minimised at its max),
	// max_sum_throughput (ThroughputSumWithPerf) or
	// max_sum_throughput_normalized_by_cost (ThroughputNormalizedByCostSumWithPerf:
	// throughput per unit of Costs).
	Policy string `yaml:"policy"`
	// Round is the round length (Gavel's time_per_iteration, default 360s).
	Round *policies.Dur `yaml:"round"`
	// ResetInterval is the least time between allocation resets (Gavel's
	// minimum_time_between_allocation_resets, default 1920s).
	ResetInterval *policies.Dur `yaml:"resetInterval"`
	// Costs are the instance costs per GPU type of the throughput table (e.g.
	// dollars per hour; types left out cost 1), for
	// max_sum_throughput_normalized_by_cost.
	Costs map[string]float64 `yaml:"costs"`
}

func init() {
	policies.Register(policies.Info{
		Name:    "gavel",
		Summary: "Gavel (OSDI'20): rounds of 360 s; an LP time-share allocation per job and GPU type (min_total_duration, max_min_fairness, finish_time_fairness, max_sum_throughput or max_sum_throughput_normalized_by_cost) from a throughput table, priorities = allocation / time received; needs throughputs: in the scenario.",
		Params:  "policy: min_total_duration|max_min_fairness|finish_time_fairness|max_sum_throughput|max_sum_throughput_normalized_by_cost; round (360s); resetInterval (1920s); costs (per GPU type, 1)",
	}, func(n *yaml.Node, env policies.Env) (sim.Policy, error) {
		var p Params
		if err := policies.DecodeParams(n, &p); err != nil {
			return nil, err
		}
		return New(p, env.Throughputs, env.ThroughputRef)
	})
}

// New builds the policy on throughput table tt (reference type index ref, the
// type the jobs' durations are measured on).
func New(p Params, tt *workloads.ThroughputTable, ref int) (*Gavel, error) {
	g := &Gavel{round: 360 * sim.Second, reset: 1920 * sim.Second, tt: tt, ref: ref}
	var errs []error
	switch p.Policy {
	case "", MinTotalDuration:
		g.policy = MinTotalDuration
	case MaxMinFairness, FinishTimeFairness, MaxSumThroughput, CostNormalized:
		g.policy = p.Policy
	default:
		errs = append(errs, fmt.Errorf("policy: unknown %q (want %s)", p.Policy,
			strings.Join([]string{MinTotalDuration, MaxMinFairness, FinishTimeFairness, MaxSumThroughput, CostNormalized}, ", ")))
	}
	if p.Round != nil {
		if g.round = sim.Duration(*p.Round); g.round < sim.Second {
			errs = append(errs, errors.New("round: must be at least 1s"))
		}
	}
	if p.ResetInterval != nil {
		if g.reset = sim.Duration(*p.ResetInterval); g.reset < 0 {
			errs = append(errs, errors.New("resetInterval: must be >= 0"))
		}
	}
	if tt == nil {
		errs = append(errs, errors.New("gavel needs a throughput table: add throughputs: to the scenario (docs/gavel.md)"))
	}
	if len(p.Costs) > 0 {
		names := slices.Sorted(maps.Keys(p.Costs))
		for _, k := range names {
			c := p.Costs[k]
			switch {
			case !(c > 0) || math.IsInf(c, 0):
				errs = append(errs, fmt.Errorf("costs.%s: must be a positive number", k))
			case tt != nil && tt.TypeIndex(k) < 0:
				errs = append(errs, fmt.Errorf("costs.%s: not a GPU type of the throughput table (%s)", k, strings.Join(tt.GPUTypes(), ", ")))
			}
		}
		g.costs = p.Costs
	}
	if len(errs) > 0 {
		return nil, &policies.ConfigError{Err: errors.Join(errs...)}
	}
	return g, nil
}

// wtype is a worker (GPU) type present in the cluster.
type wtype struct {
	name string
	ti   int         // table index
	gpus []sim.GPUID // its GPUs in id order (Gavel's worker ids)
}

// gjob is Gavel's per-job state.
type gjob struct {
	j         *sim.Job
	sf        int       // scale factor (GPUs)
	tput      []float64 // steps/s per worker type (0 = cannot run there)
	timeSoFar []float64 // Gavel's _job_time_so_far (seconds, since the last reset)
	prio, def []float64 // Gavel's _priorities, _deficits
	alloc     []float64 // the allocation's time shares; nil = not in the allocation
	order     int       // add order (Gavel's dict order)
	total     float64   // steps: duration x reference throughput
	run       float64   // steps of its finished micro-tasks (_total_steps_run)
	// this round
	w     int // worker type index, -1 = not scheduled
	gpus  []sim.GPUID
	steps float64  // steps of this round's micro-task
	end   sim.Time // planned end of its micro-task
	final bool     // the micro-task runs the job to completion
	prevW int
	prev  []sim.GPUID
}

// Gavel is the gavel policy. See the package documentation.
type Gavel struct {
	policy       string
	costs        map[string]float64
	round, reset sim.Duration
	tt           *workloads.ThroughputTable
	ref          int

	inited     bool
	types      []wtype
	byRef      []*gjob
	active     []*gjob
	added      int
	seq        int
	workerTime []float64
	lastReset  float64 // seconds
	needUpdate bool
	inRound    bool
	roundStart sim.Time
	roundEnd   sim.Time
	sched      []*gjob
	// Rounds and LPs solved, for tests and explain.
	Rounds, LPs int
}

// Name returns "gavel".
func (g *Gavel) Name() string { return "gavel" }

// gavelTypeOrder is the order of Scheduler._schedule_jobs_on_workers.
var gavelTypeOrder = []string{"v100", "p100", "k80"}

func (g *Gavel) init(v *sim.View) error {
	g.inited = true
	c := v.Cluster()
	idx := map[int]int{}
	for gpu := sim.GPUID(0); int64(gpu) < c.NumGPUs(); gpu++ {
		ti := g.tt.TypeIndex(c.Node(c.GPUNode(gpu)).GPUModel)
		if ti < 0 {
			return &policies.ConfigError{Err: fmt.Errorf("gavel: GPU model %q of node %s is not a GPU type of the throughput table (%s)",
				c.Node(c.GPUNode(gpu)).GPUModel, c.Node(c.GPUNode(gpu)).Name, strings.Join(g.tt.GPUTypes(), ", "))}
		}
		k, ok := idx[ti]
		if !ok {
			k = len(g.types)
			idx[ti] = k
			g.types = append(g.types, wtype{name: g.tt.GPUTypes()[ti], ti: ti})
		}
		g.types[k].gpus = append(g.types[k].gpus, gpu)
	}
	rank := func(n string) int {
		if i := slices.Index(gavelTypeOrder, n); i >= 0 {
			return i
		}
		return len(gavelTypeOrder)
	}
	slices.SortStableFunc(g.types, func(a, b wtype) int {
		if c := cmp.Compare(rank(a.name), rank(b.name)); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	g.byRef = make([]*gjob, v.NumJobs())
	g.workerTime = make([]float64, len(g.types))
	for r := range v.NumJobs() {
		j := v.Job(sim.JobRef(r))
		if j.Spec.Replicas > 1 && j.Spec.GPUsPerReplica != 1 {
			return &policies.ConfigError{Err: fmt.Errorf("gavel: job %s has %d replicas of %d GPUs; Gavel gangs are 1-GPU workers", j.Spec.ID, j.Spec.Replicas, j.Spec.GPUsPerReplica)}
		}
		if _, ok := g.tt.Throughput(j.Spec.Workload, j.Spec.TotalGPUs(), g.ref); !ok {
			return &policies.ConfigError{Err: fmt.Errorf("gavel: job %s: workload %q at %d GPUs has no throughput on the reference type %s", j.Spec.ID, j.Spec.Workload, j.Spec.TotalGPUs(), g.tt.GPUTypes()[g.ref])}
		}
	}
	return nil
}

// Preflight implements policies.Preflighter: the cluster's GPU models and every
// job's workload must be in the throughput table.
func (g *Gavel) Preflight(v *sim.View) error { return g.init(v) }

// Observe implements sim.Policy (Gavel's state changes at round boundaries).
func (g *Gavel) Observe(*sim.View, sim.Event) {}

// Schedule implements sim.Policy: it ends leases at their micro-task ends, and at
// each round boundary accounts the round, adds arrivals, recomputes priorities
// (and the allocation at a reset) and starts the next round.
func (g *Gavel) Schedule(v *sim.View, p *sim.Plan) error {
	if !g.inited {
		if err := g.init(v); err != nil {
			return err
		}
	}
	now := v.Now()
	// Scheduler.simulate checks, at the top of its loop and before this
	// iteration's arrivals, whether the trace's queue is empty and the last
	// round dispatched nothing (running_jobs is empty); then it forces a reset.
	forceReset := g.added == len(g.byRef) && !g.inRound
	if g.inRound {
		next := g.roundEnd
		for _, gj := range g.sched {
			if gj.final || gj.end >= g.roundEnd {
				continue
			}
			if gj.end <= now {
				if gj.j.State == sim.StateRunning {
					if err := p.AddPreempt(gj.j.Ref, sim.PreemptLease, "gavel: micro-task done"); err != nil {
						return err
					}
				}
			} else {
				next = min(next, gj.end)
			}
		}
		if now < g.roundEnd {
			p.Wake(next)
			return nil
		}
		for _, gj := range g.sched {
			if gj.final && gj.j.State == sim.StateRunning {
				// its last micro-task ends within rounding of the planned end
				p.Wake(now + 1)
				return nil
			}
		}
		g.endRound(now)
	}
	g.addArrivals(v, now)
	if forceReset {
		g.lastReset = 0
	}
	if len(g.active) == 0 {
		g.inRound = false
		return nil
	}
	return g.startRound(v, p, now)
}

// endRound is Gavel's micro-task completion (_done_callback in simulation):
// steps run, time received per type, finished jobs removed.
func (g *Gavel) endRound(now sim.Time) {
	start := g.roundStart.Seconds()
	for _, gj := range g.sched {
		exec := gj.end.Seconds() - start
		gj.timeSoFar[gj.w] += exec
		g.workerTime[gj.w] += exec
		gj.run += gj.steps
		switch gj.j.State {
		case sim.StateCompleted, sim.StateKilled, sim.StateTimeout:
			g.remove(gj)
		case sim.StatePending:
			// Stopped, so the engine's Done is current: if the job lost work
			// the policy did not plan for (a failure, a kill), count from it.
			t, _ := g.tt.Throughput(gj.j.Spec.Workload, int32(gj.sf), g.ref)
			if rem := (gj.j.Spec.Duration - gj.j.Done).Seconds() * t; rem > g.remaining(gj)+1 {
				gj.run = gj.total - rem
			}
		}
	}
	g.sched = g.sched[:0]
	g.inRound = false
}

func (g *Gavel) remove(gj *gjob) {
	i := slices.Index(g.active, gj)
	if i >= 0 {
		g.active = slices.Delete(g.active, i, i+1)
	}
	g.needUpdate = true
}

// addArrivals is add_job for every job that arrived by now.
func (g *Gavel) addArrivals(v *sim.View, now sim.Time) {
	first := len(g.active)
	for g.added < len(g.byRef) {
		j := v.Job(sim.JobRef(g.added))
		if j.Spec.Submit > now {
			break
		}
		g.added++
		nt := len(g.types)
		gj := &gjob{j: j, sf: int(j.Spec.TotalGPUs()), tput: make([]float64, nt), timeSoFar: make([]float64, nt),
			prio: make([]float64, nt), def: make([]float64, nt), w: -1, prevW: -1}
		ref, _ := g.tt.Throughput(j.Spec.Workload, j.Spec.TotalGPUs(), g.ref)
		gj.total = (j.Spec.Duration - j.Done).Seconds() * ref
		if r := math.Round(gj.total); math.Abs(gj.total-r) < 1e-6*max(1, r) {
			gj.total = r // a Gavel trace's integer steps, through µs durations
		}
		for k, wt := range g.types {
			gj.tput[k], _ = g.tt.Throughput(j.Spec.Workload, j.Spec.TotalGPUs(), wt.ti)
			gj.timeSoFar[k] = g.round.Seconds() / 2
		}
		g.byRef[j.Ref] = gj
		g.active = append(g.active, gj)
		g.needUpdate = true
	}
	// Gavel numbers jobs in trace order (add_job); gpusim numbers them by
	// (Submit, ID) with string IDs, which puts "t-10" before "t-2". Order the
	// jobs added now by (Submit, ID in natural order) so that Gavel's dict
	// order, and with it every tie-break, follows the trace's lines.
	slices.SortStableFunc(g.active[first:], func(a, b *gjob) int {
		if c := cmp.Compare(a.j.Spec.Submit, b.j.Spec.Submit); c != 0 {
			return c
		}
		return naturalCompare(string(a.j.Spec.ID), string(b.j.Spec.ID))
	})
	for _, gj := range g.active[first:] {
		gj.order = g.seq
		g.seq++
	}
}

// naturalCompare compares two strings with their runs of digits compared as
// numbers ("t-2" < "t-10") and everything else byte by byte.
func naturalCompare(a, b string) int {
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			i, k := 0, 0
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for k < len(b) && isDigit(b[k]) {
				k++
			}
			na, nb := strings.TrimLeft(a[:i], "0"), strings.TrimLeft(b[:k], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			if c := cmp.Compare(i, k); c != 0 { // "007" after "7"
				return c
			}
			a, b = a[i:], b[k:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// remaining returns the job's remaining steps: its total (duration x the
// reference throughput) less the steps of its finished micro-tasks, counted by
// the policy as Gavel's _total_steps_run is (_get_remaining_steps). The
// engine's Done is not used: it is only brought up to date when a run stops,
// and a job whose lease is extended keeps running.
func (g *Gavel) remaining(gj *gjob) float64 {
	return gj.total - gj.run
}

func (g *Gavel) startRound(v *sim.View, p *sim.Plan, now sim.Time) error {
	g.Rounds++
	// Jobs the engine ended while they waited (a walltime limit) leave.
	for i := 0; i < len(g.active); {
		if st := g.active[i].j.State; st == sim.StateKilled || st == sim.StateTimeout || st == sim.StateCompleted {
			g.remove(g.active[i])
			continue
		}
		i++
	}
	if err := g.updatePriorities(now); err != nil {
		return err
	}
	per := g.pick()
	g.assign(per)
	// Plan the micro-tasks; leases of jobs moving or not continuing end now.
	restore := v.RestoreCost()
	g.roundStart, g.roundEnd = now, now
	for _, gj := range g.sched {
		t := gj.tput[gj.w]
		rem := g.remaining(gj)
		steps := math.Floor(t * g.round.Seconds())
		if steps >= rem-1e-9 {
			steps, gj.final = rem, true
		} else {
			gj.final = false
		}
		gj.steps = steps
		d := steps / t
		kept := gj.j.State == sim.StateRunning && gj.w == gj.prevW && slices.Equal(gj.gpus, gj.prev)
		if !kept && gj.j.Preempted > 0 { // a restart after a lease pays the restore cost
			d += restore.Seconds()
		}
		gj.end = now + sim.Time(math.Ceil(d*1e6))
		g.roundEnd = max(g.roundEnd, gj.end)
	}
	for _, gj := range g.active {
		if gj.j.State != sim.StateRunning {
			continue
		}
		if gj.w >= 0 && gj.w == gj.prevW && slices.Equal(gj.gpus, gj.prev) {
			continue // lease extended: same GPUs
		}
		if err := p.AddPreempt(gj.j.Ref, sim.PreemptLease, "gavel: round"); err != nil {
			return err
		}
	}
	var nodes []sim.NodeID
	c := v.Cluster()
	for _, gj := range g.sched {
		if gj.j.State == sim.StateRunning {
			continue
		}
		nodes = nodes[:0]
		for _, gpu := range gj.gpus {
			nodes = append(nodes, c.GPUNode(gpu))
		}
		if err := p.AddStart(gj.j.Ref, nodes, gj.gpus); err != nil {
			return err
		}
	}
	for _, gj := range g.active {
		gj.prevW, gj.prev = gj.w, append(gj.prev[:0], gj.gpus...)
		if gj.w < 0 {
			p.Wait(gj.j.Ref, sim.ReasonFairShare)
		}
	}
	g.inRound = len(g.sched) > 0
	if g.inRound {
		next := g.roundEnd
		for _, gj := range g.sched {
			if !gj.final && gj.end < next {
				next = gj.end
			}
		}
		p.Wake(next)
	}
	return nil
}

// updatePriorities is Scheduler._update_priorities in simulation mode: a reset
// (deficits, time received) and a new allocation when the allocation is stale
// and the reset interval has passed (or nothing was reset yet); then priority =
// allocation / fraction of the type's time received, allocation x 1e9 for a job
// that has received none.
func (g *Gavel) updatePriorities(now sim.Time) error {
	t := now.Seconds()
	if g.needUpdate && (t-g.lastReset >= g.reset.Seconds() || g.lastReset == 0) {
		g.resetTimeRunSoFar(t)
		if err := g.allocate(t); err != nil {
			return err
		}
		g.needUpdate = false
	}
	for w := range g.types {
		wt := g.workerTime[w]
		for _, gj := range g.active {
			frac := 0.0
			if wt != 0 {
				frac = gj.timeSoFar[w] / wt
			}
			switch {
			case gj.alloc == nil:
				gj.prio[w] = 0
			case gj.alloc[w] == 0 || gj.tput[w] == 0:
				gj.prio[w] = 0
			case frac > 0:
				gj.prio[w] = gj.alloc[w] / frac
			default:
				gj.prio[w] = gj.alloc[w] * 1e9
			}
		}
	}
	return nil
}

// resetTimeRunSoFar is Scheduler._reset_time_run_so_far.
func (g *Gavel) resetTimeRunSoFar(t float64) {
	elapsed := t - g.lastReset
	half := g.round.Seconds() / 2
	for w := range g.types {
		g.workerTime[w] = 0
		for _, gj := range g.active {
			received := gj.timeSoFar[w] - half
			should := 0.0
			if gj.alloc != nil {
				should = gj.alloc[w] * elapsed
			}
			gj.def[w] += should - received
			gj.timeSoFar[w] = half
			g.workerTime[w] += half
		}
	}
	g.lastReset = t
}

// pick is Scheduler._schedule_jobs_on_workers_helper: per worker type in
// Gavel's order, the type's jobs by (priority, deficit, allocation) descending
// (stable: ties keep add order); then greedily every job not yet scheduled whose
// gang fits the type's remaining workers and runs there.
func (g *Gavel) pick() [][]*gjob {
	type entry struct {
		gj              *gjob
		w               int
		prio, def, allo float64
	}
	var queue []entry
	for w := range g.types {
		var es []entry
		for _, gj := range g.active {
			a := 0.0
			if gj.alloc != nil {
				a = gj.alloc[w]
			}
			es = append(es, entry{gj, w, gj.prio[w], gj.def[w], a})
		}
		slices.SortStableFunc(es, func(a, b entry) int {
			if c := cmp.Compare(b.prio, a.prio); c != 0 {
				return c
			}
			if c := cmp.Compare(b.def, a.def); c != 0 {
				return c
			}
			return cmp.Compare(b.allo, a.allo)
		})
		queue = append(queue, es...)
	}
	left := make([]int, len(g.types))
	for w, wt := range g.types {
		left[w] = len(wt.gpus)
	}
	per := make([][]*gjob, len(g.types))
	for _, gj := range g.active {
		gj.w = -1
	}
	for _, e := range queue {
		gj := e.gj
		if left[e.w] == 0 || gj.w >= 0 || gj.tput[e.w] <= 0 || gj.sf > left[e.w] {
			continue
		}
		left[e.w] -= gj.sf
		gj.w = e.w
		per[e.w] = append(per[e.w], gj)
	}
	return per
}

// assign is the worker assignment of Scheduler._schedule_jobs_on_workers: per
// type, jobs by scale factor descending; a job keeps its GPUs of the last round
// when they are of this type and still unassigned; the others take the lowest
// free GPUs. A scheduled job outside the allocation gets no GPUs (as in Gavel).
func (g *Gavel) assign(per [][]*gjob) {
	g.sched = g.sched[:0]
	for w, jobs := range per {
		slices.SortStableFunc(jobs, func(a, b *gjob) int { return cmp.Compare(b.sf, a.sf) })
		used := map[sim.GPUID]bool{}
		for _, gj := range jobs {
			gj.gpus = gj.gpus[:0]
			if gj.prevW == w && len(gj.prev) == gj.sf && !slices.ContainsFunc(gj.prev, func(x sim.GPUID) bool { return used[x] }) {
				gj.gpus = append(gj.gpus, gj.prev...)
				for _, x := range gj.prev {
					used[x] = true
				}
			}
		}
		for _, gj := range jobs {
			if len(gj.gpus) > 0 {
				g.sched = append(g.sched, gj)
				continue
			}
			if gj.alloc == nil {
				gj.w = -1
				continue
			}
			for _, x := range g.types[w].gpus {
				if len(gj.gpus) == gj.sf {
					break
				}
				if !used[x] {
					gj.gpus = append(gj.gpus, x)
					used[x] = true
				}
			}
			g.sched = append(g.sched, gj)
		}
	}
	slices.SortStableFunc(g.sched, func(a, b *gjob) int { return cmp.Compare(a.order, b.order) })
}
